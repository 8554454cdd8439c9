// step_graph.h: CUDA graphs of the CUDA backend's training step (private to src/cuda/). One
// graph per (window length, state slot), captured from the stream the first time that key
// is seen and replayed with cudaGraphLaunch after. The slot is the backend's ping-pong
// state buffer that the step reads (it writes the other one), so the captured pointers are
// right for every replay of that key. The first step of a key runs eagerly (a warm-up:
// libraries initialize lazily on their first call, which a capture must not contain), the
// second is captured and launched, later ones replay.
// defines: sk_step_graphs, sk_step_enqueue_fn, sk_step_graphs_create, sk_step_graphs_launch,
//          sk_step_graphs_take_notice, sk_step_graphs_launches, sk_step_graphs_free
#ifndef SK_STEP_GRAPH_H
#define SK_STEP_GRAPH_H

#include <stdint.h>

#include <cuda_runtime_api.h>

extern "C" {
#include "shakespeare/status.h"
}

typedef struct sk_step_graphs sk_step_graphs;

// Enqueues one step's work on the stream being captured; only enqueues (no host
// synchronization, no allocation, nothing that reads host memory when it runs).
typedef sk_status (*sk_step_enqueue_fn)(void *ctx, sk_error *err);

// Room for windows of 1..T steps (nothing is captured yet). eager_fallback: a failed
// capture runs that step eagerly instead and turns the table off (every later step eager,
// sk_step_graphs_take_notice says why once); 0: the failure is returned.
sk_status sk_step_graphs_create(int T, int eager_fallback, sk_step_graphs **out, sk_error *err);
// Launches the graph of (len, slot) on stream, capturing it from enqueue(ctx) first if it
// does not exist yet; the key's first step is enqueue(ctx) itself, eagerly. A failed capture
// leaves the stream usable and keeps no graph for the key; it returns SK_ERR_DEVICE with the
// reason (the failing call inside the step, or the capture's own error), or with
// eager_fallback runs the step eagerly. Nothing of a failed capture has run on the device,
// and the enqueue function reads nothing per step from the host, so the eager step computes
// what the graph would have.
sk_status sk_step_graphs_launch(sk_step_graphs *g, int len, int slot, cudaStream_t stream, sk_step_enqueue_fn enqueue,
                                void *ctx, sk_error *err);
// The reason of the capture failure that turned the table off, once, then NULL: a line
// for the user. NULL on a NULL table.
const char *sk_step_graphs_take_notice(sk_step_graphs *g);
// How many steps were launched as graphs (captured or replayed; not the warm-ups).
int64_t sk_step_graphs_launches(const sk_step_graphs *g);
// Safe on NULL.
void sk_step_graphs_free(sk_step_graphs *g);

#endif
