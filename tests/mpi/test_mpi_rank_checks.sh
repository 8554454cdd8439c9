#!/usr/bin/env bash
# test_mpi_rank_checks.sh: the checks that keep data-parallel ranks from computing different
# runs, on cases no machine here can reach (tests/mpi/rank_checks.c makes them up under
# mpirun -np 3): a rank on the CPU beside GPU ranks, two ranks on one GPU (by index, and by
# UUID behind different indices), and ranks whose parameters drifted apart. Each must fail
# on every rank with rank 0's one line, naming the ranks and devices; the sound cases (a GPU
# each, all on the CPU, the same model) pass on every rank.
. "$(dirname "$0")/mpi_lib.sh"
: "${SK_RANK_CHECKS:?SK_RANK_CHECKS must name the rank_checks tool}"

timeout "$(hang_limit 60)" "${MPIRUN[@]}" -np 3 "$SK_RANK_CHECKS" > out.txt 2> err.txt ||
    { fail "rank_checks: exit $?: $(cat err.txt)"; finish; }
# verdict CASE REGEX: all 3 ranks printed CASE with the same verdict, which matches REGEX.
verdict() {
    local lines; lines=$(grep "^$1 rank " out.txt | sed 's/^[^ ]* rank [0-9]*: //' | sort -u)
    if [ "$(grep -c "^$1 rank " out.txt)" != 3 ]; then fail "$1: not every rank reported: $(grep "^$1 " out.txt)"
    elif [ "$(printf '%s\n' "$lines" | wc -l)" != 1 ]; then fail "$1: the ranks disagree: $lines"
    elif ! printf '%s\n' "$lines" | grep -Eq -- "$2"; then fail "$1: $lines"
    else note "$1: $lines"; fi
}
verdict own-gpus '^ok$'
verdict all-cpu '^ok$'
verdict cpu-beside-gpus '^\[.*\] rank 2 runs on cpu, rank 0 on cuda:0 \(Test GPU\): every rank must run the same backend'
verdict shared-gpu '^\[.*\] ranks 0 and 2 run on the same GPU \(cuda:0 \(Test GPU\), GPU-0{8}-0{4}-0{4}-0{4}-0{12}\): NCCL needs a GPU per rank'
verdict same-uuid '^\[.*\] ranks 0 and 1 run on the same GPU \(cuda:0 \(Test GPU\), GPU-0{8}-0{4}-0{4}-0{4}-0{11}7\)'
verdict same-model '^ok$'
verdict drifted-model '^\[.*\] rank 2 holds other parameters or optimizer state than rank 0 at step 30 \(crc32 1234abce vs 1234abcd\)'
finish
