/* Internals shared by the portable, AVX2 and NEON code paths of the fingerprint kernel. */
#ifndef PGFP_INTERNAL_H
#define PGFP_INTERNAL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "pgfp.h"

#define BLOCK 65536u
#define LANES 8
#define SUB 1024u            /* inner chunk: multiple of LANES, divides BLOCK */
#define HBINS 65536u         /* top-digit histogram, plus 2 x LANES junk bins (see sink) */
#define SMALL (1u << 13)     /* n <= SMALL: collect every finite non-zero key in pass 1 */
#define CAP (1u << 19)       /* collect candidates once at most CAP remain */
#define RBITS 16
#define FLUSH (1ull << 31)   /* 32-bit histogram counters spill to 64-bit ones this often */
#define RBINS (1u << RBITS)
#define NG PGFP_NQ_MAX       /* max distinct candidate groups */
#define WPT 16               /* blocks per thread per window */
#define SEED 0x2545F491u

typedef union { double d; uint64_t u; } du;
typedef union { float f; uint32_t u; } fu;

static inline uint32_t mix32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

/* ---- exact conversions to double ---- */
static inline double f16_to_d(uint16_t h) {
    uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;
    if (e == 0x1f) v = m ? NAN : INFINITY;
    else if (e == 0) v = (double)m * 0x1p-24;
    else { du x; x.u = ((uint64_t)(e + 1008) << 52) | ((uint64_t)m << 42); v = x.d; }
    return (h & 0x8000) ? -v : v;
}
static inline double bf16_to_d(uint16_t b) { fu x; x.u = (uint32_t)b << 16; return (double)x.f; }
static inline double f32_to_d(uint32_t b) { fu x; x.u = b; return (double)x.f; }
static inline double f64_to_d(uint64_t b) { du x; x.u = b; return x.d; }

/* ---- order-preserving keys (finite values only; -0 maps to +0) ---- */
static inline uint32_t key16(uint16_t b) {
    uint32_t k = b ^ (((uint32_t)(-(int32_t)(b >> 15)) & 0xffffu) | 0x8000u);
    return k + (k == 0x7fffu);
}
static inline uint32_t key32(uint32_t b) {
    uint32_t k = b ^ ((uint32_t)((int32_t)b >> 31) | 0x80000000u);
    return k + (k == 0x7fffffffu);
}
static inline uint64_t key64(uint64_t b) {
    uint64_t k = b ^ ((uint64_t)((int64_t)b >> 63) | 0x8000000000000000ull);
    return k + (k == 0x7fffffffffffffffull);
}
/* float64's pass-1 digit. Its key's top 16 bits hold 4 mantissa bits, so a wanted rank's
 * bin would hold ~1/16 of an octave: a refinement pass each call, and counters that the
 * histogram increments back to back. Instead the digit is the sign and the magnitude's
 * exponent and top 20 - dsh mantissa bits (t, 32 - dsh - 1 bits), shifted into a window of
 * 32766 steps from dlo; magnitudes below and above it land in edge bins (md 0 and 32767).
 * Monotone in the value, so the histogram ranks; an in-window bin is a key prefix of
 * 32 - dsh bits (see pgfp_plan_first). dsh = 16, dlo = 0 is the whole range with no edges
 * (t then has 15 bits): the fallback when a wanted rank lands in an edge bin. */
#define DSH_FINE 13
#define DSH_WHOLE 16
static inline uint32_t dig64(uint64_t b, int dsh, uint32_t dlo) {
    uint32_t hi = (uint32_t)(b >> 32), t = (hi & 0x7fffffffu) >> dsh;
    int32_t md = (int32_t)t - (int32_t)dlo + 1;
    md = md < 0 ? 0 : md > 32767 ? 32767 : md;
    return (uint32_t)md ^ ((hi >> 31) ? 0x7fffu : 0x8000u);
}
static inline int dig64_edge(uint32_t d) { return (d & 0x7fffu) == 0 || (d & 0x7fffu) == 0x7fffu; }

/* Not finite in the fingerprint's sense: NaN, +-Inf, and +-max (the largest finite magnitude of the
 * dtype, a mask's sentinel, counted as +-Inf): the magnitude's bits at least max's, one below Inf's. */
#define F16_MAXB 0x7bffu
#define BF16_MAXB 0x7f7fu
#define F32_MAXB 0x7f7fffffu
#define F64_MAXB 0x7fefffffffffffffull
#define F16_MAX 65504.0
#define BF16_MAX 3.3895313892515355e38
#define F32_MAX 3.4028234663852886e38
#define F64_MAX 1.7976931348623157e308
static inline int nonfin_f16(uint16_t b) { return (b & 0x7fffu) >= F16_MAXB; }
static inline int nonfin_bf16(uint16_t b) { return (b & 0x7fffu) >= BF16_MAXB; }
static inline int nonfin_f32(uint32_t b) { return (b & 0x7fffffffu) >= F32_MAXB; }
static inline int nonfin_f64(uint64_t b) { return (b & 0x7fffffffffffffffull) >= F64_MAXB; }

/* ---- per-block partial results ----
 * Cache-line aligned: a vector path adds a sketch row as 32- or 16-byte halves, which must
 * not straddle two lines (a split load and store per group of 8), and the partials of
 * neighbouring blocks, written by different threads, must not share a line. */
#if defined(__GNUC__) || defined(__clang__)
#define PGFP_ALIGN64 __attribute__((aligned(64)))
#elif defined(_MSC_VER)
#define PGFP_ALIGN64 __declspec(align(64))
#else
#define PGFP_ALIGN64
#endif
typedef struct PGFP_ALIGN64 {
    double s[LANES], q[LANES], a[LANES];
    double sk[PGFP_WIDTH];
    uint64_t nan, pinf, ninf, zero;
    double mn, mx;
} partial;

static inline void partial_init(partial *p) {
    memset(p, 0, sizeof *p);
    p->mn = INFINITY;
    p->mx = -INFINITY;
}

/* Where pass 1 sends the order-preserving keys of the finite non-zero elements. Zeros are
 * counted, not ranked: their rank range is known from the count of negative values, so
 * a tensor that is half zeros (ReLU) puts no repeated value into the quantile machinery.
 * hist (large inputs): histogram of a 16-bit digit (the key's top 16 bits; float64: dig64).
 * Increments of one counter depend on each other through memory, so a value that fills a large share of the data would make
 * the pass wait on one chain: zero and non-finite elements of lane j go to the junk bin
 * HBINS + j, and elements whose digit is hdig (a digit found dominant in a sample before
 * the pass; ~0u if none) to HBINS + LANES + j, which the driver adds to hist[hdig]
 * afterwards. The portable path sends hdig's elements to hist[hdig] directly.
 * keys (small inputs): the keys themselves, appended at keys[nkeys...] (the vector path
 * writes up to 8 slots past the end: the buffer has LANES spare slots). */
typedef struct {
    uint32_t *hist;
    uint32_t hdig;
    void *keys;
    uint64_t nkeys;
    int dsh;       /* float64's digit (dig64) */
    uint32_t dlo;
} sink;

/* What a refinement or collection pass looks for: elements whose key prefix (key >> shift)
 * is one of ng group prefixes gp. The vector path compares raw bit prefixes instead (the
 * key transform is a bijection on prefixes, so no per-element transform is needed); raw
 * holds them. Zeros never belong to a group (the caller skips their key).
 * For prefixes of at most 32 bits (float32; float64 until 32 bits are known), a
 * multiplicative perfect hash sends each raw prefix to its own one of 16 buckets (val:
 * the prefix a bucket accepts, or ~0u), so one lookup replaces ng compares.
 * Heavy values (refinement passes only): a group dominated by one value (a constant, a
 * saturation level such as ReLU6's 6.0, a -1e9 attention mask) would send most of the data
 * through the per-candidate path. The vector matcher counts the elements equal to such a
 * value (raw bits hraw[h]) into hcount[h] instead of emitting them; the caller adds them
 * back into its histogram in one step. */
typedef struct {
    int shift, ng, nraw, hashed, ghashed, nheavy;
    uint64_t gp[NG], raw[NG], hraw[NG];
    uint32_t mul, val[16];
    uint64_t gmul, gkey[32];  /* group of a candidate: slot (prefix * gmul) >> 59 */
    unsigned char gid[32];
    const unsigned char *tab; /* HBINS flags: top-16 key digit of some group (scalar path) */
} matcher;

/* One inner chunk (len <= SUB elements from flat index start, a multiple of 8): lane
 * sums, counts, min/max and sketch into p; keys or digits into o. */
void pgfp_chunk_scalar(const void *src, int dtype, uint32_t len, uint64_t start, partial *p, sink *o);
/* Candidates of a quantile pass, element by element (see matcher; heavy values are emitted). */
uint32_t pgfp_match_scalar(const void *src, int dtype, uint32_t len, const matcher *mt, uint32_t *out, uint64_t *hcount);
/* Radix select: out[k] = the rk[k]-th smallest of a[0..n) (rk ascending); a, tmp are
 * clobbered; hi = key bits; sc = NULL or 8192 uint32 + 4096 bytes of scratch. */
void pgfp_rselect32(uint32_t *a, uint32_t *tmp, uint64_t n, int hi, const uint64_t *rk, int nr, uint32_t *out, uint32_t *sc);
void pgfp_rselect64(uint64_t *a, uint64_t *tmp, uint64_t n, int hi, const uint64_t *rk, int nr, uint64_t *out, uint32_t *sc);

/* An element a vector matcher did not cover (raw bits): counted if heavy, emitted if a group's. */
static inline uint32_t match_one(uint64_t raw, uint32_t i, const matcher *mt, uint32_t *out, uint32_t cnt, uint64_t *hcount) {
    for (int h = 0; h < mt->nheavy; h++)
        if (raw == mt->hraw[h]) { hcount[h]++; return cnt; }
    for (int k = 0; k < mt->nraw; k++)
        if (raw >> mt->shift == mt->raw[k]) { out[cnt++] = i; break; }
    return cnt;
}

/* Timing builds only (-DPGFP_TIMING_NO_HIST / _NO_SKETCH, scripts/bench_fingerprint.py): the
 * fused pass leaves out its histogram or its sketch, so that a benchmark can tell what each
 * costs. The results are then wrong (a build without the histogram skips the quantiles). */
#ifdef PGFP_TIMING_NO_HIST
#define NO_HIST 1
#else
#define NO_HIST 0
#endif
#ifdef PGFP_TIMING_NO_SKETCH
#define NO_SKETCH 1
#else
#define NO_SKETCH 0
#endif

/* Vector paths. PGFP_NO_SIMD builds the portable path alone (PGFP_NO_AVX2 / PGFP_NO_NEON
 * leave out one). Both vector matchers return the indices (within the chunk) of elements
 * that may belong to a group: a superset (-0 shares the raw prefix of tiny negative
 * numbers, +0 that of tiny positive ones); the caller checks each key. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(PGFP_NO_AVX2) && !defined(PGFP_NO_SIMD)
#define PGFP_X86 1
void pgfp_chunk_avx2(const void *src, int dtype, uint32_t len, uint64_t start, partial *p, sink *o);
int pgfp_cpu_has_avx2(void);
uint32_t pgfp_match_avx2(const void *src, int dtype, uint32_t len, const matcher *mt, uint32_t *out, uint64_t *hcount);
#endif

/* NEON is part of the aarch64 base architecture: chosen at compile time (little-endian). */
#if defined(__aarch64__) && defined(__ARM_NEON) && !defined(__ARM_BIG_ENDIAN) && !defined(PGFP_NO_NEON) && !defined(PGFP_NO_SIMD)
#define PGFP_NEON 1
void pgfp_chunk_neon(const void *src, int dtype, uint32_t len, uint64_t start, partial *p, sink *o);
uint32_t pgfp_match_neon(const void *src, int dtype, uint32_t len, const matcher *mt, uint32_t *out, uint64_t *hcount);
#endif

#endif
