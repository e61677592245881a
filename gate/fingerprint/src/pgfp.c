/* parity-gate fingerprint kernel (C99). Reproduces gate/fingerprint/reference.py bit for
 * bit; read that docstring first. Build without -ffast-math and with -ffp-contract=off:
 * the summation order and the rounding of v*v are part of the specification.
 *
 * This file is the driver. One fused pass (pgfp_chunk_avx2 / pgfp_chunk_scalar) computes
 * counts, min/max, the lane sums, the sketch and a 16-bit histogram of order-preserving
 * integer keys; quantiles are then finished by refinement passes over the data (16-bit
 * digits, only for the <= 9 bins holding a wanted rank) and, once at most CAP candidates
 * remain, by collecting them and running a radix select (pgfp_select.c). Inputs of at most
 * SMALL elements collect every key in pass 1 instead. Scratch memory is bounded
 * (pgfp_scratch_bound). Threads split the blocks of a window; block partials are combined
 * in block order, so the result does not depend on the thread count. */
#include "pgfp_internal.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#if !defined(_WIN32)
#include <pthread.h>
#define PGFP_HAVE_THREADS 1
#endif


static double key_to_value(uint64_t key, int dtype) {
    switch (dtype) {
    case PGFP_F16: { uint16_t b = (key & 0x8000u) ? (uint16_t)(key & 0x7fffu) : (uint16_t)~key; return f16_to_d(b) + 0.0; }
    case PGFP_BF16: { uint16_t b = (key & 0x8000u) ? (uint16_t)(key & 0x7fffu) : (uint16_t)~key; return bf16_to_d(b) + 0.0; }
    case PGFP_F32: { uint32_t b = (key & 0x80000000u) ? (uint32_t)(key & 0x7fffffffu) : (uint32_t)~key; return f32_to_d(b) + 0.0; }
    default: { uint64_t b = (key >> 63) ? (key & 0x7fffffffffffffffull) : ~key; return f64_to_d(b) + 0.0; }
    }
}
static int key_bits(int dtype) { return dtype == PGFP_F64 ? 64 : dtype == PGFP_F32 ? 32 : 16; }

#define STACK_KEYS 512 /* keys of inputs this small live on the stack */

typedef void (*chunk_fn)(const void *, int, uint32_t, uint64_t, partial *, uint32_t *);
typedef uint32_t (*match_fn)(const void *, int, uint32_t, const matcher *, uint32_t *);

/* ---- shared state of one call ---- */
typedef struct {
    const char *data;
    uint64_t n, nblocks;
    int dtype, esize, T, W, small;
    chunk_fn chunk;
    match_fn match;
    partial *slots;          /* block partials of a window (&tot itself for one block) */
    uint32_t *hist;          /* T x (HBINS + 1), pass 1 */
    uint32_t *rhist;         /* T x nq x RBINS, refinement passes */
    uint64_t *hist64, *rhist64; /* overflow accumulators, only when n >= FLUSH */
    int nq;
    void *buf, *tmp;         /* collected keys, radix-select scratch */
    uint32_t *sel;           /* 12-bit radix-select level (NULL: 8-bit digits only) */
    uint64_t bufn;
    /* quantile plan, written by thread 0 between barriers */
    int cmd;                 /* 0 done, 1 refine, 2 collect */
    int ng, shift, nbits;    /* groups; key >> shift is the prefix; refine digit bits */
    unsigned char *tab;      /* HBINS flags: top-16 digit of some group prefix */
    int err;
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
    uint64_t toff[64];       /* per-thread collect offsets (T <= 64) */
} ctx;

typedef struct { ctx *c; int t; } targ;

static void barrier(ctx *c) {
#ifdef PGFP_HAVE_THREADS
    if (c->T <= 1) return;
    pthread_mutex_lock(&c->mu);
    int g = c->gen;
    if (++c->waiting == c->T) { c->waiting = 0; c->gen++; pthread_cond_broadcast(&c->cv); }
    else while (g == c->gen) pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
#else
    (void)c;
#endif
}

static void block_range(const ctx *c, uint64_t w0, int t, uint64_t *b0, uint64_t *b1) {
    uint64_t per = (uint64_t)(c->W / c->T);
    *b0 = w0 + per * (uint64_t)t;
    *b1 = *b0 + per;
    if (*b0 > c->nblocks) *b0 = c->nblocks;
    if (*b1 > c->nblocks) *b1 = c->nblocks;
}

static void do_block(ctx *c, uint64_t b, partial *p, uint32_t *hist) {
    uint32_t dig[SUB];
    uint64_t e0 = b * BLOCK, e1 = e0 + BLOCK;
    if (e1 > c->n) e1 = c->n;
    partial_init(p);
    for (uint64_t i = e0; i < e1; i += SUB) {
        uint32_t len = (uint32_t)((e1 - i) < SUB ? (e1 - i) : SUB);
        const char *src = c->data + i * (uint64_t)c->esize;
        /* the vector path handles whole groups of LANES; a short tail (end of data) is scalar */
        uint32_t nv = c->chunk == pgfp_chunk_scalar ? len : len & ~(uint32_t)(LANES - 1);
        if (nv) c->chunk(src, c->dtype, nv, i, p, dig);
        if (nv < len) pgfp_chunk_scalar(src + (uint64_t)nv * c->esize, c->dtype, len - nv, i + nv, p, dig + nv);
        if (c->small) c->bufn = pgfp_collect_chunk(src, c->dtype, len, c->buf, c->bufn);
        else for (uint32_t k = 0; k < len; k++) hist[dig[k]]++;
    }
}

static void combine(partial *tot, const partial *p) {
    for (int j = 0; j < LANES; j++) { tot->s[j] += p->s[j]; tot->q[j] += p->q[j]; tot->a[j] += p->a[j]; }
    for (int k = 0; k < PGFP_WIDTH; k++) tot->sk[k] += p->sk[k];
    tot->nan += p->nan; tot->pinf += p->pinf; tot->ninf += p->ninf; tot->zero += p->zero;
    if (p->mn < tot->mn) tot->mn = p->mn;
    if (p->mx > tot->mx) tot->mx = p->mx;
}

static inline uint64_t load_key(const ctx *c, uint64_t i) {
    switch (c->dtype) {
    case PGFP_F16: case PGFP_BF16: return key16(((const uint16_t *)c->data)[i]);
    case PGFP_F32: return key32(((const uint32_t *)c->data)[i]);
    default: return key64(((const uint64_t *)c->data)[i]);
    }
}

/* Indices (within the chunk) of elements whose key prefix is one of the groups. Group
 * prefixes keep the whole exponent, so non-finite elements never match. */
static uint32_t match_scalar(const void *src, int dtype, uint32_t len, const matcher *mt, uint32_t *out) {
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

static void flush(uint32_t *h32, uint64_t *h64, uint64_t bins) {
    for (uint64_t i = 0; i < bins; i++) { h64[i] += h32[i]; h32[i] = 0; }
}
static inline uint64_t hget(const uint32_t *h32, const uint64_t *h64, uint64_t i) {
    return h32[i] + (h64 ? h64[i] : 0);
}

/* Refinement (cmd 1: histogram the next digit) or collection (cmd 2) over thread t's blocks. */
static void quantile_pass(ctx *c, int t) {
    int kb = key_bits(c->dtype);
    uint64_t bins = (uint64_t)c->nq * RBINS;
    uint32_t *rh = c->rhist + (uint64_t)t * bins;
    uint64_t *rh64 = c->rhist64 ? c->rhist64 + (uint64_t)t * bins : NULL;
    uint64_t pos = c->toff[t], since = 0;
    uint32_t idx[SUB];
    uint64_t dmask = (1ull << c->nbits) - 1;
    int dshift = c->shift - c->nbits;
    if (c->cmd == 1) {
        memset(rh, 0, sizeof(uint32_t) * bins);
        if (rh64) memset(rh64, 0, sizeof(uint64_t) * bins);
    }
    for (uint64_t w0 = 0; w0 < c->nblocks; w0 += (uint64_t)c->W) {
        uint64_t b0, b1;
        block_range(c, w0, t, &b0, &b1);
        uint64_t e0 = b0 * BLOCK, e1 = b1 * BLOCK;
        if (e1 > c->n) e1 = c->n;
        for (uint64_t i = e0; i < e1; i += SUB) {
            uint32_t len = (uint32_t)((e1 - i) < SUB ? (e1 - i) : SUB);
            const char *src = c->data + i * (uint64_t)c->esize;
            uint32_t m = c->match(src, c->dtype, len, &c->mt, idx);
            for (uint32_t j = 0; j < m; j++) {
                uint64_t key = load_key(c, i + idx[j]), pre = key >> c->shift;
                int g;
                if (c->mt.ghashed) {
                    unsigned h = (unsigned)((pre * c->mt.gmul) >> 59);
                    if (c->mt.gkey[h] != pre) continue; /* a raw-prefix alias of -0, not a candidate */
                    g = c->mt.gid[h];
                } else {
                    for (g = 0; g < c->ng && c->gprefix[g] != pre; g++) {}
                    if (g == c->ng) continue;
                }
                if (c->cmd == 1) rh[(uint64_t)g * RBINS + ((key >> dshift) & dmask)]++;
                else if (kb == 64) ((uint64_t *)c->buf)[pos++] = key;
                else ((uint32_t *)c->buf)[pos++] = (uint32_t)key;
            }
            if (rh64 && (since += len) >= FLUSH) { flush(rh, rh64, bins); since = 0; }
        }
    }
}

static void pass1(ctx *c, int t) {
    uint32_t *hist = c->hist + (uint64_t)t * (HBINS + 1);
    uint64_t *h64 = c->hist64 ? c->hist64 + (uint64_t)t * (HBINS + 1) : NULL, since = 0;
    if (!c->small) memset(hist, 0, sizeof(uint32_t) * (HBINS + 1));
    for (uint64_t w0 = 0; w0 < c->nblocks; w0 += (uint64_t)c->W) {
        uint64_t b0, b1;
        block_range(c, w0, t, &b0, &b1);
        for (uint64_t b = b0; b < b1; b++) {
            do_block(c, b, &c->slots[b - w0], hist);
            if (h64 && (since += BLOCK) >= FLUSH) { flush(hist, h64, HBINS + 1); since = 0; }
        }
        barrier(c);
        if (t == 0 && c->slots != &c->tot) {
            uint64_t nb = c->nblocks - w0 < (uint64_t)c->W ? c->nblocks - w0 : (uint64_t)c->W;
            for (uint64_t k = 0; k < nb; k++) combine(&c->tot, &c->slots[k]);
        }
        barrier(c);
    }
}

/* Quantile planning state (thread 0 only). */
typedef struct {
    int nq;
    uint64_t rank[PGFP_NQ_MAX];   /* rank inside the current prefix group */
    uint64_t prefix[PGFP_NQ_MAX]; /* known top bits of the key */
    uint64_t count[PGFP_NQ_MAX];  /* elements with that prefix */
    int grp[PGFP_NQ_MAX];
    uint64_t tcount[64][NG];      /* per-thread counts of each group */
    int bits;                     /* known key bits */
} plan;

/* Raw bit prefix of a key prefix of b bits: positive keys have the top bit set (flip it),
 * negative ones are the complement of their bits. */
static uint64_t raw_prefix(uint64_t p, int b) {
    uint64_t top = 1ull << (b - 1);
    return (p & top) ? p ^ top : p ^ (top | (top - 1));
}

static void set_matcher(matcher *mt, const ctx *c, int kb) {
    int b = kb - c->shift;
    uint64_t zero = 1ull << (b - 1); /* the key prefix of +0 (and of -0) */
    mt->shift = c->shift;
    mt->ng = c->ng;
    mt->tab = c->tab;
    mt->nraw = 0;
    for (int g = 0; g < c->ng; g++) {
        mt->gp[g] = c->gprefix[g];
        mt->raw[mt->nraw++] = raw_prefix(c->gprefix[g], b);
        if (c->gprefix[g] == zero) mt->raw[mt->nraw++] = zero; /* -0.0's raw prefix */
    }
    int u = 0; /* drop duplicates (zero's alias may also be a group's own raw prefix) */
    for (int i = 0; i < mt->nraw; i++) {
        int j = 0;
        while (j < u && mt->raw[j] != mt->raw[i]) j++;
        if (j == u) mt->raw[u++] = mt->raw[i];
    }
    mt->nraw = u;
    /* key prefix -> group: a perfect hash into 32 slots (no search, no mispredicted branch) */
    uint64_t y = 0x9e3779b97f4a7c15ull;
    mt->ghashed = 0;
    for (int tries = 0; tries < 4096 && !mt->ghashed; tries++) {
        y = y * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t mul = y | 1u;
        uint32_t used = 0;
        int g;
        for (g = 0; g < c->ng; g++) {
            unsigned h = (unsigned)((c->gprefix[g] * mul) >> 59);
            if (used & (1u << h)) break;
            used |= 1u << h;
        }
        if (g < c->ng) continue;
        mt->gmul = mul;
        for (int h = 0; h < 32; h++) mt->gkey[h] = ~0ull; /* no prefix has all bits set */
        for (g = 0; g < c->ng; g++) {
            unsigned h = (unsigned)((c->gprefix[g] * mul) >> 59);
            mt->gkey[h] = c->gprefix[g];
            mt->gid[h] = (unsigned char)g;
        }
        mt->ghashed = 1;
    }
    mt->hashed = 0;
    if (kb != 32 || mt->nraw > 16) return;
    /* 16-bit raw prefixes: look for a multiplier that gives each its own bucket */
    uint32_t x = 0x9e3779b9u;
    for (int tries = 0; tries < 4096 && !mt->hashed; tries++) {
        x = x * 1664525u + 1013904223u;
        uint32_t mul = x | 1u, used = 0;
        int k;
        for (k = 0; k < mt->nraw; k++) {
            uint32_t bk = ((uint32_t)mt->raw[k] * mul) >> 28;
            if (used & (1u << bk)) break;
            used |= 1u << bk;
        }
        if (k < mt->nraw) continue;
        mt->mul = mul;
        for (int i = 0; i < 16; i++) mt->val[i] = ~0u;
        for (k = 0; k < mt->nraw; k++) mt->val[((uint32_t)mt->raw[k] * mul) >> 28] = (uint32_t)mt->raw[k];
        mt->hashed = 1;
    }
}

static void set_groups(ctx *c, plan *pl) {
    int kb = key_bits(c->dtype);
    c->ng = 0;
    for (int k = 0; k < pl->nq; k++) {
        int g;
        for (g = 0; g < c->ng; g++) if (c->gprefix[g] == pl->prefix[k]) break;
        if (g == c->ng) c->gprefix[c->ng++] = pl->prefix[k];
        pl->grp[k] = g;
    }
    c->shift = kb - pl->bits;
    memset(c->tab, 0, HBINS);
    for (int g = 0; g < c->ng; g++) c->tab[c->gprefix[g] >> (pl->bits - 16)] = 1;
    set_matcher(&c->mt, c, kb);
}

/* Decide the next pass; returns cmd (0 = finished, keys in pl->prefix are complete). */
static int plan_next(ctx *c, plan *pl) {
    int kb = key_bits(c->dtype);
    if (pl->bits == kb) return 0;
    set_groups(c, pl);
    uint64_t cand = 0, gcount[NG];
    for (int k = 0; k < pl->nq; k++) gcount[pl->grp[k]] = pl->count[k];
    for (int g = 0; g < c->ng; g++) cand += gcount[g];
    if (cand <= CAP) {
        uint64_t off = 0;
        for (int t = 0; t < c->T; t++) {
            c->toff[t] = off;
            for (int g = 0; g < c->ng; g++) off += pl->tcount[t][g];
        }
        c->bufn = off;
        return 2;
    }
    /* float32: 16 bits finish the key in one pass. float64 has 48 bits left and many more
     * candidates (its top 16 bits hold only 4 mantissa bits): 12-bit digits keep their
     * histogram in cache, and the pass after is a collection either way. */
    int rb = kb == 64 ? 12 : RBITS;
    c->nbits = kb - pl->bits < rb ? kb - pl->bits : rb;
    return 1;
}

static void plan_after_refine(ctx *c, plan *pl) {
    uint64_t nb = 1u << c->nbits;
    for (int k = 0; k < pl->nq; k++) {
        int g = pl->grp[k];
        uint64_t below = 0, d = 0;
        for (d = 0; d < nb; d++) {
            uint64_t h = 0;
            for (int t = 0; t < c->T; t++) h += hget(c->rhist, c->rhist64, ((uint64_t)t * c->nq + g) * RBINS + d);
            if (pl->rank[k] < below + h) { pl->count[k] = h; break; }
            below += h;
        }
        pl->rank[k] -= below;
        pl->prefix[k] = (pl->prefix[k] << c->nbits) | d;
        for (int t = 0; t < c->T; t++) pl->tcount[t][k] = hget(c->rhist, c->rhist64, ((uint64_t)t * c->nq + g) * RBINS + d);
    }
    pl->bits += c->nbits;
    /* tcount is indexed by quantile until set_groups regroups; remap to groups */
    uint64_t tmp[64][NG];
    memcpy(tmp, pl->tcount, sizeof tmp);
    set_groups(c, pl);
    for (int t = 0; t < c->T; t++)
        for (int k = 0; k < pl->nq; k++) pl->tcount[t][pl->grp[k]] = tmp[t][k];
}

static void select_in_buf(ctx *c, plan *pl, double *q) {
    /* Candidate groups are disjoint prefix ranges: sorted buffer = groups in prefix order. */
    uint64_t gcount[NG], base[NG], r[PGFP_NQ_MAX], rs[PGFP_NQ_MAX] = {0};
    int kb = key_bits(c->dtype), ord[PGFP_NQ_MAX], nr = 0;
    for (int k = 0; k < pl->nq; k++) gcount[pl->grp[k]] = pl->count[k];
    for (int g = 0; g < c->ng; g++) {
        base[g] = 0;
        for (int h = 0; h < c->ng; h++) if (c->gprefix[h] < c->gprefix[g]) base[g] += gcount[h];
    }
    for (int k = 0; k < pl->nq; k++) { r[k] = base[pl->grp[k]] + pl->rank[k]; ord[k] = k; }
    for (int i = 1; i < pl->nq; i++)
        for (int j = i; j > 0 && r[ord[j]] < r[ord[j - 1]]; j--) { int x = ord[j]; ord[j] = ord[j - 1]; ord[j - 1] = x; }
    for (int i = 0; i < pl->nq; i++) rs[nr++] = r[ord[i]];
    uint64_t keys[PGFP_NQ_MAX];
    if (kb == 64) pgfp_rselect64(c->buf, c->tmp, c->bufn, kb, rs, nr, keys, c->sel);
    else { uint32_t k32[PGFP_NQ_MAX]; pgfp_rselect32(c->buf, c->tmp, c->bufn, kb, rs, nr, k32, c->sel); for (int i = 0; i < nr; i++) keys[i] = k32[i]; }
    for (int i = 0; i < pl->nq; i++) q[ord[i]] = key_to_value(keys[i], c->dtype);
}

/* Threads t >= 1 mirror thread 0's barrier sequence in run_main(). */
static void worker(ctx *c, int t) {
    pass1(c, t);
    for (;;) {
        barrier(c);           /* A: thread 0 plans */
        barrier(c);           /* B: plan visible */
        int was = c->cmd;
        if (was == 0) return;
        quantile_pass(c, t);
        if (was == 2) { barrier(c); return; }
    }
}

#ifdef PGFP_HAVE_THREADS
static void *thread_main(void *arg) {
    targ *a = arg;
    ctx *c = a->c;
    pthread_mutex_lock(&c->mu);
    while (c->go == 0) pthread_cond_wait(&c->cv, &c->mu);
    int go = c->go;
    pthread_mutex_unlock(&c->mu);
    if (go > 0) worker(c, a->t);
    return NULL;
}
#endif

static uint64_t rank_of(double q, uint64_t m) {
    uint64_t r = (uint64_t)floor(q * (double)(m - 1));
    return r > m - 1 ? m - 1 : r;
}

/* Thread 0: pass 1, then plans and runs the quantile passes. */
static void run_main(ctx *c, plan *pl, const double *qs, int nq, double *q) {
    pass1(c, 0);
    uint64_t m = c->n - c->tot.nan - c->tot.pinf - c->tot.ninf;
    int done_q = (m == 0 || nq == 0);
    pl->nq = nq;
    pl->bits = 16;
    for (int k = 0; k < nq; k++) q[k] = NAN;
    if (!done_q && c->small) {
        for (int k = 0; k < nq; k++) { pl->rank[k] = rank_of(qs[k], m); pl->count[k] = m; pl->prefix[k] = 0; pl->grp[k] = 0; }
        c->ng = 1;
        c->gprefix[0] = 0;
        select_in_buf(c, pl, q);
        done_q = 1;
    } else if (!done_q) {
        for (int k = 0; k < nq; k++) {
            uint64_t r = rank_of(qs[k], m), below = 0, d;
            for (d = 0; d < HBINS; d++) {
                uint64_t h = 0;
                for (int t = 0; t < c->T; t++) h += hget(c->hist, c->hist64, (uint64_t)t * (HBINS + 1) + d);
                if (r < below + h) { pl->count[k] = h; break; }
                below += h;
            }
            pl->rank[k] = r - below;
            pl->prefix[k] = d;
        }
        uint64_t tmp[64][PGFP_NQ_MAX];
        for (int t = 0; t < c->T; t++)
            for (int k = 0; k < nq; k++) tmp[t][k] = hget(c->hist, c->hist64, (uint64_t)t * (HBINS + 1) + pl->prefix[k]);
        set_groups(c, pl);
        for (int t = 0; t < c->T; t++)
            for (int k = 0; k < nq; k++) pl->tcount[t][pl->grp[k]] = tmp[t][k];
    }
    c->cmd = 0;
    for (;;) {
        barrier(c);                                       /* A */
        if (done_q) c->cmd = 0;
        else {
            if (c->cmd == 1) plan_after_refine(c, pl);
            c->cmd = plan_next(c, pl);
        }
        barrier(c);                                       /* B */
        int was = c->cmd;
        if (was == 0) break;
        quantile_pass(c, 0);
        if (was == 2) { barrier(c); select_in_buf(c, pl, q); return; }
    }
    if (!done_q) /* every key bit known from the histograms */
        for (int k = 0; k < nq; k++) q[k] = key_to_value(pl->prefix[k], c->dtype);
}

static int key_size(int dtype) { return dtype == PGFP_F64 ? 8 : 4; }

uint64_t pgfp_scratch_bound(uint64_t n, int dtype, int nthreads) {
    uint64_t T = nthreads < 1 ? 1 : (uint64_t)nthreads;
    if (n <= SMALL) T = 1;
    uint64_t b = sizeof(ctx) + sizeof(plan) + T * WPT * sizeof(partial) + 2 * (uint64_t)key_size(dtype) * (n <= SMALL ? n : CAP) + 4 * 8192 + 4096;
    if (n > SMALL) b += T * ((HBINS + 1) + (uint64_t)PGFP_NQ_MAX * RBINS) * (n >= FLUSH ? 12 : 4);
    return b;
}

int pgfp_fingerprint(const void *data, uint64_t n, int dtype, const double *qs, int nq,
                     int nthreads, pgfp_result *out) {
    if (!out || (n && !data) || dtype < PGFP_F16 || dtype > PGFP_F64 || nq < 0 || nq > PGFP_NQ_MAX || (nq && !qs))
        return -1;
    int T = nthreads < 1 ? 1 : nthreads > 64 ? 64 : nthreads;
#ifndef PGFP_HAVE_THREADS
    T = 1;
#endif
    int small = n <= SMALL;
    if (small) T = 1;
    int rc = 0;
    /* Small inputs run without heap allocation (per-call cost matters for small tensors). */
    ctx cs;
    plan pls; /* every field is written before it is read */
    uint64_t kbuf[2][STACK_KEYS];
    ctx *c = &cs;
    plan *pl = &pls;
    memset(c, 0, offsetof(ctx, tot));
    c->chunk = pgfp_chunk_scalar;
    c->match = match_scalar;
#ifdef PGFP_X86
    if (pgfp_cpu_has_avx2()) { c->chunk = pgfp_chunk_avx2; c->match = pgfp_match_avx2; }
#endif
    c->nq = nq;
    c->data = data; c->n = n; c->dtype = dtype; c->T = T; c->W = WPT * T; c->small = small;
    c->esize = dtype == PGFP_F64 ? 8 : dtype == PGFP_F32 ? 4 : 2;
    c->nblocks = (n + BLOCK - 1) / BLOCK;
    partial_init(&c->tot);
    int heap_slots = c->nblocks > 1, heap_keys = n > STACK_KEYS;
    /* One block: it is the total (adding a block to a +0.0 total changes no bit: the
     * specification's sums and buckets never hold -0.0, as they start from +0.0). */
    c->slots = heap_slots ? malloc(sizeof(partial) * (size_t)(c->nblocks < (uint64_t)c->W ? c->nblocks : (uint64_t)c->W))
                          : &c->tot;
    c->buf = heap_keys ? malloc((size_t)key_size(dtype) * (small ? n : CAP)) : (void *)kbuf[0];
    c->tmp = heap_keys ? malloc((size_t)key_size(dtype) * (small ? n : CAP)) : (void *)kbuf[1];
    c->sel = heap_keys ? malloc(sizeof(uint32_t) * 8192 + 4096) : NULL;
    if (!c->tmp || (heap_keys && !c->sel)) { rc = -2; goto done; }
    if (!small) {
        c->hist = malloc(sizeof(uint32_t) * (HBINS + 1) * (size_t)T);
        c->tab = malloc(HBINS);
        if (!c->tab) { rc = -2; goto done; }
        c->rhist = malloc(sizeof(uint32_t) * (size_t)(nq ? nq : 1) * RBINS * (size_t)T);
        if (n >= FLUSH) { /* 32-bit counters could overflow: spill into 64-bit ones */
            c->hist64 = calloc((HBINS + 1) * (size_t)T, sizeof(uint64_t));
            c->rhist64 = calloc((size_t)(nq ? nq : 1) * RBINS * (size_t)T, sizeof(uint64_t));
            if (!c->hist64 || !c->rhist64) { rc = -2; goto done; }
        }
    }
    if (!c->slots || !c->buf || (!small && (!c->hist || !c->rhist))) { rc = -2; goto done; }

#ifdef PGFP_HAVE_THREADS
    pthread_t th[64];
    targ args[64];
    int started = 1;
    if (T > 1) {
        pthread_mutex_init(&c->mu, NULL);
        pthread_cond_init(&c->cv, NULL);
        for (int t = 1; t < T; t++) {
            args[t].c = c; args[t].t = t;
            if (pthread_create(&th[t], NULL, thread_main, &args[t]) != 0) break;
            started++;
        }
        pthread_mutex_lock(&c->mu);
        c->go = started == T ? 1 : -1;          /* on failure: release them, run alone */
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
        if (started < T) {
            for (int t = 1; t < started; t++) pthread_join(th[t], NULL);
            started = 1;
            c->T = 1;
            c->W = WPT;
        }
    }
#endif
    run_main(c, pl, qs, nq, out->q);
#ifdef PGFP_HAVE_THREADS
    if (T > 1) {
        for (int t = 1; t < started; t++) pthread_join(th[t], NULL);
        pthread_mutex_destroy(&c->mu);
        pthread_cond_destroy(&c->cv);
    }
#endif
    {
        partial *p = &c->tot;
        uint64_t m = n - p->nan - p->pinf - p->ninf;
        out->nan = p->nan; out->posinf = p->pinf; out->neginf = p->ninf; out->zero = p->zero;
        out->min = m ? p->mn + 0.0 : NAN;
        out->max = m ? p->mx + 0.0 : NAN;
        out->sum = ((p->s[0] + p->s[1]) + (p->s[2] + p->s[3])) + ((p->s[4] + p->s[5]) + (p->s[6] + p->s[7]));
        out->sumsq = ((p->q[0] + p->q[1]) + (p->q[2] + p->q[3])) + ((p->q[4] + p->q[5]) + (p->q[6] + p->q[7]));
        out->sumabs = ((p->a[0] + p->a[1]) + (p->a[2] + p->a[3])) + ((p->a[4] + p->a[5]) + (p->a[6] + p->a[7]));
        memcpy(out->sketch, p->sk, sizeof out->sketch);
    }
done:
    if (heap_slots) free(c->slots);
    if (heap_keys) { free(c->buf); free(c->tmp); free(c->sel); }
    free(c->hist); free(c->rhist); free(c->hist64); free(c->rhist64); free(c->tab);
    return rc;
}
