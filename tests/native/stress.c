/* Stress harness for the fingerprint kernel, built by tests/unit/test_fingerprint_native.py
 * with sanitizers (address + undefined behaviour, or thread). For data shaped to reach each
 * code path (zeros, a dominant value, heavy groups, refinement, collection, non-finite
 * values, subnormals, masks at the largest finite value) in every dtype and at sizes across the kernel's thresholds, every
 * thread count must give the single-thread result bit for bit. Exit status 1 on a
 * mismatch; sanitizer reports make the run fail on their own.
 *
 *     stress MAX_N   (skip sizes above MAX_N) */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgfp.h"

static uint64_t state = 88172645463325252ull;
static double uniform(void) {
    state ^= state << 13; state ^= state >> 7; state ^= state << 17;
    return (double)(state >> 11) * 0x1p-53;
}
/* A rough bell shape from 4 uniforms (no libm needed). */
static double bell(void) { return (uniform() + uniform() + uniform() + uniform() - 2.0) * 1.7; }

static double value(int dist) {
    double u = uniform();
    switch (dist) {
    case 0: return bell();                                   /* dense */
    case 1: return u < 0.5 ? 0.0 : (u < 0.55 ? -0.0 : bell()); /* ReLU-like, signed zeros */
    case 2: return 3.25;                                     /* constant */
    case 3: return u < 0.7 ? 6.0 : bell();                   /* dominant value */
    case 4: return u < 0.6 ? 1.0 : (u < 0.8 ? 1.0 + uniform() / 256 : bell()); /* heavy, impure */
    case 5: return u < 0.3 ? -1.0 / 0.0 : (u < 0.35 ? 0.0 / 0.0 : bell()); /* non-finite */
    case 6: return u < 0.4 ? 0.0 : (u < 0.7 ? 1e-310 * bell() : 1e-42 * bell()); /* subnormals */
    default: return (double)(int)(u * 7) - 3;                /* few distinct values */
    }
}

/* Bits of a mask at the dtype's largest finite value (counted as Inf), or of a value just below it, either
 * sign: where a quantile pass meets the mask beside values it ranks. */
static uint64_t masked(int dtype) {
    static const uint64_t top[] = {0x7bff, 0x7f7f, 0x7f7fffff, 0x7fefffffffffffffull};
    uint64_t b = uniform() < 0.3 ? top[dtype] : top[dtype] - 1 - (uint64_t)(uniform() * 100);
    return uniform() < 0.5 ? b : b | 1ull << (dtype == PGFP_F64 ? 63 : dtype == PGFP_F32 ? 31 : 15);
}

static void fill(void *buf, uint64_t n, int dtype, int dist) {
    for (uint64_t i = 0; i < n; i++) {
        if (dist == 8) {
            uint64_t b = masked(dtype);
            if (dtype == PGFP_F64) ((uint64_t *)buf)[i] = b;
            else if (dtype == PGFP_F32) ((uint32_t *)buf)[i] = (uint32_t)b;
            else ((uint16_t *)buf)[i] = (uint16_t)b;
            continue;
        }
        double v = value(dist);
        if (dtype == PGFP_F64) { memcpy((char *)buf + 8 * i, &v, 8); continue; }
        float f = (float)v;
        uint32_t b;
        memcpy(&b, &f, 4);
        if (dtype == PGFP_F32) { memcpy((char *)buf + 4 * i, &b, 4); continue; }
        uint16_t h;
        if (dtype == PGFP_BF16) h = (uint16_t)(b >> 16);
        else { /* float16 by truncation: any bit pattern is a valid input */
            uint32_t e = (b >> 23) & 0xff, m = (b >> 13) & 0x3ff, s = (b >> 16) & 0x8000;
            h = (uint16_t)(e == 0xff ? s | 0x7c00 | (m ? 0x200 : 0)
                         : e > 142 ? s | 0x7c00 : e < 113 ? s : s | ((e - 112) << 10) | m);
        }
        memcpy((char *)buf + 2 * i, &h, 2);
    }
}

/* The fields a call defines (q beyond nq is not written): every statistic before q, whatever they are
 * (all 8 bytes wide, so no padding between them), then the quantiles asked for and the sketch. */
static int same(const pgfp_result *a, const pgfp_result *b, int nq) {
    return !memcmp(a, b, offsetof(pgfp_result, q)) && !memcmp(a->q, b->q, (size_t)nq * sizeof(double)) &&
           !memcmp(a->sketch, b->sketch, sizeof a->sketch);
}

int main(int argc, char **argv) {
    uint64_t max_n = argc > 1 ? strtoull(argv[1], NULL, 10) : 3000001;
    static const uint64_t sizes[] = {0, 1, 7, 513, 4099, 8193, 65537, 1200007, 3000001};
    static const int threads[] = {2, 3, 5};
    const double qs[16] = {0, 0.001, 0.01, 0.1, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.9, 0.99, 0.999, 0.9999, 1};
    int bad = 0, runs = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        uint64_t n = sizes[si];
        if (n > max_n) continue;
        void *buf = malloc(n * 8 + 8);
        for (int dtype = PGFP_F16; dtype <= PGFP_F64; dtype++)
            for (int dist = 0; dist < 9; dist++) {
                fill(buf, n, dtype, dist);
                pgfp_result ref, got;
                memset(&ref, 0, sizeof ref);
                if (pgfp_fingerprint(n ? buf : NULL, n, dtype, qs, 16, 1, &ref)) { printf("call failed\n"); return 1; }
                for (size_t ti = 0; ti < sizeof threads / sizeof *threads; ti++) {
                    memset(&got, 0xff, sizeof got);
                    runs++;
                    if (pgfp_fingerprint(n ? buf : NULL, n, dtype, qs, 16, threads[ti], &got) || !same(&ref, &got, 16)) {
                        printf("mismatch: n=%llu dtype=%d dist=%d threads=%d\n", (unsigned long long)n, dtype, dist, threads[ti]);
                        bad = 1;
                    }
                }
            }
        free(buf);
    }
    printf("%d runs, %s\n", runs, bad ? "MISMATCH" : "all equal to one thread");
    return bad;
}
