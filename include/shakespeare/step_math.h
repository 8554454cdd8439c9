// step_math.h: the scalar formulas of a training step that the host (optim.c, the trainer)
// and the CUDA backend's device code must compute identically, in one __host__ __device__
// header (like hash.h), so that a clip scale or a non-finite test formed on the GPU is
// bitwise the one the CPU forms. Double arithmetic, IEEE division only (correctly rounded
// on both sides; nothing here can be contracted into an FMA).
// defines: sk_clip_scale_of, sk_mean_loss
#ifndef SHAKESPEARE_STEP_MATH_H
#define SHAKESPEARE_STEP_MATH_H

#include "shakespeare/hash.h" // SK_HOST_DEVICE

// The clip multiplier for a gradient of global norm `norm`: min(1, clip / (norm + 1e-6)),
// or 1 when clip <= 0 (optim.h's sk_clip_scale).
static inline SK_HOST_DEVICE float sk_clip_scale_of(double norm, double clip) {
    if (clip <= 0.0) return 1.0f;
    double scale = clip / (norm + 1e-6);
    return scale < 1.0 ? (float)scale : 1.0f;
}

// The training loss the trainer reports and checks: the mean over `rows` (B*len) of a
// loss sum, rounded to float once.
static inline SK_HOST_DEVICE float sk_mean_loss(double loss_sum, double rows) {
    return (float)(loss_sum / rows);
}

#endif
