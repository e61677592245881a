/* NEON code path (aarch64) of the fingerprint kernel, fused pass: the arithmetic of the
 * portable path (pgfp_scalar.c) element for element and lane for lane, as the AVX2 path
 * does, so results are bit-identical. The kernel's flags matter here: -ffp-contract=off
 * keeps v*v rounded before it is added (no FMLA), as the specification demands. */
#include "pgfp_neon.h"

#ifdef PGFP_NEON

/* Group hashes of a chunk (ng groups from group index g0; hi32 constant in a chunk). */
static void group_hashes(uint64_t g0, uint32_t ng, uint32_t *hs) {
    uint32_t k = mix32((uint32_t)(g0 >> 32) ^ SEED), lo = (uint32_t)g0, i = 0;
    if (NO_SKETCH) return;
    const uint32x4_t key = vdupq_n_u32(k), iota = {0, 1, 2, 3};
    for (; i + 8 <= ng; i += 8) { /* two independent chains: the multiplies have latency */
        uint32x4_t x = veorq_u32(vaddq_u32(vdupq_n_u32(lo + i), iota), key);
        uint32x4_t y = veorq_u32(vaddq_u32(vdupq_n_u32(lo + i + 4), iota), key);
        x = veorq_u32(x, vshrq_n_u32(x, 16)); y = veorq_u32(y, vshrq_n_u32(y, 16));
        x = vmulq_n_u32(x, 0x7feb352du);    y = vmulq_n_u32(y, 0x7feb352du);
        x = veorq_u32(x, vshrq_n_u32(x, 15)); y = veorq_u32(y, vshrq_n_u32(y, 15));
        x = vmulq_n_u32(x, 0x846ca68bu);    y = vmulq_n_u32(y, 0x846ca68bu);
        x = veorq_u32(x, vshrq_n_u32(x, 16)); y = veorq_u32(y, vshrq_n_u32(y, 16));
        vst1q_u32(hs + i, x);
        vst1q_u32(hs + i + 4, y);
    }
    for (; i < ng; i++) hs[i] = mix32((lo + i) ^ k);
}

/* Sign masks of an element pair from 2 hash bits; byte shuffles that keep or swap a pair. */
#define S1 0x8000000000000000ull
static const uint64_t SGN2[4][2] = {{0, 0}, {S1, 0}, {0, S1}, {S1, S1}};
#undef S1
static const uint8_t SWAP[2][16] = {{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
                                    {8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7}};

/* Add one group of 8 values (d[k]: elements 2k, 2k+1) to its sketch row. Element j goes to
 * slot j ^ x: pair k lands on the slot pair k ^ (x >> 1), its halves swapped when x is odd;
 * each element's sign flips with its hash bit. A value may be -0.0: every bucket starts
 * at +0.0 and b + -0.0 == b, so it changes no bit. */
static inline void sketch_group(double *sk, uint32_t h, const float64x2_t *d) {
    if (NO_SKETCH) return;
    uint32_t s = (h >> 16) & 0xffu, x = (h >> 24) & 7u;
    double *row = sk + 8 * (h >> 27);
    const uint8x16_t swap = vld1q_u8(SWAP[x & 1]);
    for (uint32_t k = 0; k < 4; k++) {
        uint64x2_t v = veorq_u64(vreinterpretq_u64_f64(d[k]), vld1q_u64(SGN2[(s >> (2 * k)) & 3]));
        float64x2_t w = vreinterpretq_f64_u8(vqtbl1q_u8(vreinterpretq_u8_u64(v), swap));
        double *dst = row + 2 * (k ^ (x >> 1));
        vst1q_f64(dst, vaddq_f64(vld1q_f64(dst), w));
    }
}

/* Histogram increments of 8 digits: kept lanes' digits (a dominant digit to its lane bin),
 * the other lanes to their junk bins (see sink in pgfp_internal.h). */
static inline void hist8(sink *o, uint32x4_t d0, uint32x4_t d1, uint32x4_t k0, uint32x4_t k1) {
    const uint32x4_t j0 = {HBINS, HBINS + 1, HBINS + 2, HBINS + 3}, j1 = vaddq_u32(j0, vdupq_n_u32(4));
    const uint32x4_t hd = vdupq_n_u32(o->hdig), lanes = vdupq_n_u32(LANES);
    uint32x4_t m0 = vandq_u32(vceqq_u32(d0, hd), k0), m1 = vandq_u32(vceqq_u32(d1, hd), k1);
    d0 = vbslq_u32(m0, vaddq_u32(j0, lanes), vbslq_u32(k0, d0, j0));
    d1 = vbslq_u32(m1, vaddq_u32(j1, lanes), vbslq_u32(k1, d1, j1));
    /* digits leave the vector 64 bits at a time (two per move) */
    uint64_t a = vgetq_lane_u64(vreinterpretq_u64_u32(d0), 0), b = vgetq_lane_u64(vreinterpretq_u64_u32(d0), 1);
    uint64_t e = vgetq_lane_u64(vreinterpretq_u64_u32(d1), 0), f = vgetq_lane_u64(vreinterpretq_u64_u32(d1), 1);
    uint32_t *h = o->hist;
    h[(uint32_t)a]++; h[a >> 32]++; h[(uint32_t)b]++; h[b >> 32]++;
    h[(uint32_t)e]++; h[e >> 32]++; h[(uint32_t)f]++; h[f >> 32]++;
}

/* Kept 32-bit keys appended to the key buffer (small inputs; it has LANES spare slots). */
static inline void keys8(sink *o, uint32x4_t key0, uint32x4_t key1, uint32x4_t k0, uint32x4_t k1) {
    uint32_t *dst = (uint32_t *)o->keys + o->nkeys;
    unsigned m0 = mask4(k0), m1 = mask4(k1);
    vst1q_u32(dst, pack4(key0, m0));
    vst1q_u32(dst + POP4[m0], pack4(key1, m1));
    o->nkeys += POP4[m0] + POP4[m1];
}

typedef struct {
    float64x2_t s[4], q[4], a[4];          /* lane sums: register k holds lanes 2k, 2k+1 */
    uint32x4_t cnan, cpinf, cninf, czero;  /* the two halves' counts share one register */
} acc;

static inline void add_sums(acc *A, const float64x2_t *d) {
    for (int k = 0; k < 4; k++) {
        A->s[k] = vaddq_f64(A->s[k], d[k]);
        A->q[k] = vaddq_f64(A->q[k], vmulq_f64(d[k], d[k]));
        A->a[k] = vaddq_f64(A->a[k], vabsq_f64(d[k]));
    }
}

/* Counts of NaN, +Inf and -Inf among 8 lanes given as 32-bit lane masks. */
static inline void count_nonfinite(acc *A, uint32x4_t n0, uint32x4_t n1, uint32x4_t p0, uint32x4_t p1,
                                   uint32x4_t m0, uint32x4_t m1) {
    A->cnan = vsubq_u32(vsubq_u32(A->cnan, n0), n1);
    A->cpinf = vsubq_u32(vsubq_u32(A->cpinf, p0), p1);
    A->cninf = vsubq_u32(vsubq_u32(A->cninf, m0), m1);
}

/* 8 values x (float32 lanes, exact) with their order-preserving keys; the digit is key >> -dsh.
 * big: the dtype's largest finite value, counted as Inf (see nonfin_f32). */
static inline void step_ps(acc *A, float32x4_t *mn, float32x4_t *mx, float32x4_t x0, float32x4_t x1,
                           uint32x4_t key0, uint32x4_t key1, int32x4_t dsh, uint32_t h, double *sk, sink *o,
                           float32x4_t big) {
    const float32x4_t inf = vdupq_n_f32(INFINITY), ninf = vdupq_n_f32(-INFINITY);
    uint32x4_t fin0 = vcaltq_f32(x0, big), fin1 = vcaltq_f32(x1, big); /* |x| < max: NaN fails */
    uint32x4_t z0 = vceqzq_f32(x0), z1 = vceqzq_f32(x1);
    A->czero = vsubq_u32(vsubq_u32(A->czero, z0), z1);
    float32x4_t w0 = x0, w1 = x1;
    if (vminvq_u32(vandq_u32(fin0, fin1)) != UINT32_MAX) {
        float32x4_t nbig = vnegq_f32(big);
        count_nonfinite(A, vmvnq_u32(vceqq_f32(x0, x0)), vmvnq_u32(vceqq_f32(x1, x1)), vcgeq_f32(x0, big),
                        vcgeq_f32(x1, big), vcleq_f32(x0, nbig), vcleq_f32(x1, nbig));
        w0 = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(x0), fin0)); /* non-finite -> +0 */
        w1 = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(x1), fin1));
        *mn = vminq_f32(*mn, vminq_f32(vbslq_f32(fin0, x0, inf), vbslq_f32(fin1, x1, inf)));
        *mx = vmaxq_f32(*mx, vmaxq_f32(vbslq_f32(fin0, x0, ninf), vbslq_f32(fin1, x1, ninf)));
    } else {
        *mn = vminq_f32(*mn, vminq_f32(x0, x1));
        *mx = vmaxq_f32(*mx, vmaxq_f32(x0, x1));
    }
    float64x2_t d[4] = {vcvt_f64_f32(vget_low_f32(w0)), vcvt_high_f64_f32(w0),
                        vcvt_f64_f32(vget_low_f32(w1)), vcvt_high_f64_f32(w1)};
    add_sums(A, d);
    sketch_group(sk, h, d);
    uint32x4_t k0 = vbicq_u32(fin0, z0), k1 = vbicq_u32(fin1, z1); /* finite, non-zero */
    if (o->hist) {
        if (!NO_HIST) hist8(o, vshlq_u32(key0, dsh), vshlq_u32(key1, dsh), k0, k1);
    } else {
        keys8(o, key0, key1, k0, k1);
    }
}

/* dig64 of 4 float64 values (two pairs of lanes), from their high halves. */
static inline uint32x4_t dig4(const sink *o, float64x2_t a, float64x2_t b) {
    uint32x4_t hi = vuzp2q_u32(vreinterpretq_u32_f64(a), vreinterpretq_u32_f64(b));
    int32x4_t t = vreinterpretq_s32_u32(vshlq_u32(vandq_u32(hi, vdupq_n_u32(0x7fffffffu)), vdupq_n_s32(-o->dsh)));
    int32x4_t md = vminq_s32(vmaxq_s32(vsubq_s32(t, vdupq_n_s32((int32_t)o->dlo - 1)), vdupq_n_s32(0)), vdupq_n_s32(32767));
    uint32x4_t sgn = vandq_u32(vreinterpretq_u32_s32(vshrq_n_s32(vreinterpretq_s32_u32(hi), 31)), vdupq_n_u32(0xffffu));
    return veorq_u32(vreinterpretq_u32_s32(md), veorq_u32(sgn, vdupq_n_u32(0x8000u)));
}

/* 8 float64 values x[0..3] (pairs of lanes). Masks are narrowed to 32-bit lanes for the
 * counts and the histogram (the digit: dig64 of their high halves). */
static inline void step_pd(acc *A, float64x2_t *mn, float64x2_t *mx, const float64x2_t *x, uint32_t h,
                           double *sk, sink *o) {
    const float64x2_t big = vdupq_n_f64(F64_MAX), nbig = vdupq_n_f64(-F64_MAX), inf = vdupq_n_f64(INFINITY);
    const float64x2_t ninf = vdupq_n_f64(-INFINITY);
    const uint64x2_t top = vdupq_n_u64(0x8000000000000000ull);
    uint64x2_t fin[4], z[4], key[4], keep[4];
    float64x2_t w[4];
    for (int k = 0; k < 4; k++) { fin[k] = vcaltq_f64(x[k], big); z[k] = vceqzq_f64(x[k]); w[k] = x[k]; }
    uint32x4_t f0 = narrow2(fin[0], fin[1]), f1 = narrow2(fin[2], fin[3]);
    A->czero = vsubq_u32(vsubq_u32(A->czero, narrow2(z[0], z[1])), narrow2(z[2], z[3]));
    if (vminvq_u32(vandq_u32(f0, f1)) != UINT32_MAX) {
        uint64x2_t e[4], p[4], m[4]; /* e: x == x, not NaN */
        for (int k = 0; k < 4; k++) {
            e[k] = vceqq_f64(x[k], x[k]);
            p[k] = vcgeq_f64(x[k], big);
            m[k] = vcleq_f64(x[k], nbig);
            w[k] = vreinterpretq_f64_u64(vandq_u64(vreinterpretq_u64_f64(x[k]), fin[k]));
        }
        count_nonfinite(A, vmvnq_u32(narrow2(e[0], e[1])), vmvnq_u32(narrow2(e[2], e[3])), narrow2(p[0], p[1]),
                        narrow2(p[2], p[3]), narrow2(m[0], m[1]), narrow2(m[2], m[3]));
        for (int k = 0; k < 4; k++) {
            *mn = vminq_f64(*mn, vbslq_f64(fin[k], x[k], inf));
            *mx = vmaxq_f64(*mx, vbslq_f64(fin[k], x[k], ninf));
        }
    } else {
        *mn = vminq_f64(*mn, vminq_f64(vminq_f64(x[0], x[1]), vminq_f64(x[2], x[3])));
        *mx = vmaxq_f64(*mx, vmaxq_f64(vmaxq_f64(x[0], x[1]), vmaxq_f64(x[2], x[3])));
    }
    add_sums(A, w);
    sketch_group(sk, h, w);
    for (int k = 0; k < 4; k++) {
        uint64x2_t b = vreinterpretq_u64_f64(x[k]);
        key[k] = veorq_u64(b, vorrq_u64(vreinterpretq_u64_s64(vshrq_n_s64(vreinterpretq_s64_u64(b), 63)), top));
        keep[k] = vbicq_u64(fin[k], z[k]);
    }
    if (o->hist) {
        if (NO_HIST) return;
        hist8(o, dig4(o, x[0], x[1]), dig4(o, x[2], x[3]), narrow2(keep[0], keep[1]), narrow2(keep[2], keep[3]));
    } else { /* 64-bit keys, two per register */
        uint64_t *dst = (uint64_t *)o->keys + o->nkeys;
        for (int k = 0; k < 4; k++) {
            unsigned m = mask2x(keep[k]);
            vst1q_u64(dst, vreinterpretq_u64_u32(pack4(vreinterpretq_u32_u64(key[k]), m)));
            dst += POP4[m] / 2;
        }
        o->nkeys = (uint64_t)(dst - (uint64_t *)o->keys);
    }
}

static void acc_init(acc *A, const partial *p) {
    for (int k = 0; k < 4; k++) {
        A->s[k] = vld1q_f64(p->s + 2 * k); A->q[k] = vld1q_f64(p->q + 2 * k); A->a[k] = vld1q_f64(p->a + 2 * k);
    }
    A->cnan = A->cpinf = A->cninf = A->czero = vdupq_n_u32(0);
}

static void acc_store(const acc *A, partial *p, double mn, double mx) {
    for (int k = 0; k < 4; k++) {
        vst1q_f64(p->s + 2 * k, A->s[k]); vst1q_f64(p->q + 2 * k, A->q[k]); vst1q_f64(p->a + 2 * k, A->a[k]);
    }
    p->nan += vaddvq_u32(A->cnan); p->pinf += vaddvq_u32(A->cpinf);
    p->ninf += vaddvq_u32(A->cninf); p->zero += vaddvq_u32(A->czero);
    if (mn < p->mn) p->mn = mn;
    if (mx > p->mx) p->mx = mx;
}

static void chunk_f64(const double *src, uint32_t len, acc *A, double *sk, const uint32_t *hs, sink *o, partial *p) {
    float64x2_t mn = vdupq_n_f64(INFINITY), mx = vdupq_n_f64(-INFINITY);
    for (uint32_t i = 0; i < len; i += 8) {
        float64x2_t x[4] = {vld1q_f64(src + i), vld1q_f64(src + i + 2), vld1q_f64(src + i + 4), vld1q_f64(src + i + 6)};
        step_pd(A, &mn, &mx, x, hs[i >> 3], sk, o);
    }
    acc_store(A, p, vminvq_f64(mn), vmaxvq_f64(mx));
}

static void chunk_ps(const void *src, int dtype, uint32_t len, acc *A, double *sk, const uint32_t *hs, sink *o, partial *p) {
    float32x4_t mn = vdupq_n_f32(INFINITY), mx = vdupq_n_f32(-INFINITY);
    const float32x4_t big = vdupq_n_f32((float)(dtype == PGFP_F32 ? F32_MAX : dtype == PGFP_F16 ? F16_MAX : BF16_MAX));
    if (dtype == PGFP_F32) {
        const uint32x4_t top = vdupq_n_u32(0x80000000u);
        const int32x4_t dsh = vdupq_n_s32(-16);
        for (uint32_t i = 0; i < len; i += 8) {
            uint32x4_t b0 = vld1q_u32((const uint32_t *)src + i), b1 = vld1q_u32((const uint32_t *)src + i + 4);
            uint32x4_t key0 = veorq_u32(b0, vorrq_u32(vreinterpretq_u32_s32(vshrq_n_s32(vreinterpretq_s32_u32(b0), 31)), top));
            uint32x4_t key1 = veorq_u32(b1, vorrq_u32(vreinterpretq_u32_s32(vshrq_n_s32(vreinterpretq_s32_u32(b1), 31)), top));
            step_ps(A, &mn, &mx, vreinterpretq_f32_u32(b0), vreinterpretq_f32_u32(b1), key0, key1, dsh, hs[i >> 3], sk, o,
                    big);
        }
    } else { /* 16-bit keys: the key is the digit */
        const uint32x4_t lo16 = vdupq_n_u32(0xffff), bit15 = vdupq_n_u32(0x8000);
        const int32x4_t dsh = vdupq_n_s32(0);
        for (uint32_t i = 0; i < len; i += 8) {
            uint16x8_t raw = vld1q_u16((const uint16_t *)src + i);
            uint32x4_t b0 = vmovl_u16(vget_low_u16(raw)), b1 = vmovl_high_u16(raw);
            float32x4_t x0, x1;
            if (dtype == PGFP_F16) {
                x0 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(raw)));
                x1 = vcvt_high_f32_f16(vreinterpretq_f16_u16(raw));
            } else {
                x0 = vreinterpretq_f32_u32(vshlq_n_u32(b0, 16));
                x1 = vreinterpretq_f32_u32(vshlq_n_u32(b1, 16));
            }
            uint32x4_t key0 = veorq_u32(b0, vorrq_u32(vandq_u32(vtstq_u32(b0, bit15), lo16), bit15));
            uint32x4_t key1 = veorq_u32(b1, vorrq_u32(vandq_u32(vtstq_u32(b1, bit15), lo16), bit15));
            step_ps(A, &mn, &mx, x0, x1, key0, key1, dsh, hs[i >> 3], sk, o, big);
        }
    }
    acc_store(A, p, vminvq_f32(mn), vmaxvq_f32(mx));
}

/* len is a multiple of 8 (the driver sends a short tail to the portable path). */
void pgfp_chunk_neon(const void *src, int dtype, uint32_t len, uint64_t start, partial *p, sink *out) {
    uint32_t hs[SUB / 8];
    sink so = *out, *o = &so; /* a local copy: the histogram stores cannot alias it */
    acc A;
    group_hashes(start >> 3, len >> 3, hs);
    acc_init(&A, p);
    if (dtype == PGFP_F64) chunk_f64(src, len, &A, p->sk, hs, o, p);
    else chunk_ps(src, dtype, len, &A, p->sk, hs, o, p);
    out->nkeys = o->nkeys;
}
#endif
