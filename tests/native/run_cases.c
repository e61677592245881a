/* Case runner for the fingerprint kernel, built by tests/unit/test_fingerprint_neon.py for
 * aarch64 and run under qemu-user: the test writes the inputs and compares what comes back
 * with the NumPy specification, bit for bit.
 *
 *     run_cases CASES RESULTS
 *
 * CASES, little-endian, until its end: a record per case,
 *     uint32 dtype, uint32 nq, uint32 nthreads, uint32 0, uint64 n,
 *     double qs[nq], int32 threads[nthreads] (padded to 8 bytes), then n elements.
 * RESULTS: per case and thread count, int32 rc, int32 0, then the pgfp_result struct.
 * Prints the kernel's code path (pgfp_path) first. Exit status 2 on a malformed file. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgfp.h"

/* The test reads the struct as 8-byte fields, whatever statistics it holds: no padding anywhere. */
typedef char result_is_packed[offsetof(pgfp_result, q) % 8 == 0 &&
                              sizeof(pgfp_result) == offsetof(pgfp_result, q) + (PGFP_NQ_MAX + PGFP_WIDTH) * 8 ? 1 : -1];

static int get(void *dst, size_t size, FILE *f) { return size == 0 || fread(dst, size, 1, f) == 1; }

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: run_cases CASES RESULTS\n"); return 2; }
    FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
    if (!in || !out) { perror("run_cases"); return 2; }
    printf("path: %s\n", pgfp_path());
    int cases = 0;
    for (;;) {
        uint32_t head[4];
        uint64_t n;
        if (fread(head, sizeof head, 1, in) != 1) break; /* end of the file */
        uint32_t dtype = head[0], nq = head[1], nt = head[2];
        double qs[PGFP_NQ_MAX];
        int32_t threads[64] = {0};
        size_t esize = dtype == PGFP_F64 ? 8 : dtype == PGFP_F32 ? 4 : 2;
        if (!get(&n, 8, in) || nq > PGFP_NQ_MAX || nt > 64 || dtype > PGFP_F64 || !get(qs, 8 * nq, in) ||
            !get(threads, 4 * ((nt + 1) & ~1u), in)) {
            fprintf(stderr, "run_cases: malformed case %d\n", cases);
            return 2;
        }
        /* the exact size, so that a read past the end is a read past the allocation */
        void *data = malloc(n ? n * esize : 1);
        if (!data || !get(data, n * esize, in)) { fprintf(stderr, "run_cases: short case %d\n", cases); return 2; }
        for (uint32_t t = 0; t < nt; t++) {
            pgfp_result r;
            int32_t rc[2] = {0, 0};
            memset(&r, 0, sizeof r);
            rc[0] = pgfp_fingerprint(n ? data : NULL, n, (int)dtype, qs, (int)nq, threads[t], &r);
            if (fwrite(rc, sizeof rc, 1, out) != 1 || fwrite(&r, sizeof r, 1, out) != 1) { perror("run_cases"); return 2; }
        }
        free(data);
        cases++;
    }
    printf("%d cases\n", cases);
    return fclose(out) == 0 ? 0 : 2;
}
