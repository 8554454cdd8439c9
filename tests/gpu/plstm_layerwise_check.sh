# plstm_layerwise_check.sh: the body of test_plstm_layerwise.sh and test_plstm_cluster.sh (sourced
# by them after tests/cli/lib.sh, with impl set: persistent-layerwise for the layer-after-layer
# kernels with grid.sync, persistent-cluster for those with thread-block clusters). Holds them
# as the wavefront kernels are held:
#  1. against the CPU backend: the parity test's every case and random shape for the persistent
#     kernel in fp32 (CUDA cores), and in tf32 and bf16 on tensor cores, with each precision's
#     tolerances (test_cuda_parity.c; the random shapes in fp32 only on the emulated device), B =
#     11 among them (two batch groups of the tiles);
#  2. the graph test's persistent cases (test_cuda_graph.c): steps replayed as a captured CUDA
#     graph, eager and resumed from a checkpoint mid-run, bit-identical to one straight run
#     (determinism and bit-exact resume), and a non-finite step caught;
# every run named as those kernels (a backend they do not fit is refused, not run on the
# wavefront), so the comparisons are of them.
SK_PARITY_ONLY=$impl "$SK_BUILD_DIR/gpu_test_cuda_parity" > parity.log 2>&1 ||
    { tail -30 parity.log; fail "gpu_test_cuda_parity failed with --rnn-impl $impl"; }
runs=$(grep -c "streams \[.*--rnn-impl $impl " parity.log) others=$(grep -c 'streams \[.*--rnn-impl persistent ' parity.log)
[ "$runs" -gt 20 ] && [ "$others" = 0 ] && note "parity: $runs runs of --rnn-impl $impl against the CPU" ||
    fail "parity: $runs runs of --rnn-impl $impl, $others of the wavefront kernels"
grep -q 'B = 11' parity.log || fail "the two-group case did not run"
grep -q 'precision tf32, tensor cores' parity.log && grep -q 'precision bf16, tensor cores' parity.log ||
    fail "no tf32 or no bf16 run on tensor cores"
SK_GRAPH_ONLY=$impl "$SK_BUILD_DIR/gpu_test_cuda_graph" > graph.log 2>&1 ||
    { tail -30 graph.log; fail "gpu_test_cuda_graph failed with --rnn-impl $impl"; }
cases=$(grep -c "rnn-impl $impl\$" graph.log)
[ "$cases" = 2 ] && note "graph and resume: both persistent cases bit-identical, on --rnn-impl $impl" ||
    fail "graph: $cases cases of --rnn-impl $impl"
finish
