/* Quantile planning of the fingerprint kernel (thread 0, between the driver's passes):
 * which ranks are wanted, which key prefixes (groups) hold them, what the next pass over
 * the data looks for (refine a digit, or collect the candidates), and the final exact
 * selection. See the driver (pgfp.c) for the passes themselves. */
#include "pgfp_ctx.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* T per-thread histograms (stride apart, 64-bit spill counters or NULL) read as one. */
typedef struct {
    const uint32_t *h32;
    const uint64_t *h64;
    uint64_t stride;
    int T;
    const uint64_t *blk; /* counts of the blocks of 256 bins, or NULL */
} hview;

/* Count of bins [lo, hi) over every thread (plain loops the compiler vectorizes). */
static uint64_t hsum(const hview *v, uint64_t lo, uint64_t hi) {
    uint64_t s = 0;
    for (int t = 0; t < v->T; t++) {
        const uint32_t *h = v->h32 + (uint64_t)t * v->stride;
        for (uint64_t d = lo; d < hi; d++) s += h[d];
        if (v->h64) {
            const uint64_t *w = v->h64 + (uint64_t)t * v->stride;
            for (uint64_t d = lo; d < hi; d++) s += w[d];
        }
    }
    return s;
}

/* The bin holding rank r: from bin *d with *below elements under it, skip whole blocks of
 * 256 bins while the rank lies past them, then bins. Leaves *d at r's bin, *below the count
 * under it; a search for a larger rank may go on from there. */
static void hfind(const hview *v, uint64_t r, uint64_t *d, uint64_t *below) {
    for (;;) {
        uint64_t e = (*d & ~(uint64_t)255) + 256, s = v->blk && !(*d & 255) ? v->blk[*d >> 8] : hsum(v, *d, e);
        if (r < *below + s) break;
        *below += s;
        *d = e;
    }
    for (;;) {
        uint64_t h = hsum(v, *d, *d + 1);
        if (r < *below + h) return;
        *below += h;
        ++*d;
    }
}

/* Raw bit prefix of a key prefix of b bits: positive keys have the top bit set (flip it),
 * negative ones are the complement of their bits. */
static uint64_t raw_prefix(uint64_t p, int b) {
    uint64_t top = 1ull << (b - 1);
    return (p & top) ? p ^ top : p ^ (top | (top - 1));
}

static void set_matcher(matcher *mt, const ctx *c, int kb) {
    int b = kb - c->shift;
    mt->shift = c->shift;
    mt->ng = c->ng;
    mt->tab = c->tab;
    mt->nraw = c->ng; /* distinct groups have distinct raw prefixes */
    mt->nheavy = 0;
    for (int g = 0; g < c->ng; g++) {
        mt->gp[g] = c->gprefix[g];
        mt->raw[g] = raw_prefix(c->gprefix[g], b);
    }
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
    if (b > 32 || mt->nraw > 16) return;
    /* raw prefixes of at most 32 bits: look for a multiplier that gives each its own bucket */
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

/* Groups = distinct prefixes of the live quantiles. */
static void set_groups(ctx *c, plan *pl) {
    int kb = key_bits(c->dtype);
    c->ng = 0;
    for (int k = 0; k < pl->nq; k++) {
        if (!pl->live[k]) continue;
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

/* Regroup after prefixes changed; tq[t][k]: thread t's count of quantile k's new group. */
static void regroup(ctx *c, plan *pl, uint64_t (*tq)[PGFP_NQ_MAX]) {
    set_groups(c, pl);
    for (int t = 0; t < c->T; t++)
        for (int k = 0; k < pl->nq; k++)
            if (pl->live[k]) pl->tcount[t][pl->grp[k]] = tq[t][k];
}

/* Raw bits of a (non-zero) key: the inverse of key32/key64. */
static uint64_t key_raw(uint64_t key, int kb) {
    uint64_t top = 1ull << (kb - 1), all = top | (top - 1);
    return (key & top) ? key ^ top : ~key & all;
}

/* Group of a key, or -1 (the key is zero, +-max or in no group). */
static int group_of(const ctx *c, uint64_t key, uint64_t zkey) {
    uint64_t pre = key >> c->shift;
    if (!ranked(c, key, zkey) || !c->tab[key >> (key_bits(c->dtype) - 16)]) return -1;
    for (int g = 0; g < c->ng; g++) if (c->gprefix[g] == pre) return g;
    return -1;
}

/* Before a refinement pass: the heavy value of each group of at least max(n/128, 4096)
 * members, if it has one. Sample: up to 32 members from 64 chunks spread over the data;
 * a value that fills most of its group fills most of the sample, so the sample's most
 * frequent key is kept when it appears at least 8 times. A wrong guess costs speed only:
 * the pass counts exactly how many elements equal the value. */
static void find_heavy(ctx *c, const uint64_t *gcount) {
    enum { NS = 32, NCHUNK = 64, MINREP = 8 };
    int kb = key_bits(c->dtype), want = 0, ns[NG];
    uint64_t hmin = c->n >> 7 > 4096 ? c->n >> 7 : 4096, zkey = 1ull << (kb - 1), smp[NG][NS];
    for (int g = 0; g < c->ng; g++) { ns[g] = gcount[g] >= hmin ? 0 : NS; want += ns[g] == 0; }
    if (!want || !c->vec) return; /* the portable matcher emits heavy values like any member */
    uint64_t nch = (c->n + SUB - 1) / SUB, step = nch / NCHUNK ? nch / NCHUNK : 1;
    for (uint64_t ch = 0; ch < nch && want; ch += step) {
        uint64_t e = (ch + 1) * SUB < c->n ? (ch + 1) * SUB : c->n;
        for (uint64_t i = ch * SUB; i < e && want; i++) {
            uint64_t key = load_key(c, i);
            int g = group_of(c, key, zkey);
            if (g < 0 || ns[g] == NS) continue;
            smp[g][ns[g]++] = key;
            want -= ns[g] == NS;
        }
    }
    matcher *mt = &c->mt;
    for (int g = 0; g < c->ng; g++) {
        if (gcount[g] < hmin || ns[g] < MINREP) continue;
        uint64_t *v = smp[g], best = 0;
        int n = ns[g], run = 0, top = 0;
        for (int i = 1; i < n; i++) { /* insertion sort of <= 32 keys */
            uint64_t x = v[i];
            int j = i;
            for (; j > 0 && v[j - 1] > x; j--) v[j] = v[j - 1];
            v[j] = x;
        }
        for (int i = 0; i < n; i++) {
            run = (i > 0 && v[i] == v[i - 1]) ? run + 1 : 1;
            if (run > top) { top = run; best = v[i]; }
        }
        if (top < MINREP) continue;
        c->hgrp[mt->nheavy] = g;
        c->hkey[mt->nheavy] = best;
        mt->hraw[mt->nheavy++] = key_raw(best, kb);
    }
}

/* Decide the next pass; returns cmd (0 = finished, keys in pl->prefix are complete). */
int pgfp_plan_next(ctx *c, plan *pl) {
    int kb = key_bits(c->dtype);
    if (pl->bits == kb || c->ng == 0) return 0;
    uint64_t cand = 0, gcount[NG];
    for (int k = 0; k < pl->nq; k++) if (pl->live[k]) gcount[pl->grp[k]] = pl->count[k];
    for (int g = 0; g < c->ng; g++) cand += gcount[g];
    if (cand <= CAP) {
        size_t bytes = (size_t)key_size(c->dtype) * (cand + LANES);
        if (!(c->buf = malloc(bytes)) || !(c->tmp = malloc(bytes)) || !(c->sel = malloc(SEL_BYTES))) return -1;
        uint64_t off = 0;
        for (int g = 0; g < c->ng; g++) {
            c->gbase[g] = off;
            for (int t = 0; t < c->T; t++) { c->goff[t][g] = off; off += pl->tcount[t][g]; }
        }
        c->bufn = off;
        return 2;
    }
    /* float32: 16 bits finish the key in one pass. float64 has 45 bits left (48 after a
     * whole-range pass 1): 12-bit digits keep their histogram in cache, and the pass after
     * is a collection either way. */
    int rb = kb == 64 ? 12 : RBITS;
    c->nbits = kb - pl->bits < rb ? kb - pl->bits : rb;
    if (!c->rhist) {
        size_t bins = (size_t)c->nq * RSTRIDE * (size_t)c->T;
        if (!(c->rhist = malloc(sizeof(uint32_t) * bins))) return -1;
        if (c->n >= FLUSH && !(c->rhist64 = calloc(bins, sizeof(uint64_t)))) return -1;
    }
    find_heavy(c, gcount);
    return 1;
}

void pgfp_plan_after_refine(ctx *c, plan *pl, double *q) {
    uint64_t nb = 1u << c->nbits, tq[64][PGFP_NQ_MAX];
    int dshift = c->shift - c->nbits;
    for (int k = 0; k < pl->nq; k++) {
        if (!pl->live[k]) continue;
        int g = pl->grp[k];
        hview v = {c->rhist + (uint64_t)g * RSTRIDE, c->rhist64 ? c->rhist64 + (uint64_t)g * RSTRIDE : NULL,
                   (uint64_t)c->nq * RSTRIDE, c->T, NULL};
        uint64_t d = 0, below = 0;
        hfind(&v, pl->rank[k], &d, &below);
        pl->rank[k] -= below;
        pl->count[k] = hsum(&v, d, d + 1);
        pl->prefix[k] = (pl->prefix[k] << c->nbits) | d;
        for (int t = 0; t < c->T; t++) tq[t][k] = hget(v.h32, v.h64, (uint64_t)t * v.stride + d);
        for (int h = 0; h < c->mt.nheavy; h++) { /* a bin holding nothing but the heavy value */
            uint64_t e = 0;
            if (c->hgrp[h] != g || ((c->hkey[h] >> dshift) & (nb - 1)) != d) continue;
            for (int t = 0; t < c->T; t++) e += c->hcnt[t][h];
            if (e == pl->count[k]) { pl->live[k] = 0; q[k] = key_to_value(c->hkey[h], c->dtype); }
        }
    }
    pl->bits += c->nbits;
    regroup(c, pl, tq);
}

/* The live ranks among quantiles with want[k] set, ascending (ord: their indices). */
static int sorted_ranks(const plan *pl, const int *want, int *ord) {
    int nr = 0;
    for (int k = 0; k < pl->nq; k++) {
        if (!want[k]) continue;
        int j = nr++;
        for (; j > 0 && pl->rank[ord[j - 1]] > pl->rank[k]; j--) ord[j] = ord[j - 1];
        ord[j] = k;
    }
    return nr;
}

/* Exact keys of the wanted ranks among the n keys at buf[at...] (all sharing their top
 * kb - hi bits) by radix select. */
static void select_keys(ctx *c, plan *pl, const int *want, uint64_t at, uint64_t n, int hi, double *q) {
    int ord[PGFP_NQ_MAX], nr = sorted_ranks(pl, want, ord);
    uint64_t rs[PGFP_NQ_MAX] = {0}, keys[PGFP_NQ_MAX];
    if (nr == 0) return;
    for (int i = 0; i < nr; i++) rs[i] = pl->rank[ord[i]];
    if (key_bits(c->dtype) == 64) pgfp_rselect64((uint64_t *)c->buf + at, (uint64_t *)c->tmp + at, n, hi, rs, nr, keys, c->sel);
    else {
        uint32_t k32[PGFP_NQ_MAX];
        pgfp_rselect32((uint32_t *)c->buf + at, (uint32_t *)c->tmp + at, n, hi, rs, nr, k32, c->sel);
        for (int i = 0; i < nr; i++) keys[i] = k32[i];
    }
    for (int i = 0; i < nr; i++) q[ord[i]] = key_to_value(keys[i], c->dtype);
}

/* After a collection: each group's region, with its known top bits left out of the select. */
void pgfp_select_groups(ctx *c, plan *pl, double *q) {
    for (int g = 0; g < c->ng; g++) {
        int want[PGFP_NQ_MAX];
        uint64_t n = 0;
        for (int k = 0; k < pl->nq; k++) {
            want[k] = pl->live[k] && pl->grp[k] == g;
            if (want[k]) n = pl->count[k];
        }
        select_keys(c, pl, want, c->gbase[g], n, key_bits(c->dtype) - pl->bits, q);
    }
}

static uint64_t rank_of(double q, uint64_t m) {
    uint64_t r = (uint64_t)floor(q * (double)(m - 1));
    return r > m - 1 ? m - 1 : r;
}

/* Wanted ranks among the m finite values -> ranks among the non-zero ones; zeros sit
 * right after the nneg negative values. Returns how many stay live. */
static int map_ranks(plan *pl, const double *qs, uint64_t m, uint64_t zeros, uint64_t nneg, double *q) {
    int live = 0;
    for (int k = 0; k < pl->nq; k++) {
        uint64_t r = rank_of(qs[k], m);
        pl->live[k] = r < nneg || r >= nneg + zeros;
        if (!pl->live[k]) { q[k] = 0.0; continue; }
        pl->rank[k] = r < nneg ? r : r - zeros;
        live++;
    }
    return live;
}

/* float64's in-window digit d (see dig64) -> the key prefix of 32 - dsh bits it stands for. */
static uint64_t dig64_prefix(const ctx *c, uint32_t d) {
    int b = 31 - c->dsh; /* bits of t */
    uint64_t md = (d & 0x8000u) ? d - 0x8000u : d ^ 0x7fffu, t = c->dlo + md - 1, all = (1ull << b) - 1;
    return (d & 0x8000u) ? (1ull << b) | t : ~t & all;
}

/* Pass-1 histogram (all threads) -> each live rank's digit, rank inside its bin, and the
 * bin's per-thread counts. One sweep over the bins, ranks in ascending order. Returns -1
 * where a float64 rank lands in an edge bin (then pass 1 runs again, over the whole range). */
int pgfp_plan_first(ctx *c, plan *pl, const double *qs, uint64_t m, double *q) {
    uint64_t blk[HBINS / 256], nneg = 0;
    hview v = {c->hist, c->hist64, HSTRIDE, c->T, NULL};
    for (uint64_t b = 0; b < HBINS / 256; b++) blk[b] = hsum(&v, b * 256, b * 256 + 256);
    for (uint64_t b = 0; b < HBINS / 512; b++) nneg += blk[b]; /* negatives: the bins below +0's digit */
    v.blk = blk;
    if (!map_ranks(pl, qs, m, c->tot.zero, nneg, q)) { c->ng = 0; return 0; }
    int ord[PGFP_NQ_MAX], nr = sorted_ranks(pl, pl->live, ord), f64 = c->dtype == PGFP_F64;
    uint64_t below = 0, d = 0, tq[64][PGFP_NQ_MAX];
    for (int j = 0; j < nr; j++) { /* ascending ranks: each search goes on from the last bin */
        int k = ord[j];
        hfind(&v, pl->rank[k], &d, &below);
        if (f64 && dig64_edge((uint32_t)d)) return -1;
        pl->rank[k] -= below;
        pl->prefix[k] = f64 ? dig64_prefix(c, (uint32_t)d) : d;
        pl->count[k] = hsum(&v, d, d + 1);
        for (int t = 0; t < c->T; t++) tq[t][k] = hget(v.h32, v.h64, (uint64_t)t * HSTRIDE + d);
    }
    if (f64) pl->bits = 32 - c->dsh;
    regroup(c, pl, tq);
    return 0;
}

/* Small inputs: every non-zero finite key is in the buffer. */
void pgfp_select_small(ctx *c, plan *pl, const double *qs, uint64_t m, double *q) {
    uint64_t nneg = 0, n = c->bufn;
    if (key_bits(c->dtype) == 64) {
        const uint64_t *k = c->buf;
        for (uint64_t i = 0; i < n; i++) nneg += k[i] >> 63 == 0;
    } else {
        const uint32_t *k = c->buf;
        uint32_t top = c->dtype == PGFP_F32 ? 0x80000000u : 0x8000u;
        for (uint64_t i = 0; i < n; i++) nneg += k[i] < top;
    }
    if (map_ranks(pl, qs, m, c->tot.zero, nneg, q)) select_keys(c, pl, pl->live, 0, n, key_bits(c->dtype), q);
}

