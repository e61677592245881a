/* Portable code path of the fingerprint kernel: per-chunk stats, sketch and keys,
 * element by element in the order the NumPy specification defines. */
#include <string.h>

#include "pgfp_internal.h"

/* Stats over one inner chunk: lane sums continue in p (the chunk starts at a lane-0
 * offset), vv receives the canonical finite values (non-finite -> +0.0). Only the sums
 * need their lane and order; counts and min/max are plain running values. BIG: the
 * dtype's largest finite value, which counts as Inf (see nonfin_f32). */
#define STAT_ONE(V, J, I, BIG)                                                          \
    do {                                                                                \
        double v_ = (V);                                                                \
        if (fabs(v_) < (BIG)) { /* finite */                                            \
            double w_ = v_ + 0.0;                                                       \
            cz += v_ == 0.0;                                                            \
            mn = v_ < mn ? v_ : mn;                                                     \
            mx = v_ > mx ? v_ : mx;                                                     \
            s[J] += w_;                                                                 \
            q[J] += w_ * w_;                                                            \
            a[J] += fabs(w_);                                                           \
            vv[I] = w_;                                                                 \
        } else {                                                                        \
            cn += v_ != v_;                                                             \
            cp += v_ >= (BIG);                                                          \
            cm += v_ <= -(BIG);                                                         \
            vv[I] = 0.0;                                                                \
        }                                                                               \
    } while (0)
#define DEFINE_STATS(NAME, T, CONV, BIG)                                                \
    static void NAME(const T *src, uint32_t len, double *vv, partial *p) {          \
        double s[LANES], q[LANES], a[LANES], mn = INFINITY, mx = -INFINITY;             \
        uint64_t cn = 0, cp = 0, cm = 0, cz = 0;                                        \
        uint32_t i = 0;                                                                 \
        for (int j = 0; j < LANES; j++) { s[j] = p->s[j]; q[j] = p->q[j]; a[j] = p->a[j]; } \
        for (; i + LANES <= len; i += LANES) /* whole groups: lanes in registers */    \
            for (int j = 0; j < LANES; j++) STAT_ONE(CONV(src[i + j]), j, i + j, BIG);  \
        for (int j = 0; i < len; i++, j++) STAT_ONE(CONV(src[i]), j, i, BIG);           \
        for (int j = 0; j < LANES; j++) { p->s[j] = s[j]; p->q[j] = q[j]; p->a[j] = a[j]; } \
        p->nan += cn; p->pinf += cp; p->ninf += cm; p->zero += cz;                      \
        if (mn < p->mn) p->mn = mn;                                                     \
        if (mx > p->mx) p->mx = mx;                                                     \
    }

#define CONV_F16(x) f16_to_d(x)
#define CONV_BF16(x) bf16_to_d(x)
#define CONV_F32(x) ((double)(x))
#define CONV_F64(x) (x)
DEFINE_STATS(stats_f16, uint16_t, CONV_F16, F16_MAX)
DEFINE_STATS(stats_bf16, uint16_t, CONV_BF16, BF16_MAX)
DEFINE_STATS(stats_f32, float, CONV_F32, F32_MAX)
DEFINE_STATS(stats_f64, double, CONV_F64, F64_MAX)

/* CountSketch of one inner chunk starting at flat index start (a multiple of 8; the
 * chunk never crosses a 2^35 boundary, so hi32 of the group index is constant): one hash
 * per group of 8. */
static void sketch_chunk(const double *vv, uint32_t len, uint64_t start, double *sk) {
    uint64_t g0 = start >> 3;
    if (NO_SKETCH) return;
    uint32_t k = mix32((uint32_t)(g0 >> 32) ^ SEED), lo = (uint32_t)g0;
    for (uint32_t i = 0; i < len; i += 8) {
        uint32_t h = mix32((lo + (i >> 3)) ^ k), x = (h >> 24) & 7u, n = len - i < 8 ? len - i : 8;
        double *row = sk + 8 * (h >> 27);
        for (uint32_t j = 0; j < n; j++) {
            du v;
            v.d = vv[i + j];
            v.u ^= (uint64_t)((h >> (16 + j)) & 1u) << 63;
            row[j ^ x] += v.d;
        }
    }
}

/* Keys of the finite non-zero elements into the sink (see sink in pgfp_internal.h). */
#define DEFINE_SINK(NAME, T, KT, SKIP, KEY, DIG)                                        \
    static void NAME(const T *u, uint32_t len, sink *o) {                               \
        if (o->hist) {                                                                  \
            for (uint32_t i = 0; i < len && !NO_HIST; i++)                              \
                o->hist[SKIP(u[i]) ? HBINS + (i & (LANES - 1)) : DIG(u[i], KEY)]++;         \
        } else {                                                                        \
            KT *k = o->keys;                                                            \
            uint64_t pos = o->nkeys;                                                    \
            for (uint32_t i = 0; i < len; i++) {                                        \
                k[pos] = KEY(u[i]);                                                     \
                pos += !SKIP(u[i]);                                                     \
            }                                                                           \
            o->nkeys = pos;                                                             \
        }                                                                               \
    }
#define SKIP16(b) (nonfin_f16(b) || ((b) & 0x7fffu) == 0)
#define SKIPB16(b) (nonfin_bf16(b) || ((b) & 0x7fffu) == 0)
#define SKIP32(b) (nonfin_f32(b) || ((b) & 0x7fffffffu) == 0)
#define SKIP64(b) (nonfin_f64(b) || ((b) & 0x7fffffffffffffffull) == 0)
#define DIG16(b, KEY) KEY(b)
#define DIG32(b, KEY) (KEY(b) >> 16)
#define DIG64(b, KEY) dig64(b, o->dsh, o->dlo)
DEFINE_SINK(sink_f16, uint16_t, uint32_t, SKIP16, key16, DIG16)
DEFINE_SINK(sink_bf16, uint16_t, uint32_t, SKIPB16, key16, DIG16)
DEFINE_SINK(sink_f32, uint32_t, uint32_t, SKIP32, key32, DIG32)
DEFINE_SINK(sink_f64, uint64_t, uint64_t, SKIP64, key64, DIG64)

void pgfp_chunk_scalar(const void *src, int dtype, uint32_t len, uint64_t start, partial *p, sink *o) {
    double vv[SUB];
    switch (dtype) {
    case PGFP_F16: stats_f16(src, len, vv, p); sink_f16(src, len, o); break;
    case PGFP_BF16: stats_bf16(src, len, vv, p); sink_bf16(src, len, o); break;
    case PGFP_F32: stats_f32(src, len, vv, p); sink_f32(src, len, o); break;
    default: stats_f64(src, len, vv, p); sink_f64(src, len, o); break;
    }
    sketch_chunk(vv, len, start, p->sk);
}

/* Indices (within the chunk) of elements whose key prefix is one of the groups. Group
 * prefixes keep the whole exponent, so NaN and Inf never match (+-max may: the caller skips
 * it, as it skips zeros). Heavy values are emitted like any member (the portable path is
 * correct, not fast, on such data). */
uint32_t pgfp_match_scalar(const void *src, int dtype, uint32_t len, const matcher *mt, uint32_t *out, uint64_t *hcount) {
    (void)hcount;
    int shift = mt->shift, ng = mt->ng;
    const uint64_t *gp = mt->gp;
    const unsigned char *tab = mt->tab;
    uint32_t cnt = 0;
    for (uint32_t i = 0; i < len; i++) {
        uint64_t key = dtype == PGFP_F32 ? key32(((const uint32_t *)src)[i]) : key64(((const uint64_t *)src)[i]);
        if (!tab[key >> (dtype == PGFP_F32 ? 16 : 48)]) continue;
        for (int g = 0; g < ng; g++)
            if ((key >> shift) == gp[g]) { out[cnt++] = i; break; }
    }
    return cnt;
}
