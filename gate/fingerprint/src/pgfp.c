/* parity-gate fingerprint kernel (C99). Reproduces gate/fingerprint/reference.py bit for
 * bit; read that docstring first. Build without -ffast-math and with -ffp-contract=off:
 * the summation order and the rounding of v*v are part of the specification.
 *
 * This file is the driver. One fused pass (pgfp_chunk_avx2 / _neon / _scalar) computes
 * counts, min/max, the lane sums, the sketch and a 16-bit histogram of order-preserving
 * integer keys (float64: of a window of its exponents, dig64); quantiles are then finished
 * by passes the planner (pgfp_plan.c) asks for: refinement (histogram the next digit of
 * the few groups holding a wanted rank) and, once at most CAP candidates remain,
 * collection followed by a radix select (pgfp_select.c). Inputs of at most SMALL elements collect every key in pass 1 instead.
 * Zeros are counted, never ranked: they occupy the ranks right after the negative values,
 * so a wanted rank among them is answered without a pass (a ReLU output, half zeros, costs
 * what a dense tensor costs); a group dominated by one value is counted by vector compares
 * (see matcher). Scratch memory is bounded (pgfp_scratch_bound). Threads split the blocks
 * of a window; block partials are combined in block order, so the result does not depend
 * on the thread count. */
#include "pgfp_ctx.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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

/* Thread t's blocks of the window starting at block w0: an equal share of the window's
 * blocks (a short last window is shared too). */
static void block_range(const ctx *c, uint64_t w0, int t, uint64_t *b0, uint64_t *b1) {
    uint64_t nb = c->nblocks - w0 < (uint64_t)c->W ? c->nblocks - w0 : (uint64_t)c->W;
    uint64_t per = (nb + (uint64_t)c->T - 1) / (uint64_t)c->T, end = w0 + nb;
    *b0 = w0 + per * (uint64_t)t;
    *b1 = *b0 + per;
    if (*b0 > end) *b0 = end;
    if (*b1 > end) *b1 = end;
}

static void do_block(ctx *c, uint64_t b, partial *p, uint32_t *hist) {
    uint64_t e0 = b * BLOCK, e1 = e0 + BLOCK;
    if (e1 > c->n) e1 = c->n;
    sink o = {c->small ? NULL : hist, c->hdig, c->buf, c->bufn, c->dsh, c->dlo};
    partial_init(p);
    for (uint64_t i = e0; i < e1; i += SUB) {
        uint32_t len = (uint32_t)((e1 - i) < SUB ? (e1 - i) : SUB);
        const char *src = c->data + i * (uint64_t)c->esize;
        /* the vector path handles whole groups of LANES; a short tail (end of data) is scalar */
        uint32_t nv = c->chunk == pgfp_chunk_scalar ? len : len & ~(uint32_t)(LANES - 1);
        if (nv) c->chunk(src, c->dtype, nv, i, p, &o);
        if (nv < len) pgfp_chunk_scalar(src + (uint64_t)nv * c->esize, c->dtype, len - nv, i + nv, p, &o);
    }
    if (c->small) c->bufn = o.nkeys; /* small inputs run on one thread */
}

static void combine(partial *tot, const partial *p) {
    for (int j = 0; j < LANES; j++) { tot->s[j] += p->s[j]; tot->q[j] += p->q[j]; tot->a[j] += p->a[j]; }
    for (int k = 0; k < PGFP_WIDTH; k++) tot->sk[k] += p->sk[k];
    tot->nan += p->nan; tot->pinf += p->pinf; tot->ninf += p->ninf; tot->zero += p->zero;
    if (p->mn < tot->mn) tot->mn = p->mn;
    if (p->mx > tot->mx) tot->mx = p->mx;
}

static void flush(uint32_t *h32, uint64_t *h64, uint64_t bins) {
    for (uint64_t i = 0; i < bins; i++) { h64[i] += h32[i]; h32[i] = 0; }
}

/* Refinement (cmd 1: histogram the next digit) or collection (cmd 2) over thread t's blocks. */
static void quantile_pass(ctx *c, int t) {
    int kb = key_bits(c->dtype);
    uint64_t bins = (uint64_t)c->nq * RSTRIDE;
    uint32_t *rh = c->rhist + (uint64_t)t * bins;
    uint64_t *rh64 = c->rhist64 ? c->rhist64 + (uint64_t)t * bins : NULL;
    uint64_t since = 0, hc[NG] = {0}, *pos = c->goff[t];
    uint32_t idx[SUB + LANES]; /* the vector matcher writes whole vectors */
    uint64_t dmask = (1ull << c->nbits) - 1, zkey = 1ull << (kb - 1);
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
            uint32_t m = c->match(src, c->dtype, len, &c->mt, idx, hc);
            for (uint32_t j = 0; j < m; j++) {
                uint64_t key = load_key(c, i + idx[j]), pre = key >> c->shift;
                int g;
                if (!ranked(c, key, zkey)) continue; /* +0 or -0, +-max: counted, never ranked */
                if (c->mt.ghashed) {
                    unsigned h = (unsigned)((pre * c->mt.gmul) >> 59);
                    if (c->mt.gkey[h] != pre) continue; /* a raw-prefix alias, not a candidate */
                    g = c->mt.gid[h];
                } else {
                    for (g = 0; g < c->ng && c->gprefix[g] != pre; g++) {}
                    if (g == c->ng) continue;
                }
                if (c->cmd == 1) rh[(uint64_t)g * RSTRIDE + ((key >> dshift) & dmask)]++;
                else if (kb == 64) ((uint64_t *)c->buf)[pos[g]++] = key;
                else ((uint32_t *)c->buf)[pos[g]++] = (uint32_t)key;
            }
            if (rh64 && (since += len) >= FLUSH) { flush(rh, rh64, bins); since = 0; }
        }
    }
    for (int h = 0; h < c->mt.nheavy; h++) { /* heavy values back into the histogram */
        uint64_t i = (uint64_t)c->hgrp[h] * RSTRIDE + ((c->hkey[h] >> dshift) & dmask);
        if (rh64) rh64[i] += hc[h];
        else rh[i] += (uint32_t)hc[h];
        c->hcnt[t][h] = hc[h];
    }
}

static void pass1(ctx *c, int t) {
    uint32_t *hist = c->hist + (uint64_t)t * HSTRIDE;
    uint64_t *h64 = c->hist64 ? c->hist64 + (uint64_t)t * HSTRIDE : NULL, since = 0;
    if (!c->small) memset(hist, 0, sizeof(uint32_t) * HSTRIDE);
    for (uint64_t w0 = 0; w0 < c->nblocks; w0 += (uint64_t)c->W) {
        uint64_t b0, b1;
        block_range(c, w0, t, &b0, &b1);
        for (uint64_t b = b0; b < b1; b++) {
            do_block(c, b, &c->slots[b - w0], hist);
            if (h64 && (since += BLOCK) >= FLUSH) { flush(hist, h64, HSTRIDE); since = 0; }
        }
        barrier(c);
        if (t == 0 && c->slots != &c->tot) {
            uint64_t nb = c->nblocks - w0 < (uint64_t)c->W ? c->nblocks - w0 : (uint64_t)c->W;
            for (uint64_t k = 0; k < nb; k++) combine(&c->tot, &c->slots[k]);
        }
        barrier(c);
    }
}

/* Thread 0, after pass 1 (every thread is past its last barrier): the dominant digit's
 * lane bins back into its bin, in each thread's histogram. */
static void fold_dominant(ctx *c) {
    if (c->small || c->hdig >= HBINS) return;
    for (int t = 0; t < c->T; t++) {
        uint32_t *h32 = c->hist + (uint64_t)t * HSTRIDE;
        uint64_t *h64 = c->hist64 ? c->hist64 + (uint64_t)t * HSTRIDE : NULL, d = 0;
        for (int j = 0; j < LANES; j++) d += hget(h32, h64, HBINS + LANES + j);
        if (h64) h64[c->hdig] += d;
        else h32[c->hdig] += (uint32_t)d;
    }
}

/* Pass 1's digit of element i, or ~0u for a zero or non-finite element. */
static uint32_t sample_digit(const ctx *c, uint64_t i) {
    int kb = key_bits(c->dtype);
    uint64_t key = load_key(c, i), zkey = 1ull << (kb - 1);
    int nonfin = c->dtype == PGFP_F32 ? nonfin_f32(((const uint32_t *)c->data)[i])
               : c->dtype == PGFP_F64 ? nonfin_f64(((const uint64_t *)c->data)[i])
               : c->dtype == PGFP_F16 ? nonfin_f16(((const uint16_t *)c->data)[i])
               : nonfin_bf16(((const uint16_t *)c->data)[i]);
    if (key == zkey || nonfin) return ~0u;
    return c->dtype == PGFP_F64 ? dig64(((const uint64_t *)c->data)[i], c->dsh, c->dlo) : (uint32_t)(key >> (kb - 16));
}

/* float64's digit window (see dig64): its top 16 exponents above the largest magnitude
 * among 512 elements sampled in 64 runs spread over the data (1.0 if none is finite and
 * non-zero). A wanted rank lands in an edge bin only where its value is 2^16 times larger
 * than every sampled one (a few outliers in a thousand), or 2^240 times smaller. */
static void digit_window(ctx *c) {
    enum { RUNS = 64, RUN = 8 };
    const uint64_t *u = (const uint64_t *)c->data;
    uint64_t step = c->n / RUNS;
    uint32_t tmax = 1023u << 7;
    int any = 0;
    for (uint64_t r = 0; r < RUNS; r++)
        for (uint64_t i = r * step; i < r * step + RUN; i++) {
            uint32_t hi = (uint32_t)(u[i] >> 32) & 0x7fffffffu, t = hi >> DSH_FINE;
            if (nonfin_f64(u[i]) || !(u[i] << 1)) continue;
            if (!any || t > tmax) tmax = t;
            any = 1;
        }
    uint32_t top = tmax + (16u << 7), last = (2047u << 7) - 1; /* the largest finite t */
    if (top > last) top = last;
    c->dsh = DSH_FINE;
    c->dlo = top + 1 > 32766u ? top + 1 - 32766u : 0;
}

/* The digit of at least 1/8 of the finite non-zero elements among 128 sampled in 64 pairs
 * spread over the data (a saturation level, a mask value), or ~0u. Large inputs only. */
static uint32_t dominant_digit(const ctx *c) {
    enum { RUNS = 64, RUN = 2 };
    uint32_t v[RUNS * RUN], n = 0, best = ~0u;
    uint64_t step = c->n / RUNS;
    for (uint64_t r = 0; r < RUNS; r++)
        for (uint64_t i = r * step; i < r * step + RUN; i++) {
            uint32_t d = sample_digit(c, i), j = n++;
            for (; j > 0 && v[j - 1] > d; j--) v[j] = v[j - 1]; /* insertion sort */
            v[j] = d;
        }
    for (uint32_t i = 0, run = 0, top = 0; i < n && v[i] != ~0u; i++) {
        run = i > 0 && v[i] == v[i - 1] ? run + 1 : 1;
        if (run > top) { top = run; best = v[i]; }
    }
    uint32_t finite = 0, top = 0;
    for (uint32_t i = 0; i < n; i++) { finite += v[i] != ~0u; top += v[i] == best; }
    return best != ~0u && top * 8 >= finite ? best : ~0u;
}

/* Threads t >= 1 mirror thread 0's barrier sequence in run_main(). */
static void worker(ctx *c, int t) {
    pass1(c, t);
    for (;;) {
        barrier(c);           /* A: thread 0 plans */
        barrier(c);           /* B: plan visible */
        int was = c->cmd;
        if (was == 0) return;
        if (was == 3) { pass1(c, t); continue; }
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

/* Thread 0: pass 1, then plans and runs the quantile passes. */
static void run_main(ctx *c, plan *pl, const double *qs, int nq, double *q) {
    TM_START();
    pass1(c, 0);
    fold_dominant(c);
    TM_LAP(PGFP_TM_PASS1);
    TM_COUNT(PGFP_TM_NPASS1);
    uint64_t m = c->n - c->tot.nan - c->tot.pinf - c->tot.ninf;
    int done_q = (m == 0 || nq == 0 || (NO_HIST && !c->small));
    pl->nq = nq;
    pl->bits = 16;
    for (int k = 0; k < nq; k++) q[k] = NAN;
    if (!done_q && c->small) {
        pgfp_select_small(c, pl, qs, m, q);
        TM_LAP(PGFP_TM_SELECT);
        done_q = 1;
    }
    int redo = !done_q && pgfp_plan_first(c, pl, qs, m, q) < 0;
    c->cmd = 0;
    for (;;) {
        barrier(c);                                       /* A */
        TM_LAP(c->cmd == 1 ? PGFP_TM_REFINE : PGFP_TM_PLAN); /* a refinement ends at A */
        if (done_q) c->cmd = 0;
        else if (redo) { /* a wanted rank in an edge bin: pass 1 again over the whole range */
            redo = 0;
            c->cmd = 3;
            c->dsh = DSH_WHOLE;
            c->dlo = 0;
            c->hdig = c->vec ? dominant_digit(c) : ~0u;
            partial_init(&c->tot);
            if (c->hist64) memset(c->hist64, 0, sizeof(uint64_t) * HSTRIDE * (size_t)c->T);
        } else {
            if (c->cmd == 1) pgfp_plan_after_refine(c, pl, q);
            c->cmd = pgfp_plan_next(c, pl);
            if (c->cmd < 0) { c->cmd = 0; c->err = -2; done_q = 1; }
        }
        barrier(c);                                       /* B */
        TM_LAP(PGFP_TM_PLAN);
        int was = c->cmd;
        if (was == 0) break;
        if (was == 3) {
            pass1(c, 0);
            fold_dominant(c);
            TM_LAP(PGFP_TM_PASS1);
            TM_COUNT(PGFP_TM_NPASS1);
            pgfp_plan_first(c, pl, qs, m, q); /* no edge bins now */
            continue;
        }
        if (was == 1) TM_COUNT(PGFP_TM_NREFINE);
        quantile_pass(c, 0);
        if (was == 2) {
            barrier(c);
            TM_LAP(PGFP_TM_COLLECT);
            pgfp_select_groups(c, pl, q);
            TM_LAP(PGFP_TM_SELECT);
            return;
        }
    }
    if (!done_q) /* every key bit known from the histograms */
        for (int k = 0; k < nq; k++) if (pl->live[k]) q[k] = key_to_value(pl->prefix[k], c->dtype);
}


uint64_t pgfp_scratch_bound(uint64_t n, int dtype, int nthreads) {
    uint64_t T = nthreads < 1 ? 1 : (uint64_t)nthreads, ks = (uint64_t)key_size(dtype);
    if (n <= SMALL) /* every key, collected in pass 1 */
        return sizeof(ctx) + sizeof(plan) + WPT * sizeof(partial) + 2 * ks * (n + LANES) + SEL_BYTES;
    /* histograms (with 64-bit spill counters past FLUSH elements), the group table, and at
     * most one of: refinement histograms, or the key buffers of a collection */
    uint64_t per = n >= FLUSH ? 12 : 4, hist = T * HSTRIDE * per + HBINS;
    uint64_t refine = T * (uint64_t)PGFP_NQ_MAX * RSTRIDE * per, collect = 2 * ks * (CAP + LANES) + SEL_BYTES;
    return sizeof(ctx) + sizeof(plan) + T * WPT * sizeof(partial) + 64 + hist + (refine > collect ? refine : collect);
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
    uint64_t kbuf[2][STACK_KEYS + LANES];
    ctx *c = &cs;
    plan *pl = &pls;
    void *slots_raw = NULL; /* heap slots, before their alignment to 64 bytes */
    memset(c, 0, offsetof(ctx, tot));
    c->vec = pgfp_choose_path(&c->chunk, &c->match) != 0;
    c->nq = nq;
    c->data = data; c->n = n; c->dtype = dtype; c->T = T; c->W = WPT * T; c->small = small;
    c->esize = dtype == PGFP_F64 ? 8 : dtype == PGFP_F32 ? 4 : 2;
    c->nblocks = (n + BLOCK - 1) / BLOCK;
    key_limits(dtype, &c->kmin, &c->kmax);
    partial_init(&c->tot);
    int heap_slots = c->nblocks > 1, stack_keys = small && n <= STACK_KEYS;
    /* One block: it is the total (adding a block to a +0.0 total changes no bit: the
     * specification's sums and buckets never hold -0.0, as they start from +0.0). */
    if (heap_slots) {
        slots_raw = malloc(sizeof(partial) * (size_t)(c->nblocks < (uint64_t)c->W ? c->nblocks : (uint64_t)c->W) + 63);
        c->slots = slots_raw ? (partial *)(((uintptr_t)slots_raw + 63) & ~(uintptr_t)63) : NULL;
    } else c->slots = &c->tot;
    if (!c->slots) { rc = -2; goto done; }
    if (stack_keys) {
        c->buf = kbuf[0];
        c->tmp = kbuf[1];
    } else if (small) {
        size_t bytes = (size_t)key_size(dtype) * (n + LANES);
        c->buf = malloc(bytes);
        c->tmp = malloc(bytes);
        c->sel = malloc(SEL_BYTES);
        if (!c->buf || !c->tmp || !c->sel) { rc = -2; goto done; }
    } else { /* refinement histograms and collection buffers come when a pass needs them */
        c->hist = malloc(sizeof(uint32_t) * HSTRIDE * (size_t)T);
        c->tab = malloc(HBINS);
        if (!c->hist || !c->tab) { rc = -2; goto done; }
        if (n >= FLUSH && !(c->hist64 = calloc(HSTRIDE * (size_t)T, sizeof(uint64_t)))) { rc = -2; goto done; }
        if (dtype == PGFP_F64) digit_window(c);
        c->hdig = c->vec ? dominant_digit(c) : ~0u;
    }

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
    rc = c->err;
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
    free(slots_raw);
    if (!stack_keys) { free(c->buf); free(c->tmp); free(c->sel); }
    free(c->hist); free(c->rhist); free(c->hist64); free(c->rhist64); free(c->tab);
    return rc;
}
