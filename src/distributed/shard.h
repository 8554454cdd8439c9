// shard.h: what data-parallel training does with the communicator (comm.h), apart from the
// gradient all-reduce: check that every rank runs the same job, each on a device of its
// own, and holds the same model; reduce per-step scalars with every rank's failure; and
// move the carried LSTM state between one rank's streams and the global (L, B, H) layout
// that checkpoints hold.
// defines: sk_rank_identity, sk_shard_check_ranks, sk_rank_device, sk_shard_check_devices,
//          sk_shard_check_same, sk_shard_reduce, sk_shard_slice_state, sk_shard_gather_state
#ifndef SHAKESPEARE_SHARD_H
#define SHAKESPEARE_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "shakespeare/comm.h"
#include "shakespeare/status.h"

// What must be the same on every rank: the data (size and checksum of the token ids and
// of the vocabulary) and the options, as "name=value;" pairs so a difference can be named.
typedef struct {
    uint64_t n_chars;
    uint32_t data_crc;
    int32_t vocab_size;
    uint32_t vocab_crc;
    char data_path[256];
    char options[4096];
} sk_rank_identity;

// Collective. SK_ERR_MISMATCH on every rank when some rank's identity differs from rank
// 0's, the message naming the rank and the first difference.
sk_status sk_shard_check_ranks(sk_comm *c, const sk_rank_identity *mine, sk_error *err);

// Where a rank's backend runs (sk_backend's name, device and device_uuid).
typedef struct {
    char backend[16]; // "cpu" or "cuda"
    char device[128]; // "cpu", "cuda:1 (NVIDIA H100 80GB HBM3)"
    char uuid[48];    // the GPU's UUID; "" on the CPU
} sk_rank_device;

// Collective. SK_ERR_MISMATCH on every rank when some rank runs another backend than rank 0
// (a rank on the CPU beside GPU ranks: their gradient sums would be different collectives,
// MPI's against NCCL's) or two ranks share one GPU (NCCL needs a GPU per rank).
sk_status sk_shard_check_devices(sk_comm *c, const sk_rank_device *mine, sk_error *err);

// Collective. SK_ERR_MISMATCH on every rank when some rank's crc (of its parameters and
// optimizer slots at optimizer step `step`) differs from rank 0's, naming the first such rank.
sk_status sk_shard_check_same(sk_comm *c, uint32_t crc, int64_t step, sk_error *err);

// Collective. Sums v[0..n) over ranks, and with it whether each rank's st failed: when one
// did, every rank returns that rank's status and message (sk_comm_agree).
sk_status sk_shard_reduce(sk_comm *c, sk_status st, double *v, int n, sk_error *err);

// local (L, b, H) = global (L, B, H)[:, off:off+b, :].
void sk_shard_slice_state(const float *global, float *local, int L, int B, int off, int b, int H);

// Collective. Every rank's local (L, b, H) into global (L, B, H) on root, rank r's streams
// at r*b; scratch: (size, L, b, H) floats, used on root only.
sk_status sk_shard_gather_state(sk_comm *c, const float *local, float *scratch, float *global, int L, int B, int b,
                                int H, int root, sk_error *err);

#endif
