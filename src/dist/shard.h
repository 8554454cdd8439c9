// shard.h: what data-parallel training does with the communicator (comm.h), apart from the
// gradient all-reduce: check that every rank runs the same job, reduce per-step scalars
// with every rank's failure, and move the carried LSTM state between one rank's streams
// and the global (L, B, H) layout that checkpoints hold.
// defines: sk_rank_identity, sk_shard_check_ranks, sk_shard_reduce, sk_shard_slice_state,
//          sk_shard_gather_state
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
    char options[1536];
} sk_rank_identity;

// Collective. SK_ERR_MISMATCH on every rank when some rank's identity differs from rank
// 0's, the message naming the rank and the first difference.
sk_status sk_shard_check_ranks(sk_comm *c, const sk_rank_identity *mine, sk_error *err);

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
