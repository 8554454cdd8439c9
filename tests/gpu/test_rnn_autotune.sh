#!/usr/bin/env bash
# test_rnn_autotune.sh (label gpu): --rnn-impl auto chosen by measurement (src/cuda/lstm_autotune.cu),
# through the real binaries:
#   - a fresh run times the candidates, names the choice and each time on one note line, caches
#     the choice (its key names the GPU and the shape) and records it in the checkpoint;
#   - a second run with the same cache takes the cached choice without measuring, and the cache
#     is what decides: an edited choice is taken, a damaged file is measured over and rewritten;
#   - a resume runs the implementation its checkpoint records (a recorded option, taken like the
#     others), whatever the cache says, measuring nothing, and ends bit-identical to the
#     uninterrupted run on that implementation;
#   - a named --rnn-impl measures nothing and is recorded as named; another shape, or another
#     cell of the same shape (whose candidates differ), measures anew;
#   - the CPU resumes a checkpoint that records a CUDA implementation.
# Timings on the emulated device are the CPU's, so which candidate wins here means nothing; what
# is held is the mechanism. Skipped (77) where no GPU is usable.
. "$(dirname "$0")/../cli/lib.sh"

gen_text text.txt 60 3
require_gpu
C=("$SK_TRAIN" --data text.txt --embed-size 16 --hidden-size 32 --num-layers 2 --batch-size 4 --seq-length 16
   --device cuda --eval-every 0 --checkpoint-every 3 --dropout 0.2)
header() { head -c "$(($(od -An -t u8 -N 8 "$1" | tr -d ' ') + 8))" "$1"; }
# recorded CKPT KEY: the string the checkpoint's train_config holds under KEY.
recorded() { header "$1" | tr -d '\\"' | grep -ao "[{,]$2:[a-z0-9-]*" | cut -d: -f2; }
cache=$XDG_CACHE_HOME/shakespeare # lib.sh: the per-user cache, inside the test directory

# 1. A fresh run measures, says so, caches and records.
expect_ok "${C[@]}" --out-dir runs/a --max-iters 6 || finish
line=$(grep '^note: --rnn-impl auto: .* the fastest of [1-9][0-9]* measured in [0-9.]* s; cached in ' .ok.err)
times=$(grep "^note: --rnn-impl auto: per training step's LSTM: " .ok.err)
chosen=$(sed -n 's/^note: --rnn-impl auto: \([a-z-]*\).*/\1/p' <<<"$line")
[ -n "$chosen" ] && [[ $times == *"cudnn "[0-9]*" ms"* ]] && note "measured: ${line#note: }" ||
    fail "no measurement lines: $(cat .ok.err)"
[[ $times == *persistent-layerwise* && $times == *persistent-cluster* ]] && note "${times#note: }" ||
    fail "the layer-after-layer kernels are not among the candidates: $times"
files=("$cache"/lstm-choice.*.txt)
[ "${#files[@]}" = 1 ] && [ -f "${files[0]}" ] && grep -q '^key: gpu=.* cell=lstm B=4 T=16 E=16 H=32 L=2 dropout=1 precision=tf32 ' "${files[0]}" &&
    grep -q "^choice: $chosen tensor-cores=" "${files[0]}" && note "cached in ${files[0]}" ||
    fail "cache: $(ls "$cache" 2>&1) $(cat "${files[0]}" 2>&1)"
[ "$(recorded runs/a/last.safetensors rnn_impl)" = "$chosen" ] && note "the checkpoint records rnn_impl $chosen" ||
    fail "the checkpoint records rnn_impl '$(recorded runs/a/last.safetensors rnn_impl)', not $chosen"
[ -n "$(recorded runs/a/last.safetensors tensor_cores)" ] || fail "the checkpoint records no tensor_cores"

# 2. The same shape again: the cached choice, nothing measured.
expect_ok "${C[@]}" --out-dir runs/b --max-iters 3 &&
    { grep -q "^note: --rnn-impl auto: $chosen.*, measured fastest before" .ok.err && ! grep -q 'measured in' .ok.err &&
          note "a second run takes the cached choice" || fail "second run: $(cat .ok.err)"; }

# 3. The cache decides: an edited choice is taken (the wavefront kernels on CUDA cores).
sed -i 's/^choice: .*/choice: persistent tensor-cores=off/' "${files[0]}"
expect_ok "${C[@]}" --out-dir runs/c --max-iters 6 &&
    { grep -q '^note: --rnn-impl auto: persistent (CUDA cores), measured fastest before' .ok.err &&
          [ "$(recorded runs/c/last.safetensors rnn_impl)" = persistent ] &&
          [ "$(recorded runs/c/last.safetensors tensor_cores)" = off ] &&
          note "an edited cache entry is taken and recorded" || fail "edited cache: $(cat .ok.err)"; }

# 4. A resume runs what its checkpoint records, not what the cache now says, bit for bit.
expect_ok "${C[@]}" --out-dir runs/d --max-iters 3 || finish
sed -i 's/^choice: .*/choice: cudnn tensor-cores=auto/' "${files[0]}"
expect_ok "${C[@]}" --out-dir runs/d --max-iters 6 --init-from runs/d/last.safetensors &&
    { ! grep -q 'rnn-impl auto' .ok.err && [ "$(recorded runs/d/last.safetensors rnn_impl)" = persistent ] &&
          [ "$(recorded runs/d/last.safetensors tensor_cores)" = off ] &&
          note "the resume runs the recorded implementation, measuring nothing" || fail "resume: $(cat .ok.err)"; }
same_tensors runs/c/last.safetensors runs/d/last.safetensors && note "3 + 3 steps == 6 steps, bit for bit" ||
    fail "the resumed run differs from the uninterrupted one"

# 5. A damaged cache file is measured over and rewritten.
echo garbage > "${files[0]}"
expect_ok "${C[@]}" --out-dir runs/e --max-iters 1 &&
    { grep -q 'measured in' .ok.err && grep -q '^choice: ' "${files[0]}" &&
          note "a damaged cache file is measured over and rewritten" || fail "damaged cache: $(cat .ok.err)"; }

# 6. A named implementation measures nothing; another shape has its own entry.
expect_ok "${C[@]}" --out-dir runs/f --max-iters 1 --rnn-impl cudnn &&
    { ! grep -q 'rnn-impl auto' .ok.err && [ "$(recorded runs/f/last.safetensors rnn_impl)" = cudnn ] &&
          note "--rnn-impl cudnn: nothing measured, recorded as named" || fail "named: $(cat .ok.err)"; }
expect_ok "${C[@]}" --out-dir runs/g --max-iters 1 --hidden-size 24 &&
    { grep -q 'measured in' .ok.err && [ "$(ls "$cache"/lstm-choice.*.txt | wc -l)" = 2 ] &&
          note "another shape is measured and cached apart" || fail "new shape: $(ls "$cache") $(cat .ok.err)"; }
expect_ok "${C[@]}" --out-dir runs/h --max-iters 1 --cell gru &&
    { grep -q 'measured in' .ok.err && [ "$(ls "$cache"/lstm-choice.*.txt | wc -l)" = 3 ] &&
          grep -q '^key: gpu=.* cell=gru B=4 ' "$cache"/lstm-choice.*.txt &&
          note "another cell of the same shape is measured and cached apart" ||
          fail "new cell: $(ls "$cache") $(cat .ok.err)"; }

# 7. The CPU resumes a checkpoint that records a CUDA implementation.
expect_ok "${C[@]}" --out-dir runs/d --max-iters 7 --device cpu --init-from runs/d/last.safetensors &&
    { [ "$(recorded runs/d/last.safetensors rnn_impl)" = auto ] &&
          note "the CPU resumes it, recording its own implementation" || fail "CPU resume: $(cat .ok.err)"; }
finish
