/* The same checks of templates/sm90/mma_sm90_maps.hip with its lookup
 * conversions (UQ_MMA_SUBNORMAL_OPERANDS 0, the fallback that keeps every
 * mma and multiply operand normal). */
#define UQ_MMA_SUBNORMAL_OPERANDS 0
#include "tests/templates/unit_mma_maps.c"
