# mpi_lib.sh: helpers for the multi-rank tests (sourced by tests/mpi/test_*.sh), on top of
# tests/cli/lib.sh. defines: MPIRUN (then -np N "$SK_TRAIN" ...), MODEL, TOL
# Skips (exit 77) with a message where the build has no MPI (tests.cmake sets SK_MPIEXEC).
. "$SK_SOURCE_DIR/tests/cli/lib.sh"
: "${SK_CKPT_DIFF:?SK_CKPT_DIFF must name the ckpt_diff tool}"
[ -n "${SK_MPIEXEC:-}" ] || skip "MPI is absent from this build (scripts/setup.sh installs OpenMPI; rebuild)"
# As root (CI containers) OpenMPI wants an explicit yes; -q keeps its own banners off stderr.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
MPIRUN=("$SK_MPIEXEC" -q --oversubscribe --allow-run-as-root --bind-to none)
# Global batch 8 (so 1, 2 and 4 ranks divide it), two layers, dropout on both sites, weight
# drop on W_hh (one mask per step, the same on every rank).
MODEL=(--embed-size 16 --hidden-size 32 --num-layers 2 --dropout 0.3 --weight-drop 0.25 --batch-size 8 --seq-length 16
       --device cpu --threads 1 --log-every 5)
# N ranks against one process, same global batch: only the order of the gradient sums differs
# (each rank's GEMM over its own rows, then the all-reduce), about 1e-7 relative per step, which
# 30 Adam steps grow to ~1e-6 in parameters and ~1e-5 in the carried cell state. Any real
# mistake (a wrong mask, a rank's gradient lost or counted twice, a 1/N scale) moves
# parameters by ~lr = 2e-3 per step, 20x above this bound.
TOL=1e-4
