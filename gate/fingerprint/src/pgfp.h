/* parity-gate fingerprint kernel: public interface (C99, no dependencies).
 * The NumPy reference gate/fingerprint/reference.py is the specification;
 * this kernel reproduces it bit for bit. */
#ifndef PGFP_H
#define PGFP_H

#include <stdint.h>

#define PGFP_WIDTH 256
#define PGFP_NQ_MAX 16

enum { PGFP_F16 = 0, PGFP_BF16 = 1, PGFP_F32 = 2, PGFP_F64 = 3 };

typedef struct {
    uint64_t nan, posinf, neginf, zero;
    double min, max;             /* over finite values; NaN when none */
    double sum, sumsq, sumabs;
    double q[PGFP_NQ_MAX];       /* NaN when no finite value */
    double sketch[PGFP_WIDTH];
} pgfp_result;

/* Fingerprint n contiguous elements of the given dtype at data.
 * qs: nq quantile probabilities in [0, 1]; nthreads: worker threads (<= 1: none).
 * Returns 0, -1 on bad arguments, -2 when scratch memory cannot be allocated.
 * Thread-safe: no global mutable state. */
int pgfp_fingerprint(const void *data, uint64_t n, int dtype, const double *qs, int nq,
                     int nthreads, pgfp_result *out);

/* Scratch bytes the call above allocates at most, for reporting. */
uint64_t pgfp_scratch_bound(uint64_t n, int dtype, int nthreads);

/* The code path a call takes on this CPU: "avx2", "neon" or "portable" (a static string). */
const char *pgfp_path(void);

/* Builds with -DPGFP_TIMING (benchmarks only): nanoseconds spent in each pass of the last
 * call made on this thread, PGFP_TIMING_FIELDS values in the order of the enum below;
 * returns how many were written (0 in other builds). */
enum { PGFP_TM_PASS1, PGFP_TM_PLAN, PGFP_TM_REFINE, PGFP_TM_COLLECT, PGFP_TM_SELECT, PGFP_TM_NREFINE, PGFP_TM_NPASS1 };
#define PGFP_TIMING_FIELDS 7
int pgfp_timing(double *ns, int n);

#endif
