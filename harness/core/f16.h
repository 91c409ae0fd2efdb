/*
** harness/core/f16.h - an IEEE f16 (little-endian uint16_t, as in safetensors
** and GGUF files) to fp32, exactly, subnormals included: shared by half.c and
** the codebook types' loops (iquant.c), which half.c calls.
*/
#ifndef LX_F16_H
#define LX_F16_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float lx_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 31, m = h & 0x3ff, bits;
    float f;
    if (e == 0) {       /* zero or subnormal: m · 2^-24, exact */
        f = ldexpf((float)m, -24);
        return sign ? -f : f;
    }
    bits = e == 31 ? sign | 0x7F800000u | m << 13 : sign | (e - 15 + 127) << 23 | m << 13;
    memcpy(&f, &bits, 4);
    return f;
}

#endif
