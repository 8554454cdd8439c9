// tf32_emu.h: an fp32 operand as a TF32 tensor core reads it, for the emulated cuBLAS and
// cuDNN (cublas_emu.cpp, cudnn_emu_lstm.cpp) when their math mode permits TF32.
// defines: sk_emu_tf32
#ifndef SK_TESTS_TF32_EMU_H
#define SK_TESTS_TF32_EMU_H

#include "mma_ptx.h"

// cvt.rna.tf32.f32 (10 mantissa bits, to nearest, ties away from zero; NaN and infinity
// unchanged: mma_ptx.h's sk_ptx_tf32_rna), as a float.
static inline float sk_emu_tf32(float v) { return sk_ptx_from_u32(sk_ptx_tf32_rna(v)); }

#endif
