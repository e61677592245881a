/* AVX2 (+F16C) code path of the fingerprint kernel: the same arithmetic as the portable
 * path in pgfp_scalar.c, element for element and lane for lane, so results are
 * bit-identical. Compiled with target attributes and chosen at run time, so wheels stay
 * portable. */
#include "pgfp_internal.h"

#ifdef PGFP_X86
#include <immintrin.h>
#include <string.h>

/* Each pass reads its input once, front to back, and does enough per element that the hardware
 * prefetcher falls behind: on an Intel Xeon (model 167) the fused pass and the collection read
 * 67M float32 from memory at ~4 GB/s, against 15 GB/s for np.sum. Prefetching PF bytes ahead (one
 * line per 64 bytes read) halves both passes there (scripts/bench_fingerprint.py --compare-with);
 * 4 KiB measured best of 1-16 KiB. A prefetch never faults, so reading past the end is harmless. */
#define PF 4096
#define TGT __attribute__((target("avx2,f16c,popcnt")))

int pgfp_cpu_has_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") && __builtin_cpu_supports("popcnt");
}

/* Left-pack table: for an 8-bit lane mask, the indices of its set lanes, one per byte. */
#define POP8(m) (((m) & 1) + ((m) >> 1 & 1) + ((m) >> 2 & 1) + ((m) >> 3 & 1) + ((m) >> 4 & 1) + ((m) >> 5 & 1) + ((m) >> 6 & 1) + ((m) >> 7 & 1))
#define LANE(m, j) (((m) >> (j) & 1) ? (uint64_t)(j) << (8 * POP8((m) & ((1u << (j)) - 1))) : 0)
#define PK(m) (LANE(m, 0) | LANE(m, 1) | LANE(m, 2) | LANE(m, 3) | LANE(m, 4) | LANE(m, 5) | LANE(m, 6) | LANE(m, 7))
#define R4(b) PK(b), PK((b) + 1), PK((b) + 2), PK((b) + 3)
#define R16(b) R4(b), R4((b) + 4), R4((b) + 8), R4((b) + 12)
#define R64(b) R16(b), R16((b) + 16), R16((b) + 32), R16((b) + 48)
static const uint64_t PACK[256] = {R64(0), R64(64), R64(128), R64(192)};
#undef R64
#undef R16
#undef R4
#undef PK
#undef LANE
#undef POP8

/* 32-bit lanes of v selected by mask m, moved to the front (the rest: lane 0 again). */
TGT static inline __m256i left_pack(__m256i v, unsigned m) {
    return _mm256_permutevar8x32_epi32(v, _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)PACK[m])));
}
/* 4-bit mask of 64-bit lanes -> 8-bit mask of their 32-bit halves */
static const unsigned char WIDE[16] = {0x00, 0x03, 0x0c, 0x0f, 0x30, 0x33, 0x3c, 0x3f,
                                       0xc0, 0xc3, 0xcc, 0xcf, 0xf0, 0xf3, 0xfc, 0xff};

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

/* Add one group of 8 values (lanes lo = 0..3, hi = 4..7) to its sketch row: element j goes
 * to slot j ^ x, so bit 2 of x picks the half each register lands in and x & 3 permutes
 * inside a half. A value may be -0.0: every bucket starts at +0.0 and x + -0.0 == x, so it
 * changes no bit. */
TGT static inline void sketch_group(double *sk, uint32_t h, __m256d lo, __m256d hi) {
    if (NO_SKETCH) return;
    uint32_t s = (h >> 16) & 0xffu, x = (h >> 24) & 7u;
    __m256i p = _mm256_loadu_si256((const __m256i *)PERM[x & 3]);
    lo = _mm256_xor_pd(lo, _mm256_loadu_pd((const double *)SGN[s & 15]));
    hi = _mm256_xor_pd(hi, _mm256_loadu_pd((const double *)SGN[s >> 4]));
    lo = _mm256_castps_pd(_mm256_permutevar8x32_ps(_mm256_castpd_ps(lo), p));
    hi = _mm256_castps_pd(_mm256_permutevar8x32_ps(_mm256_castpd_ps(hi), p));
    double *row = sk + 8 * (h >> 27), *rl = row + (x & 4), *rh = row + (4 - (x & 4));
    _mm256_storeu_pd(rl, _mm256_add_pd(_mm256_loadu_pd(rl), lo));
    _mm256_storeu_pd(rh, _mm256_add_pd(_mm256_loadu_pd(rh), hi));
}

/* Group hashes of a chunk (ng groups from group index g0; hi32 constant in a chunk). */
TGT static void group_hashes(uint64_t g0, uint32_t ng, uint32_t *hs) {
    const __m256i m1 = _mm256_set1_epi32(0x7feb352d), m2 = _mm256_set1_epi32((int)0x846ca68bu);
    uint32_t k = mix32((uint32_t)(g0 >> 32) ^ SEED), lo = (uint32_t)g0, i = 0;
    if (NO_SKETCH) return;
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

/* Junk bins HBINS + j, j = lane, and the dominant digit's HBINS + LANES + j (see sink). */
#define JUNK32 _mm256_setr_epi32(HBINS, HBINS + 1, HBINS + 2, HBINS + 3, HBINS + 4, HBINS + 5, HBINS + 6, HBINS + 7)
#define DOM32 _mm256_add_epi32(JUNK32, _mm256_set1_epi32(LANES))

/* Send 8 lanes to the sink: digits of kept lanes (others to their junk bins) into the
 * histogram, or the kept keys appended to the key buffer. */
TGT static inline void sink8(sink *o, __m256i key, int dshift, __m256i keep) {
    if (o->hist) {
        if (NO_HIST) return;
        __m256i d = _mm256_srli_epi32(key, dshift);
        __m256i dom = _mm256_and_si256(_mm256_cmpeq_epi32(d, _mm256_set1_epi32((int)o->hdig)), keep);
        d = _mm256_blendv_epi8(_mm256_blendv_epi8(JUNK32, d, keep), DOM32, dom);
        /* digits leave the vector 64 bits at a time (two per move) */
        __m128i d0 = _mm256_castsi256_si128(d), d1 = _mm256_extracti128_si256(d, 1);
        uint64_t a = (uint64_t)_mm_cvtsi128_si64(d0), b = (uint64_t)_mm_extract_epi64(d0, 1);
        uint64_t e = (uint64_t)_mm_cvtsi128_si64(d1), f = (uint64_t)_mm_extract_epi64(d1, 1);
        uint32_t *h = o->hist;
        h[(uint32_t)a]++; h[a >> 32]++; h[(uint32_t)b]++; h[b >> 32]++;
        h[(uint32_t)e]++; h[e >> 32]++; h[(uint32_t)f]++; h[f >> 32]++;
    } else {
        unsigned m = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(keep));
        _mm256_storeu_si256((__m256i *)((uint32_t *)o->keys + o->nkeys), left_pack(key, m));
        o->nkeys += (uint64_t)__builtin_popcount(m);
    }
}

typedef struct {
    __m256d s0, s1, q0, q1, a0, a1;
    __m256 mn, mx;
    __m256i cnan, cpinf, cninf, czero; /* 32-bit counts; a chunk has <= SUB elements */
} acc;

/* 8 values x (float32 lanes, exact) with their order-preserving keys (32-bit lanes; the
 * top 16 bits of a float32 key, or a whole 16-bit key, is the histogram digit). big: the
 * dtype's largest finite value, counted as Inf (see nonfin_f32). */
TGT static inline void step_ps(acc *A, __m256 x, __m256i key, int dshift, uint32_t h, double *sk, sink *o, __m256 big) {
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 fin = _mm256_cmp_ps(_mm256_and_ps(x, absm), big, _CMP_LT_OQ);
    __m256 zero = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ);
    A->czero = _mm256_sub_epi32(A->czero, _mm256_castps_si256(zero));
    __m256 w = x;
    if (_mm256_movemask_ps(fin) != 0xff) {
        A->cnan = _mm256_sub_epi32(A->cnan, _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)));
        __m256 nbig = _mm256_xor_ps(big, _mm256_set1_ps(-0.0f));
        A->cpinf = _mm256_sub_epi32(A->cpinf, _mm256_castps_si256(_mm256_cmp_ps(x, big, _CMP_GE_OQ)));
        A->cninf = _mm256_sub_epi32(A->cninf, _mm256_castps_si256(_mm256_cmp_ps(x, nbig, _CMP_LE_OQ)));
        A->mn = _mm256_min_ps(_mm256_blendv_ps(_mm256_set1_ps(INFINITY), x, fin), A->mn);
        A->mx = _mm256_max_ps(_mm256_blendv_ps(_mm256_set1_ps(-INFINITY), x, fin), A->mx);
        w = _mm256_and_ps(x, fin); /* non-finite -> +0 */
    } else {
        A->mn = _mm256_min_ps(x, A->mn);
        A->mx = _mm256_max_ps(x, A->mx);
    }
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
    sink8(o, key, dshift, _mm256_castps_si256(_mm256_andnot_ps(zero, fin)));
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

/* float64: two halves of 4 lanes per group of 8. */
TGT static void chunk_f64(const double *src, uint32_t len, partial *p, const uint32_t *hs, sink *o) {
    const __m256d absd = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffll));
    const __m256d big = _mm256_set1_pd(F64_MAX), nbig = _mm256_set1_pd(-F64_MAX), inf = _mm256_set1_pd(INFINITY);
    const __m256i top = _mm256_set1_epi64x((long long)0x8000000000000000ull);
    /* dig64, 8 lanes of the values' high halves */
    const __m128i dsh = _mm_cvtsi32_si128(o->dsh);
    const __m256i abs32 = _mm256_set1_epi32(0x7fffffff), dlo = _mm256_set1_epi32((int)o->dlo - 1);
    const __m256i lo16 = _mm256_set1_epi32(0xffff), bit15 = _mm256_set1_epi32(0x8000), mdmax = _mm256_set1_epi32(32767);
    __m256d s[2], q[2], a[2], mn[2], mx[2];
    __m256i cn[2], cp[2], cm[2], cz[2];
    for (int h = 0; h < 2; h++) {
        s[h] = _mm256_loadu_pd(p->s + 4 * h); q[h] = _mm256_loadu_pd(p->q + 4 * h); a[h] = _mm256_loadu_pd(p->a + 4 * h);
        mn[h] = inf; mx[h] = _mm256_set1_pd(-INFINITY);
        cn[h] = cp[h] = cm[h] = cz[h] = _mm256_setzero_si256();
    }
    for (uint32_t i = 0; i < len; i += 8) {
        _mm_prefetch((const char *)(src + i) + PF, _MM_HINT_T0);
        __m256d wv[2];
        __m256i bv[2], kv[2];
        for (int h = 0; h < 2; h++) {
            __m256d x = _mm256_loadu_pd(src + i + 4 * h);
            __m256d fin = _mm256_cmp_pd(_mm256_and_pd(x, absd), big, _CMP_LT_OQ); /* +-max: Inf */
            __m256d zero = _mm256_cmp_pd(x, _mm256_setzero_pd(), _CMP_EQ_OQ);
            cz[h] = _mm256_sub_epi64(cz[h], _mm256_castpd_si256(zero));
            __m256d w = x;
            if (_mm256_movemask_pd(fin) != 0xf) {
                cn[h] = _mm256_sub_epi64(cn[h], _mm256_castpd_si256(_mm256_cmp_pd(x, x, _CMP_UNORD_Q)));
                cp[h] = _mm256_sub_epi64(cp[h], _mm256_castpd_si256(_mm256_cmp_pd(x, big, _CMP_GE_OQ)));
                cm[h] = _mm256_sub_epi64(cm[h], _mm256_castpd_si256(_mm256_cmp_pd(x, nbig, _CMP_LE_OQ)));
                mn[h] = _mm256_min_pd(_mm256_blendv_pd(inf, x, fin), mn[h]);
                mx[h] = _mm256_max_pd(_mm256_blendv_pd(_mm256_set1_pd(-INFINITY), x, fin), mx[h]);
                w = _mm256_and_pd(x, fin);
            } else {
                mn[h] = _mm256_min_pd(x, mn[h]);
                mx[h] = _mm256_max_pd(x, mx[h]);
            }
            s[h] = _mm256_add_pd(s[h], w);
            q[h] = _mm256_add_pd(q[h], _mm256_mul_pd(w, w));
            a[h] = _mm256_add_pd(a[h], _mm256_and_pd(w, absd));
            wv[h] = w;
            __m256i b = _mm256_castpd_si256(x);
            __m256i keep = _mm256_castpd_si256(_mm256_andnot_pd(zero, fin));
            bv[h] = b;
            kv[h] = keep;
            if (!o->hist) {
                __m256i key = _mm256_xor_si256(b, _mm256_or_si256(_mm256_cmpgt_epi64(_mm256_setzero_si256(), b), top));
                unsigned m = WIDE[_mm256_movemask_pd(_mm256_castsi256_pd(keep))];
                _mm256_storeu_si256((__m256i *)((uint64_t *)o->keys + o->nkeys), left_pack(key, m));
                o->nkeys += (uint64_t)__builtin_popcount(m) / 2;
            }
        }
        if (o->hist) { /* the high halves of 8 values (lanes in another order: junk bins still differ) */
            __m256i hi = _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(bv[0]), _mm256_castsi256_ps(bv[1]), _MM_SHUFFLE(3, 1, 3, 1)));
            __m256i keep = _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(kv[0]), _mm256_castsi256_ps(kv[1]), _MM_SHUFFLE(3, 1, 3, 1)));
            __m256i md = _mm256_sub_epi32(_mm256_srl_epi32(_mm256_and_si256(hi, abs32), dsh), dlo);
            md = _mm256_min_epi32(_mm256_max_epi32(md, _mm256_setzero_si256()), mdmax);
            __m256i d = _mm256_xor_si256(md, _mm256_xor_si256(_mm256_and_si256(_mm256_srai_epi32(hi, 31), lo16), bit15));
            sink8(o, d, 0, keep);
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
TGT void pgfp_chunk_avx2(const void *src, int dtype, uint32_t len, uint64_t start, partial *p, sink *out) {
    uint32_t hs[SUB / 8];
    sink so = *out, *o = &so; /* a local copy: the histogram stores cannot alias it */
    group_hashes(start >> 3, len >> 3, hs);
    if (dtype == PGFP_F64) {
        chunk_f64(src, len, p, hs, o);
        out->nkeys = o->nkeys;
        return;
    }
    acc A;
    acc_init(&A, p);
    const __m256i top = _mm256_set1_epi32((int)0x80000000u);
    const __m256 big = _mm256_set1_ps((float)(dtype == PGFP_F32 ? F32_MAX : dtype == PGFP_F16 ? F16_MAX : BF16_MAX));
    if (dtype == PGFP_F32) {
        for (uint32_t i = 0; i < len; i += 8) {
            if (!(i & 15)) _mm_prefetch((const char *)((const float *)src + i) + PF, _MM_HINT_T0);
            __m256i b = _mm256_loadu_si256((const __m256i *)((const float *)src + i));
            __m256i key = _mm256_xor_si256(b, _mm256_or_si256(_mm256_srai_epi32(b, 31), top));
            step_ps(&A, _mm256_castsi256_ps(b), key, 16, hs[i >> 3], p->sk, o, big);
        }
    } else {
        const __m256i lo16 = _mm256_set1_epi32(0xffff), bit15 = _mm256_set1_epi32(0x8000);
        for (uint32_t i = 0; i < len; i += 8) {
            if (!(i & 31)) _mm_prefetch((const char *)((const uint16_t *)src + i) + PF, _MM_HINT_T0);
            __m128i raw = _mm_loadu_si128((const __m128i *)((const uint16_t *)src + i));
            __m256i b = _mm256_cvtepu16_epi32(raw);
            __m256 x = dtype == PGFP_F16 ? _mm256_cvtph_ps(raw) : _mm256_castsi256_ps(_mm256_slli_epi32(b, 16));
            __m256i neg = _mm256_srai_epi32(_mm256_slli_epi32(b, 16), 31);
            __m256i key = _mm256_xor_si256(b, _mm256_or_si256(_mm256_and_si256(neg, lo16), bit15));
            step_ps(&A, x, key, 0, hs[i >> 3], p->sk, o, big);
        }
    }
    acc_store(&A, p);
    out->nkeys = o->nkeys;
}

/* Candidates of a quantile pass (see matcher in pgfp_internal.h): raw bit prefixes,
 * matching lane indices left-packed into out without a branch (out has 8 spare slots). */
#define EMIT(M, BASE) do {                                                                        \
        unsigned m_ = (M);                                                                        \
        _mm256_storeu_si256((__m256i *)(out + cnt), left_pack(_mm256_add_epi32(lane, _mm256_set1_epi32((int)(BASE))), m_)); \
        cnt += (uint32_t)__builtin_popcount(m_);                                                  \
    } while (0)

/* float32 prefixes through the perfect hash: bucket -> the one prefix it accepts */
#define PROBE32(P) ({                                                                             \
        __m256i b_ = _mm256_srli_epi32(_mm256_mullo_epi32((P), mul), 28);                              \
        __m256 v_ = _mm256_blendv_ps(_mm256_castsi256_ps(_mm256_permutevar8x32_epi32(lo, b_)),          \
                                     _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(hi, b_)),          \
                                     _mm256_castsi256_ps(_mm256_slli_epi32(b_, 28)));                   \
        _mm256_cmpeq_epi32((P), _mm256_castps_si256(v_)); })

TGT static uint32_t match_f32(const uint32_t *u, uint32_t len, const matcher *mt, uint32_t *out, uint64_t *hcount) {
    uint32_t cnt = 0, i = 0;
    const __m128i sh = _mm_cvtsi32_si128(mt->shift);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const int nr = mt->nraw, nh = mt->nheavy;
    __m256i g[NG], hv[NG], hc[NG];
    for (int k = 0; k < nr; k++) g[k] = _mm256_set1_epi32((int)(uint32_t)mt->raw[k]);
    for (int h = 0; h < nh; h++) { hv[h] = _mm256_set1_epi32((int)(uint32_t)mt->hraw[h]); hc[h] = _mm256_setzero_si256(); }
    if (mt->hashed && nh == 0) { /* the common case: 16 elements a step, no compare chain */
        const __m256i mul = _mm256_set1_epi32((int)mt->mul);
        const __m256i lo = _mm256_loadu_si256((const __m256i *)mt->val);
        const __m256i hi = _mm256_loadu_si256((const __m256i *)(mt->val + 8));
        for (; i + 16 <= len; i += 16) {
            _mm_prefetch((const char *)(u + i) + PF, _MM_HINT_T0);
            __m256i p0 = _mm256_srl_epi32(_mm256_loadu_si256((const __m256i *)(u + i)), sh);
            __m256i p1 = _mm256_srl_epi32(_mm256_loadu_si256((const __m256i *)(u + i + 8)), sh);
            EMIT((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(PROBE32(p0))), i);
            EMIT((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(PROBE32(p1))), i + 8);
        }
    }
    for (; i + 8 <= len; i += 8) {
        if (!(i & 15)) _mm_prefetch((const char *)(u + i) + PF, _MM_HINT_T0);
        __m256i r = _mm256_loadu_si256((const __m256i *)(u + i)), pre = _mm256_srl_epi32(r, sh);
        __m256i m = _mm256_cmpeq_epi32(pre, g[0]);
        for (int k = 1; k < nr; k++) m = _mm256_or_si256(m, _mm256_cmpeq_epi32(pre, g[k]));
        for (int h = 0; h < nh; h++) {
            __m256i e = _mm256_cmpeq_epi32(r, hv[h]);
            hc[h] = _mm256_sub_epi32(hc[h], e);
            m = _mm256_andnot_si256(e, m);
        }
        EMIT((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m)), i);
    }
    for (; i < len; i++) cnt = match_one(u[i], i, mt, out, cnt, hcount);
    for (int h = 0; h < nh; h++) hcount[h] += hsum32(&hc[h]);
    return cnt;
}

TGT static uint32_t match_f64(const uint64_t *u, uint32_t len, const matcher *mt, uint32_t *out, uint64_t *hcount) {
    uint32_t cnt = 0, i = 0;
    const __m128i sh = _mm_cvtsi32_si128(mt->shift);
    const int nr = mt->nraw, nh = mt->nheavy;
    __m256i g[NG], hv[NG], hc[NG];
    for (int k = 0; k < nr; k++) g[k] = _mm256_set1_epi64x((long long)mt->raw[k]);
    for (int h = 0; h < nh; h++) { hv[h] = _mm256_set1_epi64x((long long)mt->hraw[h]); hc[h] = _mm256_setzero_si256(); }
    if (mt->hashed && nh == 0) { /* prefixes fit 32 bits: pack 8 of them, one hash lookup */
        const __m256i mul = _mm256_set1_epi32((int)mt->mul);
        const __m256i lo = _mm256_loadu_si256((const __m256i *)mt->val);
        const __m256i hi = _mm256_loadu_si256((const __m256i *)(mt->val + 8));
        const __m256i lane = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7); /* the packing's order */
        for (; i + 8 <= len; i += 8) {
            _mm_prefetch((const char *)(u + i) + PF, _MM_HINT_T0);
            __m256 p0 = _mm256_castsi256_ps(_mm256_srl_epi64(_mm256_loadu_si256((const __m256i *)(u + i)), sh));
            __m256 p1 = _mm256_castsi256_ps(_mm256_srl_epi64(_mm256_loadu_si256((const __m256i *)(u + i + 4)), sh));
            __m256i p = _mm256_castps_si256(_mm256_shuffle_ps(p0, p1, _MM_SHUFFLE(2, 0, 2, 0)));
            EMIT((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(PROBE32(p))), i);
        }
    }
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (; i + 8 <= len; i += 8) {
        _mm_prefetch((const char *)(u + i) + PF, _MM_HINT_T0);
        __m256i r0 = _mm256_loadu_si256((const __m256i *)(u + i)), r1 = _mm256_loadu_si256((const __m256i *)(u + i + 4));
        __m256i p0 = _mm256_srl_epi64(r0, sh), p1 = _mm256_srl_epi64(r1, sh);
        __m256i m0 = _mm256_cmpeq_epi64(p0, g[0]), m1 = _mm256_cmpeq_epi64(p1, g[0]);
        for (int k = 1; k < nr; k++) {
            m0 = _mm256_or_si256(m0, _mm256_cmpeq_epi64(p0, g[k]));
            m1 = _mm256_or_si256(m1, _mm256_cmpeq_epi64(p1, g[k]));
        }
        for (int h = 0; h < nh; h++) {
            __m256i e0 = _mm256_cmpeq_epi64(r0, hv[h]), e1 = _mm256_cmpeq_epi64(r1, hv[h]);
            hc[h] = _mm256_sub_epi64(_mm256_sub_epi64(hc[h], e0), e1);
            m0 = _mm256_andnot_si256(e0, m0);
            m1 = _mm256_andnot_si256(e1, m1);
        }
        EMIT((unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(m0)) | (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(m1)) << 4, i);
    }
    for (; i < len; i++) cnt = match_one(u[i], i, mt, out, cnt, hcount);
    for (int h = 0; h < nh; h++) {
        uint64_t t[4];
        memcpy(t, &hc[h], sizeof t);
        hcount[h] += t[0] + t[1] + t[2] + t[3];
    }
    return cnt;
}
#undef PROBE32
#undef EMIT

TGT uint32_t pgfp_match_avx2(const void *src, int dtype, uint32_t len, const matcher *mt, uint32_t *out, uint64_t *hcount) {
    return dtype == PGFP_F32 ? match_f32(src, len, mt, out, hcount) : match_f64(src, len, mt, out, hcount);
}
#endif
