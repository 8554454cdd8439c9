#!/usr/bin/env bash
# test_plstm_cluster.sh (label gpu): the persistent LSTM's layer-after-layer kernels with one
# thread-block cluster a batch group (kernels/lstm_layerwise_cluster_kernels.cuh,
# --rnn-impl persistent-cluster) against the CPU backend, in graph replay and resume
# (plstm_layerwise_check.sh says what is held). Skipped (77) where no GPU is usable, or where
# the device has no thread-block clusters (compute capability below 9.0).
. "$(dirname "$0")/../cli/lib.sh"

require_gpu
impl=persistent-cluster
if ! "$SK_TRAIN" --data .gpu_probe.txt --out-dir .cluster_probe --max-iters 1 --device cuda --rnn-impl persistent-cluster \
    --embed-size 8 --hidden-size 16 --num-layers 1 --batch-size 2 --seq-length 8 > .cluster_probe.out 2>&1; then
    grep -q 'compute capability 9.0' .cluster_probe.out && skip "$(tail -n 1 .cluster_probe.out)"
fi
. "$(dirname "$0")/plstm_layerwise_check.sh"
