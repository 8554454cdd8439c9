#!/usr/bin/env bash
# test_gpu_graph_resume.sh (label gpu): --cuda-graph on through the real binaries:
#   - an N-step run with graphs is bit-identical to one without (--cuda-graph off), with
#     --dropout 0 and 0.3 between two layers, across an epoch boundary and evaluations
#     (tensor bytes of last.safetensors and best.safetensors);
#   - stopped after N/2 steps and resumed with --init-from to N, with graphs, it ends
#     bit-identical to the uninterrupted N (the comparison can fail: N/2 differs from N);
#   - a forced non-finite step (test_divergence.sh's: SHAKESPEARE_TEST_POISON_STEP=8 makes a
#     parameter NaN before step 8, on any device, wherever its rounding falls) with graphs and
#     read-backs every 10 steps names step 8, as the eager run reading back every step does, and
#     keeps the last checkpoint written before it (every 3 steps here: step 6);
#   - on the emulated device, whose captures SK_EMU_UNCAPTURABLE=1 breaks as an uncapturable
#     library call would (tests/emu/cudart_emu.cpp): --cuda-graph try says so in one note and
#     ends bit-identical to the eager run, and --cuda-graph on stops with one error line.
# N = 50; on the emulated device, where each step costs its fibers, 16 on half the text: still
# across an epoch boundary (about 10 windows an epoch) with evaluations before and after the stop.
# Skipped (77) where no GPU is usable.
. "$(dirname "$0")/../cli/lib.sh"

if [ -n "${SK_EMULATED_DEVICE:-}" ]; then
    lines=30 N=16 eval=4
else
    lines=60 N=50 eval=10
fi
half=$((N / 2))
gen_text text.txt "$lines" 7 # ~50 characters a line: 60 lines make about 20 windows of 4 x 32 an epoch
require_gpu

for dropout in 0 0.3; do
    C=("$SK_TRAIN" --data text.txt --embed-size 16 --hidden-size 72 --num-layers 2 --dropout "$dropout"
       --batch-size 4 --seq-length 32 --device cuda --max-epochs 0 --warmup-iters 5 --eval-every "$eval"
       --log-every 5 --lr 0.004)
    d=d$dropout
    expect_ok "${C[@]}" --out-dir "$d/eager" --max-iters "$N" --cuda-graph off || continue
    expect_ok "${C[@]}" --out-dir "$d/graph" --max-iters "$N" --cuda-graph on || continue
    grep -q 'backend=cuda' .ok.out || fail "dropout $dropout: the run did not use the GPU: $(tail -n 1 .ok.out)"
    for f in last best; do
        same_tensors "$d/eager/$f.safetensors" "$d/graph/$f.safetensors" &&
            note "dropout $dropout: $f.safetensors with graphs == without, bit for bit" ||
            fail "dropout $dropout: $f.safetensors with graphs differs from the eager run's"
    done
    expect_ok "${C[@]}" --out-dir "$d/b" --max-iters "$half" --cuda-graph on || continue
    mkdir "$d/bhalf" && cp "$d"/b/last.safetensors "$d/bhalf/"
    expect_ok "${C[@]}" --out-dir "$d/b" --max-iters "$N" --cuda-graph on --init-from "$d/b/last.safetensors" || continue
    [ "$(state_step "$d/b/last.safetensors")" = "$N" ] || fail "dropout $dropout: the resumed run is not at step $N"
    same_tensors "$d/graph/last.safetensors" "$d/b/last.safetensors" &&
        note "dropout $dropout: $half + $half graph steps == $N, bit for bit" ||
        fail "dropout $dropout: resumed graph run differs from the uninterrupted one"
    same_tensors "$d/bhalf/last.safetensors" "$d/graph/last.safetensors" &&
        fail "dropout $dropout: the checkpoints at $half and $N are identical"
done

# A failed capture. The dropout 0.3 run's flags, as above (a real GPU cannot be made to fail one).
if [ -n "${SK_EMULATED_DEVICE:-}" ]; then
    SK_EMU_UNCAPTURABLE=1 expect_ok "${C[@]}" --out-dir try --max-iters "$N" --cuda-graph try &&
        same_tensors d0.3/eager/last.safetensors try/last.safetensors &&
        note "--cuda-graph try after a failed capture == eager, bit for bit" ||
        fail "--cuda-graph try after a failed capture: not the eager run's result"
    notes=$(grep -c '^note: --cuda-graph try: steps run eagerly from here, as capturing the training step' .ok.err)
    [ "$notes" = 1 ] && note "$(grep '^note: --cuda-graph try' .ok.err)" ||
        fail "--cuda-graph try after a failed capture: $notes fallback notes (want 1): $(cat .ok.err)"
    SK_EMU_UNCAPTURABLE=1 expect_exit 1 '^error: .*capturing the training step of 32 steps into a CUDA graph failed' \
        "${C[@]}" --out-dir on-broken --max-iters "$N" --cuda-graph on
else
    note "a failed capture is tested on the emulated device only"
fi

re='^error: (training loss|gradient norm) is -?(nan|inf) at step ([0-9]+); stopping'
D=("$SK_TRAIN" --data text.txt --embed-size 8 --hidden-size 16 --num-layers 1 --batch-size 2 --seq-length 8
   --device cuda --max-iters 200 --eval-every 0)
export SHAKESPEARE_TEST_POISON_STEP=8
timeout "$(hang_limit 120)" "${D[@]}" --out-dir div-eager --cuda-graph off --log-every 1 --checkpoint-every 1 > de.out 2> de.err
if [[ $(grep -v '^note: ' de.err | head -n 1) =~ $re ]] && [ "${BASH_REMATCH[3]}" = 8 ]; then
    timeout "$(hang_limit 120)" "${D[@]}" --out-dir div-graph --cuda-graph on --log-every 10 --checkpoint-every 3 > dg.out 2> dg.err
    [[ $(grep -v '^note: ' dg.err | head -n 1) =~ $re ]] && got=${BASH_REMATCH[3]} || got="none ($(cat dg.err))"
    [ "$got" = 8 ] && note "divergence with graphs: step $got, as the eager run" || fail "divergence with graphs: step $got, want 8"
    [ "$(state_step div-graph/last.safetensors)" = 6 ] || fail "div-graph/last.* is not at step 6"
else
    fail "the eager run with step 8 poisoned did not stop there: $(cat de.err)"
fi
unset SHAKESPEARE_TEST_POISON_STEP
finish
