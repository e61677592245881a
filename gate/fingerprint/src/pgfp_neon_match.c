/* NEON code path (aarch64) of the fingerprint kernel, quantile passes: the candidates of
 * a refinement or collection pass (see matcher in pgfp_internal.h), found by comparing raw
 * bit prefixes as the AVX2 matcher does. Candidates are few, so a step of 8 or 16 elements
 * without one costs a single horizontal test; the lane indices of a step with some are
 * left-packed into out (which has LANES spare slots) without a branch per element. */
#include "pgfp_neon.h"

#ifdef PGFP_NEON

/* Lanes whose prefix p is the one its perfect-hash bucket accepts (float32 prefixes, and
 * float64 ones that fit 32 bits): bucket (p * mul) >> 28 looks up tab, the 16 accepted
 * prefixes (64 bytes), with one 4-register TBL on the bucket's 4 byte indices. */
static inline uint32x4_t probe(uint32x4_t p, uint32x4_t mul, uint8x16x4_t tab) {
    uint32x4_t b = vshrq_n_u32(vmulq_u32(p, mul), 28);
    uint32x4_t idx = vmlaq_n_u32(vdupq_n_u32(0x03020100u), b, 0x04040404u);
    return vceqq_u32(p, vreinterpretq_u32_u8(vqtbl4q_u8(tab, vreinterpretq_u8_u32(idx))));
}

/* Append the indices base + lane of the lanes set in m. */
static inline uint32_t emit4(uint32x4_t m, uint32_t base, uint32_t *out, uint32_t cnt) {
    const uint32x4_t iota = {0, 1, 2, 3};
    unsigned b = mask4(m);
    vst1q_u32(out + cnt, pack4(vaddq_u32(iota, vdupq_n_u32(base)), b));
    return cnt + POP4[b];
}

static inline int any8(uint32x4_t m0, uint32x4_t m1) { return vmaxvq_u32(vorrq_u32(m0, m1)) != 0; }

/* 4 float32 raw values r: lanes whose prefix is a group's; heavy values counted, not emitted. */
static inline uint32x4_t groups4(uint32x4_t r, int32x4_t sh, const uint32x4_t *g, int nr, const uint32x4_t *hv,
                                 uint32x4_t *hc, int nh) {
    uint32x4_t pre = vshlq_u32(r, sh), m = vceqq_u32(pre, g[0]);
    for (int k = 1; k < nr; k++) m = vorrq_u32(m, vceqq_u32(pre, g[k]));
    for (int h = 0; h < nh; h++) {
        uint32x4_t e = vceqq_u32(r, hv[h]);
        hc[h] = vsubq_u32(hc[h], e);
        m = vbicq_u32(m, e);
    }
    return m;
}

static uint32_t match_f32(const uint32_t *u, uint32_t len, const matcher *mt, uint32_t *out, uint64_t *hcount) {
    uint32_t cnt = 0, i = 0;
    const int32x4_t sh = vdupq_n_s32(-mt->shift);
    const int nr = mt->nraw, nh = mt->nheavy;
    uint32x4_t g[NG], hv[NG], hc[NG];
    for (int k = 0; k < nr; k++) g[k] = vdupq_n_u32((uint32_t)mt->raw[k]);
    for (int h = 0; h < nh; h++) { hv[h] = vdupq_n_u32((uint32_t)mt->hraw[h]); hc[h] = vdupq_n_u32(0); }
    if (mt->hashed && nh == 0) { /* the common case: 16 elements a step, no compare chain */
        const uint32x4_t mul = vdupq_n_u32(mt->mul);
        const uint8x16x4_t tab = vld1q_u8_x4((const uint8_t *)mt->val);
        for (; i + 16 <= len; i += 16) {
            uint32x4_t m[4];
            for (int k = 0; k < 4; k++) m[k] = probe(vshlq_u32(vld1q_u32(u + i + 4 * k), sh), mul, tab);
            if (!any8(vorrq_u32(m[0], m[1]), vorrq_u32(m[2], m[3]))) continue;
            for (int k = 0; k < 4; k++) cnt = emit4(m[k], i + 4 * k, out, cnt);
        }
    }
    for (; i + 8 <= len; i += 8) {
        uint32x4_t m0 = groups4(vld1q_u32(u + i), sh, g, nr, hv, hc, nh);
        uint32x4_t m1 = groups4(vld1q_u32(u + i + 4), sh, g, nr, hv, hc, nh);
        if (!any8(m0, m1)) continue;
        cnt = emit4(m0, i, out, cnt);
        cnt = emit4(m1, i + 4, out, cnt);
    }
    for (; i < len; i++) cnt = match_one(u[i], i, mt, out, cnt, hcount);
    for (int h = 0; h < nh; h++) hcount[h] += vaddvq_u32(hc[h]);
    return cnt;
}

/* 2 float64 raw values r: as groups4, with 64-bit lanes. */
static inline uint64x2_t groups2(uint64x2_t r, int64x2_t sh, const uint64x2_t *g, int nr, const uint64x2_t *hv,
                                 uint64x2_t *hc, int nh) {
    uint64x2_t pre = vshlq_u64(r, sh), m = vceqq_u64(pre, g[0]);
    for (int k = 1; k < nr; k++) m = vorrq_u64(m, vceqq_u64(pre, g[k]));
    for (int h = 0; h < nh; h++) {
        uint64x2_t e = vceqq_u64(r, hv[h]);
        hc[h] = vsubq_u64(hc[h], e);
        m = vbicq_u64(m, e);
    }
    return m;
}

static uint32_t match_f64(const uint64_t *u, uint32_t len, const matcher *mt, uint32_t *out, uint64_t *hcount) {
    uint32_t cnt = 0, i = 0;
    const int64x2_t sh = vdupq_n_s64(-(int64_t)mt->shift);
    const int nr = mt->nraw, nh = mt->nheavy;
    uint64x2_t g[NG], hv[NG], hc[NG];
    for (int k = 0; k < nr; k++) g[k] = vdupq_n_u64(mt->raw[k]);
    for (int h = 0; h < nh; h++) { hv[h] = vdupq_n_u64(mt->hraw[h]); hc[h] = vdupq_n_u64(0); }
    if (mt->hashed && nh == 0) { /* prefixes fit 32 bits: narrow 8 of them, one hash lookup each */
        const uint32x4_t mul = vdupq_n_u32(mt->mul);
        const uint8x16x4_t tab = vld1q_u8_x4((const uint8_t *)mt->val);
        for (; i + 8 <= len; i += 8) {
            uint64x2_t p[4];
            for (int k = 0; k < 4; k++) p[k] = vshlq_u64(vld1q_u64(u + i + 2 * k), sh);
            uint32x4_t m0 = probe(narrow2(p[0], p[1]), mul, tab), m1 = probe(narrow2(p[2], p[3]), mul, tab);
            if (!any8(m0, m1)) continue;
            cnt = emit4(m0, i, out, cnt);
            cnt = emit4(m1, i + 4, out, cnt);
        }
    }
    for (; i + 8 <= len; i += 8) {
        uint64x2_t m[4];
        for (int k = 0; k < 4; k++) m[k] = groups2(vld1q_u64(u + i + 2 * k), sh, g, nr, hv, hc, nh);
        uint32x4_t m0 = narrow2(m[0], m[1]), m1 = narrow2(m[2], m[3]);
        if (!any8(m0, m1)) continue;
        cnt = emit4(m0, i, out, cnt);
        cnt = emit4(m1, i + 4, out, cnt);
    }
    for (; i < len; i++) cnt = match_one(u[i], i, mt, out, cnt, hcount);
    for (int h = 0; h < nh; h++) hcount[h] += vaddvq_u64(hc[h]);
    return cnt;
}

uint32_t pgfp_match_neon(const void *src, int dtype, uint32_t len, const matcher *mt, uint32_t *out, uint64_t *hcount) {
    return dtype == PGFP_F32 ? match_f32(src, len, mt, out, hcount) : match_f64(src, len, mt, out, hcount);
}
#endif
