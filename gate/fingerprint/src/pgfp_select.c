/* Exact order statistics of collected integer keys (radix select). */
#include <string.h>

#include "pgfp_internal.h"

/* ---- MSD radix select on collected keys. Each level histograms one digit of the
 * current keys, finds the digit of every wanted rank, compacts the keys of those digit
 * groups (register write pointer, no read-modify-write chains), scatters the (few)
 * compacted keys into one segment per group and recurses into each group. The first
 * level of a large buffer uses a 12-bit digit (sign, exponent and a little mantissa, so
 * few keys survive), deeper levels 8 bits. rk: ranks sorted ascending, within [0, n);
 * hi: key bits still unresolved; sc: 2 x 4096 uint32 + 4096 bytes of scratch. ---- */
#define DEFINE_RSELECT(NAME, T)                                                         \
    void NAME(T *a, T *tmp, uint64_t n, int hi, const uint64_t *rk, int nr, T *out, uint32_t *sc) { \
        uint32_t h8[256], st8[256];                                                     \
        uint8_t gid8[256];                                                              \
        if (n <= 48) { /* small groups: insertion sort beats another histogram level */ \
            for (uint64_t i = 1; i < n; i++) {                                          \
                T x = a[i];                                                             \
                uint64_t j = i;                                                         \
                while (j > 0 && a[j - 1] > x) { a[j] = a[j - 1]; j--; }                 \
                a[j] = x;                                                               \
            }                                                                           \
            for (int k = 0; k < nr; k++) out[k] = a[rk[k]];                             \
            return;                                                                     \
        }                                                                               \
        while (hi > 0 && n > 1) {                                                       \
            int db = (sc && hi >= 12 && n >= 2048) ? 12 : (hi < 8 ? hi : 8), shift = hi - db; \
            uint32_t bins = 1u << db, mask = bins - 1;                                  \
            uint32_t *h = db == 12 ? sc : h8, *st = db == 12 ? sc + 4096 : st8;          \
            uint8_t *gid = db == 12 ? (uint8_t *)(sc + 8192) : gid8;                    \
            memset(h, 0, sizeof(uint32_t) * bins);                                      \
            for (uint64_t i = 0; i < n; i++) h[(a[i] >> shift) & mask]++;              \
            int dig[PGFP_NQ_MAX], gd[PGFP_NQ_MAX], ng = 0, k = 0;                       \
            uint32_t s = 0;                                                             \
            for (uint32_t d = 0; d < bins; d++) {                                       \
                st[d] = s;                                                              \
                s += h[d];                                                              \
                while (k < nr && rk[k] < s) {                                           \
                    dig[k++] = (int)d;                                                  \
                    if (ng == 0 || gd[ng - 1] != (int)d) gd[ng++] = (int)d;             \
                }                                                                       \
            }                                                                           \
            if (ng == 1 && h[gd[0]] == n) { hi = shift; continue; } /* one digit: next level */ \
            memset(gid, ng, bins);                                                      \
            uint32_t off[PGFP_NQ_MAX + 1], pos[PGFP_NQ_MAX + 1];                        \
            off[0] = 0;                                                                 \
            for (int g = 0; g < ng; g++) { gid[gd[g]] = (uint8_t)g; off[g + 1] = off[g] + h[gd[g]]; pos[g] = off[g]; } \
            uint64_t w = 0;                                                             \
            for (uint64_t i = 0; i < n; i++) { tmp[w] = a[i]; w += gid[(a[i] >> shift) & mask] < ng; } \
            for (uint64_t j = 0; j < w; j++) a[pos[gid[(tmp[j] >> shift) & mask]]++] = tmp[j]; \
            for (int g = 0, q = 0; g < ng; g++) {                                       \
                uint64_t lr[PGFP_NQ_MAX];                                               \
                int q0 = q;                                                             \
                while (q < nr && dig[q] == gd[g]) { lr[q - q0] = rk[q] - st[gd[g]]; q++; } \
                NAME(a + off[g], tmp + off[g], h[gd[g]], shift, lr, q - q0, out + q0, NULL); \
            }                                                                           \
            return;                                                                     \
        }                                                                               \
        for (int k = 0; k < nr; k++) out[k] = a[0];                                     \
    }
DEFINE_RSELECT(pgfp_rselect32, uint32_t)
DEFINE_RSELECT(pgfp_rselect64, uint64_t)
