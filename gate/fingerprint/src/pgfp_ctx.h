/* State of one fingerprint call, shared by the driver (pgfp.c) and the quantile planner
 * (pgfp_plan.c). The kernel's files are parts of one native module, built together (_build.py):
 * the constants and types they share live in pgfp_internal.h and here, and each part calls the
 * others' entry points (the driver the planner and the path chooser, the path chooser the AVX2
 * kernels). A drawing that ties files by the names they use sees those ties as a circle; the
 * headers are the split, and nothing outside gate/fingerprint/ includes them. */
#ifndef PGFP_CTX_H
#define PGFP_CTX_H

#include "pgfp_internal.h"

#if !defined(_WIN32)
#include <pthread.h>
#define PGFP_HAVE_THREADS 1
#endif

#define STACK_KEYS 512 /* keys of inputs this small live on the stack */
#define SEL_BYTES (sizeof(uint32_t) * 8192 + 4096) /* radix select's 12-bit level */
#define HSTRIDE (HBINS + 2 * LANES) /* one thread's pass-1 histogram: digits, then junk bins */
/* One group's refinement histogram. Not RBINS: groups that share a digit (data whose low
 * mantissa bits are zero) would then increment counters a multiple of 4 KiB apart, which
 * Intel cores take for a dependence on the earlier store (4K aliasing). */
#define RSTRIDE (RBINS + 16)

typedef void (*chunk_fn)(const void *, int, uint32_t, uint64_t, partial *, sink *);
typedef uint32_t (*match_fn)(const void *, int, uint32_t, const matcher *, uint32_t *, uint64_t *);

/* ---- shared state of one call ---- */
typedef struct {
    const char *data;
    uint64_t n, nblocks;
    int dtype, esize, T, W, small, vec; /* vec: a vector path (AVX2, NEON) runs */
    uint32_t hdig;           /* pass 1's dominant digit (see sink), ~0u if none */
    uint64_t kmin, kmax;     /* keys of -max and +max: ranked keys lie strictly between (ranked) */
    int dsh;                 /* float64's digit: dig64(bits, dsh, dlo) */
    uint32_t dlo;
    chunk_fn chunk;
    match_fn match;
    partial *slots;          /* block partials of a window (&tot itself for one block) */
    uint32_t *hist;          /* T x HSTRIDE, pass 1 */
    uint32_t *rhist;         /* T x nq x RSTRIDE, refinement passes */
    uint64_t *hist64, *rhist64; /* overflow accumulators, only when n >= FLUSH */
    int nq;
    void *buf, *tmp;         /* collected keys, radix-select scratch (large inputs: */
    uint32_t *sel;           /* allocated for the collection); 12-bit radix-select level */
    uint64_t bufn;
    /* quantile plan, written by thread 0 between barriers */
    int cmd;                 /* 0 done, 1 refine, 2 collect, 3 pass 1 again (whole range) */
    int ng, shift, nbits;    /* groups; key >> shift is the prefix; refine digit bits */
    unsigned char *tab;      /* HBINS flags: top-16 digit of some group prefix */
    int err;                 /* -2: scratch memory could not be allocated */
#ifdef PGFP_HAVE_THREADS
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int waiting, gen, go;
#endif
    /* Not zeroed at the start of a call (small tensors pay for every byte): each member
     * below is written before it is read. */
    partial tot;
    uint64_t gprefix[NG];
    matcher mt;              /* what the next quantile pass looks for */
    uint64_t gbase[NG];      /* a collection keeps each group in its own region of buf, */
    uint64_t goff[64][NG];   /* each thread writing from goff[t][g] (T <= 64) */
    int hgrp[NG];            /* heavy value h (mt.hraw[h]): its group and its key */
    uint64_t hkey[NG];
    uint64_t hcnt[64][NG];   /* per-thread counts of each heavy value in the last pass */
} ctx;

/* Quantile planning state (thread 0 only). A wanted rank is first mapped to a rank among
 * the non-zero finite keys (the ones pass 1 histograms or collects), or resolved as zero. */
typedef struct {
    int nq;
    int live[PGFP_NQ_MAX];        /* 0: resolved (its value is in q[k]) */
    uint64_t rank[PGFP_NQ_MAX];   /* rank inside the current prefix group */
    uint64_t prefix[PGFP_NQ_MAX]; /* known top bits of the key */
    uint64_t count[PGFP_NQ_MAX];  /* elements with that prefix */
    int grp[PGFP_NQ_MAX];
    uint64_t tcount[64][NG];      /* per-thread counts of each group */
    int bits;                     /* known key bits */
} plan;

static inline double key_to_value(uint64_t key, int dtype) {
    switch (dtype) {
    case PGFP_F16: { uint16_t b = (key & 0x8000u) ? (uint16_t)(key & 0x7fffu) : (uint16_t)~key; return f16_to_d(b) + 0.0; }
    case PGFP_BF16: { uint16_t b = (key & 0x8000u) ? (uint16_t)(key & 0x7fffu) : (uint16_t)~key; return bf16_to_d(b) + 0.0; }
    case PGFP_F32: { uint32_t b = (key & 0x80000000u) ? (uint32_t)(key & 0x7fffffffu) : (uint32_t)~key; return f32_to_d(b) + 0.0; }
    default: { uint64_t b = (key >> 63) ? (key & 0x7fffffffffffffffull) : ~key; return f64_to_d(b) + 0.0; }
    }
}
static inline int key_bits(int dtype) { return dtype == PGFP_F64 ? 64 : dtype == PGFP_F32 ? 32 : 16; }
static inline int key_size(int dtype) { return dtype == PGFP_F64 ? 8 : 4; } /* bytes of a collected key */

static inline uint64_t load_key(const ctx *c, uint64_t i) {
    switch (c->dtype) {
    case PGFP_F16: case PGFP_BF16: return key16(((const uint16_t *)c->data)[i]);
    case PGFP_F32: return key32(((const uint32_t *)c->data)[i]);
    default: return key64(((const uint64_t *)c->data)[i]);
    }
}

/* Keys of -max and +max (counted as -Inf and +Inf, see nonfin_f32): a quantile pass may meet them
 * in a group of the largest finite values, and skips them as it skips zeros. */
static inline void key_limits(int dtype, uint64_t *kmin, uint64_t *kmax) {
    switch (dtype) {
    case PGFP_F16: *kmin = key16(0x8000u | F16_MAXB); *kmax = key16(F16_MAXB); break;
    case PGFP_BF16: *kmin = key16(0x8000u | BF16_MAXB); *kmax = key16(BF16_MAXB); break;
    case PGFP_F32: *kmin = key32(0x80000000u | F32_MAXB); *kmax = key32(F32_MAXB); break;
    default: *kmin = key64(0x8000000000000000ull | F64_MAXB); *kmax = key64(F64_MAXB); break;
    }
}
/* Whether a quantile ranks the element of this key: neither zero (zkey) nor +-max. */
static inline int ranked(const ctx *c, uint64_t key, uint64_t zkey) {
    return key != zkey && key > c->kmin && key < c->kmax;
}

static inline uint64_t hget(const uint32_t *h32, const uint64_t *h64, uint64_t i) {
    return h32[i] + (h64 ? h64[i] : 0);
}

/* pgfp_path.c: the code path for this CPU (1 avx2, 2 neon, 0 portable). */
int pgfp_choose_path(chunk_fn *chunk, match_fn *match);

/* Timing builds (-DPGFP_TIMING): the wall time of each pass of the calling thread's last
 * call, added up lap by lap by run_main (pgfp.c), read back by pgfp_timing (pgfp_path.c). */
#ifdef PGFP_TIMING
extern __thread double pgfp_tm[PGFP_TIMING_FIELDS];
double pgfp_tm_now(void);
#define TM_START() double tm0_ = pgfp_tm_now(); memset(pgfp_tm, 0, sizeof pgfp_tm)
#define TM_LAP(k) do { double t_ = pgfp_tm_now(); pgfp_tm[k] += t_ - tm0_; tm0_ = t_; } while (0)
#define TM_COUNT(k) (pgfp_tm[k] += 1)
#else
#define TM_START() (void)0
#define TM_LAP(k) (void)0
#define TM_COUNT(k) (void)0
#endif

/* pgfp_plan.c, called by thread 0 between barriers. q receives resolved quantiles. */
int pgfp_plan_first(ctx *c, plan *pl, const double *qs, uint64_t m, double *q); /* -1: an edge bin */
int pgfp_plan_next(ctx *c, plan *pl);                 /* 0 done, 1 refine, 2 collect, -1 no memory */
void pgfp_plan_after_refine(ctx *c, plan *pl, double *q);
void pgfp_select_groups(ctx *c, plan *pl, double *q); /* after a collection */
void pgfp_select_small(ctx *c, plan *pl, const double *qs, uint64_t m, double *q);

#endif
