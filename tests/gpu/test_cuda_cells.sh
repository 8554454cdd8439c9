#!/usr/bin/env bash
# test_cuda_cells.sh (label gpu): the GRU and the RNN (--cell gru, rnn; include/shakespeare/cell.h)
# on the CUDA backend through cuDNN (CUDNN_GRU, CUDNN_RNN_TANH), held as the LSTM is held, by the
# same tests under their hook SK_CELLS_ONLY=1:
#  1. test_cuda_parity.c: against the CPU backend, its fixed cases (dropout between layers on the
#     wavefront of chunks, weight drop, B = 1, T = 1, E > H) and a rank's share, in fp32 and tf32
#     with its tolerances; --rnn-impl persistent refused, saying why;
#  2. test_cuda_graph.c: the deferred step and its CUDA-graph replay bit-identical to the eager
#     ops, stop and resume through a new graph backend, a non-finite step caught;
#  3. test_cuda_sample.c: sampling (the host loop from cuDNN's logits: the fused kernel is the
#     LSTM's) draws the CPU's tokens from the same seeds.
# Skipped (77) where no GPU is usable.
. "$(dirname "$0")/../cli/lib.sh"

require_gpu
for t in parity graph sample; do
    SK_CELLS_ONLY=1 "$SK_BUILD_DIR/gpu_test_cuda_$t" > "$t.log" 2>&1 ||
        { tail -30 "$t.log"; fail "gpu_test_cuda_$t failed for the GRU and the RNN"; continue; }
    for cell in gru rnn; do
        n=$(grep -c "^$cell \|cell $cell " "$t.log")
        [ "$n" -gt 0 ] && note "$t: $n $cell runs" || fail "$t: no $cell run"
    done
done
grep -q 'persistent: .*lstm cell only' parity.log || fail "parity: --rnn-impl persistent with another cell not refused"
finish
