/* AVX2 (+F16C) code path of the fingerprint kernel: the same arithmetic as the portable
 * path in pgfp.c, element for element and lane for lane, so results are bit-identical.
 * Compiled with target attributes and chosen at run time, so wheels stay portable. */
#include "pgfp_internal.h"

#ifdef PGFP_X86
#include <immintrin.h>
#include <string.h>

#define TGT __attribute__((target("avx2,f16c")))

int pgfp_cpu_has_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}

typedef struct {
    __m256d s0, s1, q0, q1, a0, a1;
    __m256 mn, mx;
    __m256i cnan, cpinf, cninf, czero; /* 32-bit counts; a chunk has <= SUB elements */
} acc;

/* 8 exact float values (lanes j = 0..7 of the block-lane order) plus their key digits. */
/* Sign masks for 4 lanes from a nibble, and in-register XOR permutations (as 8x32 indices). */
static const int64_t SGN[16][4] = {
#define S(b) ((b) ? (int64_t)0x8000000000000000ull : 0)
#define ROW(n) {S((n) & 1), S((n) & 2), S((n) & 4), S((n) & 8)}
    ROW(0), ROW(1), ROW(2), ROW(3), ROW(4), ROW(5), ROW(6), ROW(7),
    ROW(8), ROW(9), ROW(10), ROW(11), ROW(12), ROW(13), ROW(14), ROW(15)
#undef ROW
#undef S
};
static const int32_t PERM[4][8] = {
    {0, 1, 2, 3, 4, 5, 6, 7}, {2, 3, 0, 1, 6, 7, 4, 5}, {4, 5, 6, 7, 0, 1, 2, 3}, {6, 7, 4, 5, 2, 3, 0, 1}};

/* Add one group of 8 canonical values (lanes lo = 0..3, hi = 4..7) to its sketch row. */
TGT static inline void sketch_group(double *sk, uint32_t h, __m256d lo, __m256d hi) {
    uint32_t s = (h >> 16) & 0xffu, x = (h >> 24) & 7u;
    lo = _mm256_xor_pd(lo, _mm256_loadu_pd((const double *)SGN[s & 15]));
    hi = _mm256_xor_pd(hi, _mm256_loadu_pd((const double *)SGN[s >> 4]));
    __m256d sw = _mm256_castsi256_pd(_mm256_set1_epi64x(-(int64_t)(x >> 2)));
    __m256d a = _mm256_blendv_pd(lo, hi, sw), b = _mm256_blendv_pd(hi, lo, sw);
    __m256i p = _mm256_loadu_si256((const __m256i *)PERM[x & 3]);
    a = _mm256_castps_pd(_mm256_permutevar8x32_ps(_mm256_castpd_ps(a), p));
    b = _mm256_castps_pd(_mm256_permutevar8x32_ps(_mm256_castpd_ps(b), p));
    double *row = sk + 8 * (h >> 27);
    _mm256_storeu_pd(row, _mm256_add_pd(_mm256_loadu_pd(row), a));
    _mm256_storeu_pd(row + 4, _mm256_add_pd(_mm256_loadu_pd(row + 4), b));
}

/* Group hashes of a chunk (ng groups from group index g0; hi32 constant in a chunk). */
TGT static void group_hashes(uint64_t g0, uint32_t ng, uint32_t *hs) {
    const __m256i m1 = _mm256_set1_epi32(0x7feb352d), m2 = _mm256_set1_epi32((int)0x846ca68bu);
    uint32_t k = mix32((uint32_t)(g0 >> 32) ^ SEED), lo = (uint32_t)g0, i = 0;
    __m256i idx = _mm256_add_epi32(_mm256_set1_epi32((int)lo), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i key = _mm256_set1_epi32((int)k);
    for (; i + 8 <= ng; i += 8) {
        __m256i x = _mm256_xor_si256(idx, key);
        x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
        x = _mm256_mullo_epi32(x, m1);
        x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
        x = _mm256_mullo_epi32(x, m2);
        x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
        _mm256_storeu_si256((__m256i *)(hs + i), x);
        idx = _mm256_add_epi32(idx, _mm256_set1_epi32(8));
    }
    for (; i < ng; i++) hs[i] = mix32((lo + i) ^ k);
}

TGT static inline void step_ps(acc *A, __m256 x, __m256i d, uint32_t h, double *sk, uint32_t *dig) {
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 fin = _mm256_cmp_ps(_mm256_and_ps(x, absm), _mm256_set1_ps(3.40282347e+38f), _CMP_LE_OQ);
    if (_mm256_movemask_ps(fin) != 0xff) {
        A->cnan = _mm256_sub_epi32(A->cnan, _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)));
        A->cpinf = _mm256_sub_epi32(A->cpinf, _mm256_castps_si256(_mm256_cmp_ps(x, _mm256_set1_ps(INFINITY), _CMP_EQ_OQ)));
        A->cninf = _mm256_sub_epi32(A->cninf, _mm256_castps_si256(_mm256_cmp_ps(x, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ)));
    }
    A->czero = _mm256_sub_epi32(A->czero, _mm256_castps_si256(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ)));
    A->mn = _mm256_min_ps(_mm256_blendv_ps(_mm256_set1_ps(INFINITY), x, fin), A->mn);
    A->mx = _mm256_max_ps(_mm256_blendv_ps(_mm256_set1_ps(-INFINITY), x, fin), A->mx);
    __m256 w = _mm256_add_ps(_mm256_and_ps(x, fin), _mm256_setzero_ps()); /* non-finite->+0, -0->+0 */
    __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(w));
    __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(w, 1));
    const __m256d absd = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffll));
    A->s0 = _mm256_add_pd(A->s0, lo);
    A->s1 = _mm256_add_pd(A->s1, hi);
    A->q0 = _mm256_add_pd(A->q0, _mm256_mul_pd(lo, lo));
    A->q1 = _mm256_add_pd(A->q1, _mm256_mul_pd(hi, hi));
    A->a0 = _mm256_add_pd(A->a0, _mm256_and_pd(lo, absd));
    A->a1 = _mm256_add_pd(A->a1, _mm256_and_pd(hi, absd));
    sketch_group(sk, h, lo, hi);
    _mm256_storeu_si256((__m256i *)dig, _mm256_blendv_epi8(_mm256_set1_epi32((int)HBINS), d, _mm256_castps_si256(fin)));
}

/* key -> key + 1 where key == 0x7fff..: maps -0 onto +0 (32-bit lanes) */
TGT static inline __m256i fix_negzero32(__m256i k, int v) {
    return _mm256_sub_epi32(k, _mm256_cmpeq_epi32(k, _mm256_set1_epi32(v)));
}

TGT static inline __m256i digits16(__m128i raw) { /* 8 x 16-bit bits -> 16-bit keys */
    __m256i b = _mm256_cvtepu16_epi32(raw);
    __m256i neg = _mm256_srai_epi32(_mm256_slli_epi32(b, 16), 31);
    __m256i k = _mm256_xor_si256(b, _mm256_or_si256(_mm256_and_si256(neg, _mm256_set1_epi32(0xffff)), _mm256_set1_epi32(0x8000)));
    return fix_negzero32(k, 0x7fff);
}

TGT static void acc_init(acc *A, const partial *p) {
    A->s0 = _mm256_loadu_pd(p->s); A->s1 = _mm256_loadu_pd(p->s + 4);
    A->q0 = _mm256_loadu_pd(p->q); A->q1 = _mm256_loadu_pd(p->q + 4);
    A->a0 = _mm256_loadu_pd(p->a); A->a1 = _mm256_loadu_pd(p->a + 4);
    A->mn = _mm256_set1_ps(INFINITY);
    A->mx = _mm256_set1_ps(-INFINITY);
    A->cnan = A->cpinf = A->cninf = A->czero = _mm256_setzero_si256();
}

TGT static uint64_t hsum32(const __m256i *v) {
    uint32_t t[8];
    memcpy(t, v, sizeof t);
    uint64_t s = 0;
    for (int i = 0; i < 8; i++) s += t[i];
    return s;
}

TGT static void acc_store(const acc *A, partial *p) {
    _mm256_storeu_pd(p->s, A->s0); _mm256_storeu_pd(p->s + 4, A->s1);
    _mm256_storeu_pd(p->q, A->q0); _mm256_storeu_pd(p->q + 4, A->q1);
    _mm256_storeu_pd(p->a, A->a0); _mm256_storeu_pd(p->a + 4, A->a1);
    float mn[8], mx[8];
    _mm256_storeu_ps(mn, A->mn);
    _mm256_storeu_ps(mx, A->mx);
    for (int j = 0; j < 8; j++) {
        if ((double)mn[j] < p->mn) p->mn = mn[j];
        if ((double)mx[j] > p->mx) p->mx = mx[j];
    }
    p->nan += hsum32(&A->cnan); p->pinf += hsum32(&A->cpinf); p->ninf += hsum32(&A->cninf); p->zero += hsum32(&A->czero);
}

TGT static void stats_f64_avx2(const double *src, uint32_t len, partial *p, const uint32_t *hs, uint32_t *dig) {
    const __m256d absd = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffll));
    const __m256d big = _mm256_set1_pd(1.7976931348623157e308), inf = _mm256_set1_pd(INFINITY);
    const __m256i top = _mm256_set1_epi64x((long long)0x8000000000000000ull);
    __m256d s[2], q[2], a[2], mn[2], mx[2];
    __m256i cn[2], cp[2], cm[2], cz[2];
    for (int h = 0; h < 2; h++) {
        s[h] = _mm256_loadu_pd(p->s + 4 * h); q[h] = _mm256_loadu_pd(p->q + 4 * h); a[h] = _mm256_loadu_pd(p->a + 4 * h);
        mn[h] = inf; mx[h] = _mm256_set1_pd(-INFINITY);
        cn[h] = cp[h] = cm[h] = cz[h] = _mm256_setzero_si256();
    }
    for (uint32_t i = 0; i < len; i += 8) {
        __m256d wv[2];
        for (int h = 0; h < 2; h++) {
            __m256d x = _mm256_loadu_pd(src + i + 4 * h);
            __m256d fin = _mm256_cmp_pd(_mm256_and_pd(x, absd), big, _CMP_LE_OQ);
            if (_mm256_movemask_pd(fin) != 0xf) {
                cn[h] = _mm256_sub_epi64(cn[h], _mm256_castpd_si256(_mm256_cmp_pd(x, x, _CMP_UNORD_Q)));
                cp[h] = _mm256_sub_epi64(cp[h], _mm256_castpd_si256(_mm256_cmp_pd(x, inf, _CMP_EQ_OQ)));
                cm[h] = _mm256_sub_epi64(cm[h], _mm256_castpd_si256(_mm256_cmp_pd(x, _mm256_set1_pd(-INFINITY), _CMP_EQ_OQ)));
            }
            cz[h] = _mm256_sub_epi64(cz[h], _mm256_castpd_si256(_mm256_cmp_pd(x, _mm256_setzero_pd(), _CMP_EQ_OQ)));
            mn[h] = _mm256_min_pd(_mm256_blendv_pd(inf, x, fin), mn[h]);
            mx[h] = _mm256_max_pd(_mm256_blendv_pd(_mm256_set1_pd(-INFINITY), x, fin), mx[h]);
            __m256d w = _mm256_add_pd(_mm256_and_pd(x, fin), _mm256_setzero_pd());
            s[h] = _mm256_add_pd(s[h], w);
            q[h] = _mm256_add_pd(q[h], _mm256_mul_pd(w, w));
            a[h] = _mm256_add_pd(a[h], _mm256_and_pd(w, absd));
            wv[h] = w;
            /* top-16 digit of the order-preserving key */
            __m256i b = _mm256_castpd_si256(x);
            __m256i neg = _mm256_cmpgt_epi64(_mm256_setzero_si256(), b);
            __m256i k = _mm256_xor_si256(b, _mm256_or_si256(neg, top));
            k = _mm256_sub_epi64(k, _mm256_cmpeq_epi64(k, _mm256_set1_epi64x(0x7fffffffffffffffll)));
            __m256i d = _mm256_blendv_epi8(_mm256_set1_epi64x(HBINS), _mm256_srli_epi64(k, 48), _mm256_castpd_si256(fin));
            d = _mm256_permutevar8x32_epi32(d, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
            _mm_storeu_si128((__m128i *)(dig + i + 4 * h), _mm256_castsi256_si128(d));
        }
        sketch_group(p->sk, hs[i >> 3], wv[0], wv[1]);
    }
    double tmn[8], tmx[8];
    uint64_t t[4][8];
    for (int h = 0; h < 2; h++) {
        _mm256_storeu_pd(p->s + 4 * h, s[h]); _mm256_storeu_pd(p->q + 4 * h, q[h]); _mm256_storeu_pd(p->a + 4 * h, a[h]);
        _mm256_storeu_pd(tmn + 4 * h, mn[h]); _mm256_storeu_pd(tmx + 4 * h, mx[h]);
        _mm256_storeu_si256((__m256i *)(t[0] + 4 * h), cn[h]); _mm256_storeu_si256((__m256i *)(t[1] + 4 * h), cp[h]);
        _mm256_storeu_si256((__m256i *)(t[2] + 4 * h), cm[h]); _mm256_storeu_si256((__m256i *)(t[3] + 4 * h), cz[h]);
    }
    for (int j = 0; j < 8; j++) {
        if (tmn[j] < p->mn) p->mn = tmn[j];
        if (tmx[j] > p->mx) p->mx = tmx[j];
        p->nan += t[0][j]; p->pinf += t[1][j]; p->ninf += t[2][j]; p->zero += t[3][j];
    }
}

/* len is a multiple of 8 (the driver sends a short tail to the portable path). */
TGT void pgfp_chunk_avx2(const void *src, int dtype, uint32_t len, uint64_t start, partial *p, uint32_t *dig) {
    uint32_t hs[SUB / 8];
    group_hashes(start >> 3, len >> 3, hs);
    if (dtype == PGFP_F64) {
        stats_f64_avx2(src, len, p, hs, dig);
    } else {
        acc A;
        acc_init(&A, p);
        const __m256i top = _mm256_set1_epi32((int)0x80000000u);
        for (uint32_t i = 0; i < len; i += 8) {
            __m256 x;
            __m256i d;
            if (dtype == PGFP_F32) {
                __m256i b = _mm256_loadu_si256((const __m256i *)((const float *)src + i));
                x = _mm256_castsi256_ps(b);
                __m256i k = _mm256_xor_si256(b, _mm256_or_si256(_mm256_srai_epi32(b, 31), top));
                d = _mm256_srli_epi32(fix_negzero32(k, 0x7fffffff), 16);
            } else {
                __m128i raw = _mm_loadu_si128((const __m128i *)((const uint16_t *)src + i));
                x = dtype == PGFP_F16 ? _mm256_cvtph_ps(raw)
                                      : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
                d = digits16(raw);
            }
            step_ps(&A, x, d, hs[i >> 3], p->sk, dig + i);
        }
        acc_store(&A, p);
    }
}
#endif

#ifdef PGFP_X86
/* Candidates of a quantile pass (see matcher in pgfp_internal.h): raw bit prefixes, two
 * vectors per branch, so the loop is bound by memory rather than by compares. */
TGT uint32_t pgfp_match_avx2(const void *src, int dtype, uint32_t len, const matcher *mt, uint32_t *out) {
    uint32_t cnt = 0, i = 0;
    const int shift = mt->shift, nr = mt->nraw;
    const __m128i sh = _mm_cvtsi32_si128(shift);
    if (dtype == PGFP_F32) {
        const uint32_t *u = src;
        if (mt->hashed) {
            const __m256i mul = _mm256_set1_epi32((int)mt->mul);
            const __m256i lo = _mm256_loadu_si256((const __m256i *)mt->val);
            const __m256i hi = _mm256_loadu_si256((const __m256i *)(mt->val + 8));
#define PROBE(P) ({                                                                               \
        __m256i b_ = _mm256_srli_epi32(_mm256_mullo_epi32((P), mul), 28);                              \
        __m256 v_ = _mm256_blendv_ps(_mm256_castsi256_ps(_mm256_permutevar8x32_epi32(lo, b_)),          \
                                     _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(hi, b_)),          \
                                     _mm256_castsi256_ps(_mm256_slli_epi32(b_, 28)));                   \
        _mm256_cmpeq_epi32((P), _mm256_castps_si256(v_)); })
            for (; i + 16 <= len; i += 16) {
                __m256i p0 = _mm256_srl_epi32(_mm256_loadu_si256((const __m256i *)(u + i)), sh);
                __m256i p1 = _mm256_srl_epi32(_mm256_loadu_si256((const __m256i *)(u + i + 8)), sh);
                unsigned mask = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(PROBE(p0)))
                              | (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(PROBE(p1))) << 8;
                while (mask) { out[cnt++] = i + (uint32_t)__builtin_ctz(mask); mask &= mask - 1; }
            }
#undef PROBE
        } else {
            __m256i g[NG + 1];
            for (int k = 0; k < nr; k++) g[k] = _mm256_set1_epi32((int)(uint32_t)mt->raw[k]);
            for (; i + 8 <= len; i += 8) {
                __m256i pre = _mm256_srl_epi32(_mm256_loadu_si256((const __m256i *)(u + i)), sh);
                __m256i m = _mm256_cmpeq_epi32(pre, g[0]);
                for (int q = 1; q < nr; q++) m = _mm256_or_si256(m, _mm256_cmpeq_epi32(pre, g[q]));
                unsigned mask = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m));
                while (mask) { out[cnt++] = i + (uint32_t)__builtin_ctz(mask); mask &= mask - 1; }
            }
        }
        for (; i < len; i++) {
            uint32_t pre = u[i] >> shift;
            for (int q = 0; q < nr; q++) if (pre == mt->raw[q]) { out[cnt++] = i; break; }
        }
    } else {
        const uint64_t *u = src;
        __m256i g[NG + 1];
        for (int k = 0; k < nr; k++) g[k] = _mm256_set1_epi64x((long long)mt->raw[k]);
        for (; i + 8 <= len; i += 8) {
            __m256i p0 = _mm256_srl_epi64(_mm256_loadu_si256((const __m256i *)(u + i)), sh);
            __m256i p1 = _mm256_srl_epi64(_mm256_loadu_si256((const __m256i *)(u + i + 4)), sh);
            __m256i m0 = _mm256_cmpeq_epi64(p0, g[0]), m1 = _mm256_cmpeq_epi64(p1, g[0]);
            for (int q = 1; q < nr; q++) {
                m0 = _mm256_or_si256(m0, _mm256_cmpeq_epi64(p0, g[q]));
                m1 = _mm256_or_si256(m1, _mm256_cmpeq_epi64(p1, g[q]));
            }
            unsigned mask = (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(m0))
                          | (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(m1)) << 4;
            while (mask) { out[cnt++] = i + (uint32_t)__builtin_ctz(mask); mask &= mask - 1; }
        }
        for (; i < len; i++) {
            uint64_t pre = u[i] >> shift;
            for (int q = 0; q < nr; q++) if (pre == mt->raw[q]) { out[cnt++] = i; break; }
        }
    }
    return cnt;
}
#endif
