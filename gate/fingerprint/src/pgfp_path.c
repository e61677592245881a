/* Which code path the fingerprint kernel runs on this CPU, and what a timing build
 * (-DPGFP_TIMING) recorded of the calling thread's last call. */
#include "pgfp_ctx.h"

#include <string.h>

/* 1 avx2, 2 neon, 0 portable: AVX2 when the CPU has it, checked at run time so that wheels
 * stay portable; NEON on aarch64, where it is always present; portable C otherwise. */
int pgfp_choose_path(chunk_fn *chunk, match_fn *match) {
    *chunk = pgfp_chunk_scalar;
    *match = pgfp_match_scalar;
#if defined(PGFP_X86)
    if (pgfp_cpu_has_avx2()) { *chunk = pgfp_chunk_avx2; *match = pgfp_match_avx2; return 1; }
#elif defined(PGFP_NEON)
    *chunk = pgfp_chunk_neon; *match = pgfp_match_neon; return 2;
#endif
    return 0;
}

const char *pgfp_path(void) {
    static const char *const names[] = {"portable", "avx2", "neon"};
    chunk_fn chunk;
    match_fn match;
    return names[pgfp_choose_path(&chunk, &match)];
}

#ifdef PGFP_TIMING
#include <time.h>
__thread double pgfp_tm[PGFP_TIMING_FIELDS]; /* per calling thread: calls stay thread-safe */

double pgfp_tm_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e9 * (double)t.tv_sec + (double)t.tv_nsec;
}
#endif

int pgfp_timing(double *ns, int n) {
#ifdef PGFP_TIMING
    int k = n < PGFP_TIMING_FIELDS ? n : PGFP_TIMING_FIELDS;
    if (!ns || k <= 0) return 0;
    memcpy(ns, pgfp_tm, sizeof(double) * (size_t)k);
    return k;
#else
    (void)ns; (void)n;
    return 0;
#endif
}
