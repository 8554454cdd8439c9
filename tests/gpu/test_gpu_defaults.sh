#!/usr/bin/env bash
# test_gpu_defaults.sh (label gpu): what a plain `shakespeare-train --device cuda` runs, from the
# program's own output and checkpoint:
#   - the default precision is tf32 (--precision auto on CUDA: PyTorch's default for cuDNN's
#     RNNs), named on the done line and recorded in the checkpoint's train_config as "tf32";
#   - the default --cuda-graph auto replays the steps as captured graphs (the done line counts
#     them: every step after the first of its window length, which runs eagerly before the
#     capture), and --cuda-graph off replays none;
#   - --precision fp32 gives strict fp32, and resuming the tf32 run with it says so in one note;
#   - --tensor-cores takes auto, on and off, and is refused on the CPU when on.
# Skipped (77) where no GPU is usable.
. "$(dirname "$0")/../cli/lib.sh"

gen_text text.txt 60 3
require_gpu
C=("$SK_TRAIN" --data text.txt --embed-size 16 --hidden-size 32 --num-layers 2 --batch-size 4 --seq-length 16
   --device cuda --eval-every 0 --max-iters 12)
header() { head -c "$(($(od -An -t u8 -N 8 "$1" | tr -d ' ') + 8))" "$1"; }

expect_ok "${C[@]}" --out-dir plain || finish
done_line=$(grep '^done:' .ok.out)
[[ $done_line =~ backend=cuda\ precision=tf32\ cuda_graph_steps=([0-9]+)$ ]] &&
    note "default run: ${done_line##* backend=}" || fail "default run: $done_line"
graphs=${BASH_REMATCH[1]:-0}
[ "$graphs" -ge 10 ] && note "$graphs of 12 steps replayed as graphs" || fail "$graphs of 12 steps replayed as graphs"
header plain/last.safetensors | grep -qF '\"precision\":\"tf32\"' && note "train_config records tf32" ||
    fail "train_config does not record tf32: $(header plain/last.safetensors)"

expect_ok "${C[@]}" --out-dir eager --cuda-graph off &&
    { grep -q 'precision=tf32 cuda_graph_steps=0$' .ok.out && note "--cuda-graph off: no graph" ||
      fail "--cuda-graph off: $(grep '^done:' .ok.out)"; }

expect_ok "${C[@]}" --out-dir strict --precision fp32 &&
    { grep -q 'precision=fp32 cuda_graph_steps=' .ok.out && note "--precision fp32: strict fp32" ||
      fail "--precision fp32: $(grep '^done:' .ok.out)"; }
expect_ok "${C[@]}" --out-dir plain --max-iters 14 --precision fp32 --init-from plain/last.safetensors &&
    { grep -q "^note: --precision fp32 differs from the checkpoint's tf32" .ok.err &&
          note "resuming the default run in fp32 says so" || fail "resume in fp32: $(cat .ok.err)"; }

for tc in auto on off; do
    expect_ok "${C[@]}" --out-dir "tc-$tc" --rnn-impl persistent --precision bf16 --tensor-cores "$tc" &&
        note "--tensor-cores $tc runs the persistent kernel in bf16"
done
expect_error '^error: --tensor-cores expects auto, on or off, got "yes"' "${C[@]}" --out-dir bad --tensor-cores yes
expect_error '^error: tensor cores need a CUDA device' "${C[@]}" --out-dir bad --device cpu --tensor-cores on
finish
