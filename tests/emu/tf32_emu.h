// tf32_emu.h: an fp32 operand as a TF32 tensor core reads it, for the emulated cuBLAS and
// cuDNN (cublas_emu.cpp, cudnn_emu_lstm.cpp) when their math mode permits TF32.
// defines: sk_emu_tf32
#ifndef SK_TESTS_TF32_EMU_H
#define SK_TESTS_TF32_EMU_H

#include <stdint.h>
#include <string.h>

#include "mma_ptx.h"

// cvt.rna.tf32.f32 (10 mantissa bits, to nearest, ties away from zero) for finite values;
// NaN and infinity unchanged. sk_ptx_tf32_rna alone is for finite inputs: it would turn the
// all-ones NaN that cudaMalloc's emulation fills memory with into +0 and so hide a read of
// memory nobody wrote.
static inline float sk_emu_tf32(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    if ((u & 0x7f800000u) == 0x7f800000u) return v;
    return sk_ptx_from_u32(sk_ptx_tf32_rna(v));
}

#endif
