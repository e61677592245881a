/* Helpers shared by the NEON fused pass (pgfp_neon.c) and the NEON matcher
 * (pgfp_neon_match.c). A group of 8 lanes is two registers of 4 x 32 bits here (values,
 * keys, digits, masks), or four of 2 x 64 bits (float64 values, sums, the sketch). */
#ifndef PGFP_NEON_H
#define PGFP_NEON_H

#include "pgfp_internal.h"

#ifdef PGFP_NEON
#include <arm_neon.h>

/* Left-pack table: for a 4-bit lane mask, the TBL byte indices that move the selected
 * 32-bit lanes to the front (the other positions: lane 0 again). NEON has no 32-bit lane
 * permute from a register, so the mask picks a byte shuffle. */
#define PGFP_POP4(m) (((m) & 1) + ((m) >> 1 & 1) + ((m) >> 2 & 1) + ((m) >> 3 & 1))
#define PGFP_LANE(m, j, at) \
    ((((m) >> (j)) & 1) && PGFP_POP4((m) & ((1u << (j)) - 1)) == (at) ? 0x03020100u + 0x04040404u * (j) : 0u)
#define PGFP_AT(m, at) (PGFP_LANE(m, 0, at) | PGFP_LANE(m, 1, at) | PGFP_LANE(m, 2, at) | PGFP_LANE(m, 3, at))
#define PGFP_ROW(m) {PGFP_AT(m, 0), PGFP_AT(m, 1), PGFP_AT(m, 2), PGFP_AT(m, 3)}
static const uint32_t PACK4[16][4] = {
    PGFP_ROW(0), PGFP_ROW(1), PGFP_ROW(2), PGFP_ROW(3), PGFP_ROW(4), PGFP_ROW(5), PGFP_ROW(6), PGFP_ROW(7),
    PGFP_ROW(8), PGFP_ROW(9), PGFP_ROW(10), PGFP_ROW(11), PGFP_ROW(12), PGFP_ROW(13), PGFP_ROW(14), PGFP_ROW(15)};
static const unsigned char POP4[16] = {0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4};
#undef PGFP_ROW
#undef PGFP_AT
#undef PGFP_LANE
#undef PGFP_POP4

/* 4-bit mask of a 32-bit lane mask register (all-ones or zero lanes). */
static inline unsigned mask4(uint32x4_t m) {
    const uint32x4_t bit = {1, 2, 4, 8};
    return vaddvq_u32(vandq_u32(m, bit));
}

/* 2-bit mask of a 64-bit lane mask register, as the 4-bit mask of its 32-bit halves. */
static inline unsigned mask2x(uint64x2_t m) {
    const uint64x2_t bit = {3, 12};
    return (unsigned)vaddvq_u64(vandq_u64(m, bit));
}

/* The 32-bit lanes of v selected by mask m (4 bits), moved to the front. */
static inline uint32x4_t pack4(uint32x4_t v, unsigned m) {
    return vreinterpretq_u32_u8(vqtbl1q_u8(vreinterpretq_u8_u32(v), vld1q_u8((const uint8_t *)PACK4[m])));
}

/* Lanes 0..3 of 8: the low 32-bit halves of two 64-bit lane registers (masks, prefixes). */
static inline uint32x4_t narrow2(uint64x2_t a, uint64x2_t b) {
    return vuzp1q_u32(vreinterpretq_u32_u64(a), vreinterpretq_u32_u64(b));
}
#endif

#endif
