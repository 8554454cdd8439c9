#!/usr/bin/env bash
# bench_gpu.sh: GPU training throughput, memory and time to quality of shakespeare-train
# against PyTorch, side by side in one run.
#
# Builds build-gpu/ (scripts/device_build.sh), then for each configuration
#   A  E=128 H=256 L=2 B=32 T=100 dropout 0
#   B  E=256 H=512 L=4 B=64 T=128 dropout 0.2
# runs `shakespeare-train --device cuda` once per variant (--variants: LSTM implementation /
# precision / CUDA graph [/ tensor cores], e.g. persistent/bf16/on/off = --rnn-impl persistent
# --precision bf16 --cuda-graph on --tensor-cores off) for warm-up + timed steps, then the PyTorch peer scripts/bench_gpu_torch.py
# (CharLSTM, nn.LSTM on cuDNN, TF32 allowed, Adam(fused=True), clip_grad_norm_) on the same
# job: data/tinyshakespeare.txt's training split in B streams, windows of T, state carried and
# detached; Adam lr 2e-3, clip 5. Then, by default, PyTorch once more with TF32 forbidden
# (plain fp32, the arithmetic of shakespeare's fp32 precision).
# tokens/s = B*T / median step time over the timed steps, the warm-up left out, on both sides:
# shakespeare-train runs with --log-every 1, so it reads every step's results back (a host
# sync per step, which costs the next launch a few microseconds) and its metrics log holds
# each step's own tokens/s; the PyTorch script times each step between synchronizations.
# PyTorch runs three ways: TF32 allowed (its default for cuDNN), TF32 forbidden, and its whole
# step captured as one CUDA graph (--graph on, torch.cuda.graph); every ratio is against the
# best of the three (pt_best).
# A variant that shakespeare-train refuses for a configuration (exit 2 with an error: line,
# e.g. a persistent kernel that does not fit the shape, or a flag this build lacks) is
# reported as refused with that line; it is not a failure of the benchmark.
#
# Memory: while each process runs, nvidia-smi is polled every --poll-ms ms for the process's
# used device memory (--query-compute-apps, matched by pid); the peak is *_peak_mib. That is
# the process's whole device footprint: CUDA context and module images, cuBLAS/cuDNN
# workspaces, and for PyTorch its caching allocator's reserve; the same measure for both. If
# nvidia-smi does not list the pid (containers), the peak of the GPU's memory.used minus its
# value before the launch is used instead, and the line says peak_source=gpu-delta. PyTorch's
# own torch.cuda.max_memory_reserved / max_memory_allocated (tensors only) are reported too.
#
# Time to quality (--time-to-quality [F], default F = 1.50): seconds from each side's start
# until its validation loss, evaluated every --ttq-every steps on the whole validation split
# (evaluations included, the same protocol on both sides), is <= F: configuration Q
# (--ttq-config "E H L B T dropout", default 128 512 2 64 128 0.2), Adam lr 2e-3, clip 5,
# PyTorch's initialization family on both, shakespeare with --ttq-variant (default: the first
# of --variants). Measured one after the other in the same run.
#
# Prints progress, then a header (date, commit, GPU, driver, torch) and tables, and ends with
# exactly one line per configuration, for the first variant of --variants (the default run):
#   config=A shakespeare_tokens_per_s=... pytorch_tokens_per_s=... ratio=... shakespeare_peak_mib=... pytorch_peak_mib=...
# (pytorch_tokens_per_s: the best PyTorch row; ratio = shakespeare / that; "na" where a side did not run), preceded by
# one `variant config=A ...` line per variant and one `best config=A ...` line, and with
# --time-to-quality one `ttq target=F shakespeare_s=... pytorch_s=... speedup=...` line.
# Everything is also written to --out FILE (default bench/results/gpu-<date>-<commit>.txt).
#
# Usage: scripts/bench_gpu.sh [--out FILE] [--configs A,B] [--variants LIST] [--steps N]
#          [--warmup N] [--poll-ms N] [--build-dir DIR] [--data FILE] [--skip-build]
#          [--skip-torch] [--skip-ours] [--no-fp32] [--timeout S] [--dry-run]
#          [--time-to-quality [F]] [--ttq-only] [--ttq-config "E H L B T P"] [--ttq-every N]
#          [--ttq-variant V] [--ttq-max-steps N] [--ttq-seeds N]
#   --steps 200 timed steps, --warmup 20 untimed; --poll-ms 50 (0: no memory polling);
#   --timeout 300 s per process; --dry-run prints the commands instead of running them.
#   --variants: comma-separated IMPL/PRECISION/GRAPH[/TENSOR_CORES] (default: $default_variants below);
#   --ttq-every 200; --ttq-max-steps 20000; --ttq-seeds 1 (seeds 1..N a side; the medians are reported,
#   and each seed's seconds on the ttq line).
# Env: PYTHON (default python3, the one with CUDA PyTorch); BENCH_COMMIT (the commit to
# report where the tree has no .git, as on a lent GPU machine); SK_FORCE_CARRY etc. reach
# device_build.sh. On a lent machine, for example:
#   BENCH_COMMIT=<hash> bash scripts/bench_gpu.sh --out "$OUT/bench-gpu.txt"   (carry .carry)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-gpu"
data="$root/data/tinyshakespeare.txt"
python=${PYTHON:-python3}
configs="A,B"
steps=200
warmup=20
poll_ms=50
limit=300
out=""
do_build=1 run_ours=1 run_torch=1 run_fp32=1 dry=0
# The default run first (what the config= lines report), then every implementation and
# precision with and without the CUDA graph.
# The first is the default run (every flag at its default); persistent kernels with their tensor
# cores on and off.
default_variants="auto/auto/auto,cudnn/fp32/on,cudnn/tf32/on,cudnn-persist/tf32/on,persistent/fp32/on,persistent/tf32/on/on,persistent/tf32/on/off,persistent/bf16/on/on,persistent/bf16/on/off"
variants=$default_variants
ttq="" ttq_only=0 ttq_every=200 ttq_max=20000 ttq_variant="" ttq_seeds=1
ttq_config="128 512 2 64 128 0.2"

die() { echo "bench_gpu.sh: error: $*" >&2; exit 2; }
posint() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "$1 expects a positive integer, got \"$2\""; }
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || die "--out needs a value"; out=$2; shift 2 ;;
    --configs) [ $# -ge 2 ] || die "--configs needs a value"; [[ "$2" =~ ^[AB](,[AB])*$ ]] || die "--configs expects A, B or A,B, got \"$2\""; configs=$2; shift 2 ;;
    --steps) [ $# -ge 2 ] || die "--steps needs a value"; posint "$1" "$2"; steps=$2; shift 2 ;;
    --warmup) [ $# -ge 2 ] || die "--warmup needs a value"; [[ "$2" =~ ^[0-9]+$ ]] || die "--warmup expects an integer >= 0, got \"$2\""; warmup=$2; shift 2 ;;
    --poll-ms) [ $# -ge 2 ] || die "--poll-ms needs a value"; [[ "$2" =~ ^[0-9]+$ ]] || die "--poll-ms expects an integer >= 0, got \"$2\""; poll_ms=$2; shift 2 ;;
    --timeout) [ $# -ge 2 ] || die "--timeout needs a value"; posint "$1" "$2"; limit=$2; shift 2 ;;
    --build-dir) [ $# -ge 2 ] || die "--build-dir needs a value"; build=$2; shift 2 ;;
    --data) [ $# -ge 2 ] || die "--data needs a value"; data=$2; shift 2 ;;
    --skip-build) do_build=0; shift ;;
    --skip-torch) run_torch=0; shift ;;
    --skip-ours) run_ours=0; shift ;;
    --no-fp32) run_fp32=0; shift ;;
    --dry-run) dry=1; shift ;;
    --variants) [ $# -ge 2 ] || die "--variants needs a value"; variants=$2; shift 2 ;;
    --time-to-quality)
      ttq=1.50; shift
      if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+(\.[0-9]+)?$ ]]; then ttq=$1; shift; fi ;;
    --ttq-only) ttq_only=1; [ -n "$ttq" ] || ttq=1.50; shift ;;
    --ttq-every) [ $# -ge 2 ] || die "--ttq-every needs a value"; posint "$1" "$2"; ttq_every=$2; shift 2 ;;
    --ttq-max-steps) [ $# -ge 2 ] || die "--ttq-max-steps needs a value"; posint "$1" "$2"; ttq_max=$2; shift 2 ;;
    --ttq-variant) [ $# -ge 2 ] || die "--ttq-variant needs a value"; ttq_variant=$2; shift 2 ;;
    --ttq-seeds) [ $# -ge 2 ] || die "--ttq-seeds needs a value"; posint "$1" "$2"; ttq_seeds=$2; shift 2 ;;
    --ttq-config) [ $# -ge 2 ] || die "--ttq-config needs a value"
      [[ "$2" =~ ^[1-9][0-9]*\ [1-9][0-9]*\ [1-9][0-9]*\ [1-9][0-9]*\ [1-9][0-9]*\ 0?\.?[0-9]+$ ]] \
        || die "--ttq-config expects \"E H L B T dropout\", got \"$2\""
      ttq_config=$2; shift 2 ;;
    -h|--help) sed -n '2,57p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option \"$1\" (see --help)" ;;
  esac
done
case "$build" in /*) ;; *) build="$PWD/$build" ;; esac
# IMPL/PRECISION/GRAPH[/TENSOR_CORES], each field checked here so that a typo fails before any GPU time.
check_variant() {
  [[ "$1" =~ ^(auto|cudnn|cudnn-persist|persistent)/(auto|fp32|tf32|bf16)/(auto|on|off)(/(auto|on|off))?$ ]] \
    || die "a variant is IMPL/PRECISION/GRAPH[/TENSOR_CORES] (IMPL auto, cudnn, cudnn-persist or persistent; PRECISION auto, fp32, tf32 or bf16; GRAPH and TENSOR_CORES auto, on or off), got \"$1\""
}
for v in ${variants//,/ }; do check_variant "$v"; done
[ -n "$ttq_variant" ] || ttq_variant=${variants%%,*}
check_variant "$ttq_variant"
[ -r "$data" ] || die "cannot read $data"

commit=${BENCH_COMMIT:-}
if [ -z "$commit" ]; then
  commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
  [ "$commit" != unknown ] && [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ] && commit="$commit-dirty"
fi
stamp=$(date -u +%Y%m%d-%H%M)
[ -n "$out" ] || out="$root/bench/results/gpu-$stamp-$commit.txt"

# config NAME -> "E H L B T dropout"
config() { case "$1" in A) echo "128 256 2 32 100 0" ;; B) echo "256 512 4 64 128 0.2" ;; esac; }

# show CMD...: the command as a shell would read it.
show() { printf '+'; printf ' %q' "$@"; printf '\n'; }

# watch_pid PID TAG: until PID exits, appends nvidia-smi samples to $tmp/TAG.apps ("pid, MiB")
# and $tmp/TAG.gpu ("MiB", GPU 0's memory.used) every $poll_ms ms, and sends PID SIGTERM
# (then SIGKILL) after $limit s.
watch_pid() {
  local pid=$1 tag=$2 start=$SECONDS
  : >"$tmp/$tag.apps"; : >"$tmp/$tag.gpu"
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$poll_ms" -gt 0 ]; then
      nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits >>"$tmp/$tag.apps" 2>/dev/null || true
      nvidia-smi -i 0 --query-gpu=memory.used --format=csv,noheader,nounits >>"$tmp/$tag.gpu" 2>/dev/null || true
    fi
    if [ $((SECONDS - start)) -ge "$limit" ]; then
      echo "bench_gpu.sh: $tag ran past --timeout $limit s; stopping it" >&2
      kill -TERM "$pid" 2>/dev/null || true
      local _
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep "$sleep_s"
  done
}

# peak TAG PID BASELINE: "MiB source samples" of the run polled as TAG.
peak() {
  local p n
  p=$(awk -F', *' -v pid="$2" '$1 == pid && $2 + 0 > m { m = $2 + 0 } END { print m + 0 }' "$tmp/$1.apps")
  n=$(awk -F', *' -v pid="$2" '$1 == pid { n++ } END { print n + 0 }' "$tmp/$1.apps")
  if [ "$p" -gt 0 ]; then echo "$p pid $n"; return; fi
  p=$(awk -v b="$3" '$1 + 0 > m { m = $1 + 0 } END { print m - b }' "$tmp/$1.gpu")
  n=$(wc -l <"$tmp/$1.gpu")
  if [ "$n" -gt 0 ]; then echo "$p gpu-delta $n"; else echo "na none 0"; fi
}

gpu_used() { nvidia-smi -i 0 --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -n 1 | tr -dc 0-9 || true; }

# polled TAG CMD...: runs CMD in the background with its output in $tmp/TAG.log, watched;
# sets run_rc, run_pid and run_base (GPU memory.used before the launch).
polled() {
  local tag=$1 wpid
  shift
  run_base=$(gpu_used); run_base=${run_base:-0}
  "$@" >"$tmp/$tag.log" 2>&1 &
  run_pid=$!
  watch_pid "$run_pid" "$tag" &
  wpid=$!
  run_rc=0
  wait "$run_pid" || run_rc=$?
  wait "$wpid" 2>/dev/null || true
}

# field NAME FILE: the value of the last NAME=value in FILE.
field() { grep -o "$1=[^ ]*" "$2" 2>/dev/null | tail -n 1 | cut -d= -f2- || true; }

# variant_args IMPL/PRECISION/GRAPH[/TENSOR_CORES]: shakespeare-train's flags for it.
variant_args() {
  local impl prec graph tc
  IFS=/ read -r impl prec graph tc <<<"$1"
  echo "--rnn-impl $impl --precision $prec --cuda-graph $graph${tc:+ --tensor-cores $tc}"
}

# run_ours CONFIG VARIANT: one shakespeare-train run, polled; fills the ours_* entries of
# CONFIG/VARIANT (status ok, refused or failed).
run_ours() {
  local c=$1 v=$2 key="$1:$2" E H L B T P
  read -r E H L B T P <<<"$(config "$c")"
  # shellcheck disable=SC2207
  local vargs=($(variant_args "$v"))
  local cmd=(env "LD_LIBRARY_PATH=$ld" "$train" --data "$data" --embed-size "$E" --hidden-size "$H" --num-layers "$L"
             --batch-size "$B" --seq-length "$T" --dropout "$P" --max-iters $((warmup + steps))
             --eval-every 0 --checkpoint-every 0 --log-every 1 --out-dir "$tmp/run-$c-${v//\//-}" --device cuda
             "${vargs[@]}")
  echo "== config $c, $v: shakespeare-train, $((warmup + steps)) steps"
  if [ "$dry" = 1 ]; then show "${cmd[@]}"; echo "  (polled: nvidia-smi --query-compute-apps=pid,used_memory every $poll_ms ms)"; return; fi
  local tag="ours-$c-${v//\//-}"
  polled "$tag" "${cmd[@]}"
  { grep -v '^epoch ' "$tmp/$tag.log" || true; } | tail -n 5 | sed 's/^/  /'
  local backend n
  backend=$(field backend "$tmp/$tag.log")
  if [ "$run_rc" -eq 2 ] && grep -q '^error:' "$tmp/$tag.log"; then
    ours_status[$key]=refused
    ours_why[$key]=$(grep -m1 '^error:' "$tmp/$tag.log" | cut -c1-160)
    echo "  refused: ${ours_why[$key]}"
  elif [ "$run_rc" -ne 0 ] || [ "$backend" != cuda ]; then
    ours_status[$key]=failed
    echo "  FAILED: exit status $run_rc, backend=${backend:-none}"; failed=1
  else
    ours_status[$key]=ok
    ours_tps[$key]=$(steady_median "$tmp/run-$c-${v//\//-}/metrics.jsonl" "$warmup")
    [ -n "${ours_tps[$key]}" ] || ours_tps[$key]=$(field median_tokens_per_s "$tmp/$tag.log") # no per-step log
    ours_loss[$key]=$(field final_train_loss "$tmp/$tag.log")
    read -r ours_peak[$key] ours_src[$key] n <<<"$(peak "$tag" "$run_pid" "$run_base")"
    echo "  median_tokens_per_s=${ours_tps[$key]} peak_mib=${ours_peak[$key]} peak_source=${ours_src[$key]} samples=$n"
  fi
}

# steady_median METRICS WARMUP: the median tokens_per_s of the records of steps after WARMUP in
# shakespeare-train's metrics log (one per step with --log-every 1); empty without records.
steady_median() {
  [ -s "$1" ] || return 0
  awk -F'[:,}]' -v w="$2" '/"tokens_per_s"/ && $2 + 0 > w {
      for (i = 1; i < NF; i++) if ($i == "\"tokens_per_s\"") print $(i + 1) + 0 }' "$1" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR) printf "%.1f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# run_torch CONFIG on|off|graph: the PyTorch peer, polled; fills torch_* (TF32 on), fp32_tps
# (off) or graph_tps (TF32 on, the step captured as a CUDA graph; "failed" when PyTorch
# refuses the capture, with graph_why, which is not a failure of the benchmark).
run_torch_peer() {
  local c=$1 tf=$2 gr=off
  [ "$tf" = graph ] && tf=on gr=on
  local tcmd=(env PYTHONUNBUFFERED=1 "$python" "$root/scripts/bench_gpu_torch.py" --data "$data" --config "$c"
              --warmup "$warmup" --steps "$steps" --tf32 "$tf" --graph "$gr")
  echo "== config $c: pytorch (tf32 $tf, graph $gr), $warmup + $steps steps"
  if [ "$dry" = 1 ]; then show "${tcmd[@]}"; return; fi
  local tag="torch-$c-$tf-$gr"
  polled "$tag" "${tcmd[@]}"
  sed 's/^/  /' "$tmp/$tag.log" | tail -n 4
  if [ "$gr" = on ] && [ "$run_rc" -eq 0 ] && grep -q "config=$c graph=failed" "$tmp/$tag.log"; then
    graph_tps[$c]=failed graph_why[$c]=$(grep -o "reason=.*" "$tmp/$tag.log" | head -n 1 | cut -c1-160)
    echo "  the capture failed: ${graph_why[$c]}"; return
  fi
  if [ "$run_rc" -ne 0 ] || ! grep -q "config=$c median_tokens_per_s=" "$tmp/$tag.log"; then
    echo "  FAILED: exit status $run_rc"; failed=1; return
  fi
  torch_version=$(field torch_version "$tmp/$tag.log")
  torch_cudnn=$(field cudnn "$tmp/$tag.log")
  local p s n
  read -r p s n <<<"$(peak "$tag" "$run_pid" "$run_base")"
  echo "  nvidia-smi peak_mib=$p peak_source=$s samples=$n"
  if [ "$gr" = on ]; then
    graph_tps[$c]=$(field median_tokens_per_s "$tmp/$tag.log")
  elif [ "$tf" = on ]; then
    torch_tps[$c]=$(field median_tokens_per_s "$tmp/$tag.log")
    torch_res[$c]=$(field peak_mib "$tmp/$tag.log")
    torch_alloc[$c]=$(field max_memory_allocated_mib "$tmp/$tag.log")
    torch_peak[$c]=$p torch_src[$c]=$s torch_loss[$c]=$(field last_loss "$tmp/$tag.log")
  else
    fp32_tps[$c]=$(field median_tokens_per_s "$tmp/$tag.log")
  fi
}

# pt_best CONFIG: the fastest PyTorch row of CONFIG (tokens/s), empty when none ran.
pt_best() {
  local x best=""
  for x in "${torch_tps[$1]:-}" "${fp32_tps[$1]:-}" "${graph_tps[$1]:-}"; do
    [[ "$x" =~ ^[0-9.]+$ ]] || continue
    if [ -z "$best" ] || awk -v a="$x" -v b="$best" 'BEGIN { exit !(a > b) }'; then best=$x; fi
  done
  echo "$best"
}

# time_to_quality: shakespeare-train (--ttq-variant) and PyTorch on configuration Q until
# validation loss <= $ttq; sets ttq_ours, ttq_ours_at, ttq_torch, ttq_torch_at.
# ttq_once SEED: time_to_quality's runs at one seed; appends to ttq_ours_all / ttq_torch_all.
ttq_once() {
  local seed=$1 E H L B T P
  read -r E H L B T P <<<"$ttq_config"
  # shellcheck disable=SC2207
  local vargs=($(variant_args "$ttq_variant"))
  local cmd=(env "LD_LIBRARY_PATH=$ld" "$train" --data "$data" --embed-size "$E" --hidden-size "$H" --num-layers "$L"
             --batch-size "$B" --seq-length "$T" --dropout "$P" --max-epochs 0 --max-iters "$ttq_max"
             --eval-every "$ttq_every" --checkpoint-every 0 --log-every "$ttq_every" --out-dir "$tmp/run-ttq"
             --device cuda --seed "$seed" "${vargs[@]}")
  local tcmd=(env PYTHONUNBUFFERED=1 "$python" "$root/scripts/bench_gpu_torch.py" --data "$data" --seed "$seed"
              --ttq-config "$ttq_config" --target-val "$ttq" --eval-every "$ttq_every" --max-steps "$ttq_max" --tf32 on)
  echo "== time to quality, seed $seed: val_loss <= $ttq, E=$E H=$H L=$L B=$B T=$T dropout=$P, evaluated every $ttq_every steps"
  if [ "$dry" = 1 ]; then show "${cmd[@]}"; show "${tcmd[@]}"; return; fi
  if [ "$run_ours" = 1 ]; then
    local t0 t1 pid hit=""
    t0=$(date +%s.%N)
    # The log exists before the poll reads it: the background job's redirection may come later
    # (awk on a missing file exits 2, which set -e would make this script's status).
    : >"$tmp/ttq-ours.log"
    rm -rf "$tmp/run-ttq"
    "${cmd[@]}" >"$tmp/ttq-ours.log" 2>&1 &
    pid=$!
    while [ -z "$hit" ] && kill -0 "$pid" 2>/dev/null && [ $((${t0%.*} + limit)) -gt "$(date +%s)" ]; do
      hit=$(awk -v f="$ttq" '$1 == "iter" && $3 == "val_loss" && $4 <= f { print $2, $4; exit }' "$tmp/ttq-ours.log")
      [ -n "$hit" ] || sleep 0.1
    done
    t1=$(date +%s.%N)
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    grep -E '^iter [0-9]+ val_loss' "$tmp/ttq-ours.log" | sed 's/^/  shakespeare /'
    if [ -n "$hit" ]; then
      ttq_ours=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') ttq_ours_at=$hit
      ttq_ours_all+=("$ttq_ours")
      echo "  shakespeare ($ttq_variant): $ttq_ours s (step, val_loss: $hit)"
    else
      tail -n 5 "$tmp/ttq-ours.log" | sed 's/^/  /'
      echo "  FAILED: shakespeare-train did not reach $ttq within $limit s / $ttq_max steps"; failed=1
    fi
  fi
  if [ "$run_torch" = 1 ]; then
    local tline
    if tline=$(timeout "$limit" "${tcmd[@]}" 2>"$tmp/ttq-torch.err"); then
      sed 's/^/  /' "$tmp/ttq-torch.err" | tail -n 20
      ttq_torch=$(grep -o 'time_to_target_s=[0-9.]*' <<<"$tline" | cut -d= -f2)
      torch_version=$(grep -o 'torch_version=[^ ]*' <<<"$tline" | cut -d= -f2)
      ttq_torch_at="$(grep -o ' steps=[0-9]*' <<<"$tline" | cut -d= -f2) $(grep -o 'val_loss=[0-9.]*' <<<"$tline" | cut -d= -f2)"
      echo "  pytorch: $ttq_torch s (step, val_loss: $ttq_torch_at)"
      ttq_torch_all+=("$ttq_torch")
    else
      tail -n 5 "$tmp/ttq-torch.err" | sed 's/^/  /'
      echo "  FAILED: PyTorch did not reach $ttq within $limit s / $ttq_max steps"; failed=1
    fi
  fi
}

# median V...: the median of numbers (empty for none).
median() { printf '%s\n' "$@" | sort -g | awk 'NF { v[++n] = $1 } END { if (n) printf "%.1f", n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'; }

# time_to_quality: --ttq-seeds seeds (1, 2, ...) a side, one after the other; ttq_ours and
# ttq_torch become the medians (of the seeds that reached the target; a miss is a failure).
time_to_quality() {
  local s
  ttq_ours_all=() ttq_torch_all=()
  for ((s = 1; s <= ttq_seeds; s++)); do ttq_once "$s"; done
  [ "$dry" = 1 ] && return
  ttq_ours=$(median "${ttq_ours_all[@]}") ttq_torch=$(median "${ttq_torch_all[@]}")
  echo "  medians over $ttq_seeds seed(s): shakespeare ${ttq_ours:-na} s (${ttq_ours_all[*]:-none}), pytorch ${ttq_torch:-na} s (${ttq_torch_all[*]:-none})"
}

main() {
  set -euo pipefail
  echo "bench_gpu.sh: configs $configs, variants $variants, $warmup warm-up + $steps timed steps; log: $out"
  train="$build/shakespeare-train" ld="" failed=0
  if [ "$run_ours" = 1 ]; then
    if [ "$do_build" = 1 ]; then
      if [ "$dry" = 1 ]; then show bash "$root/scripts/device_build.sh" --build-dir "$build" --target shakespeare-train --quiet
      else bash "$root/scripts/device_build.sh" --build-dir "$build" --target shakespeare-train --quiet | tee "$tmp/build.out" \
             || die "scripts/device_build.sh failed"; fi
    fi
    if [ "$dry" = 1 ]; then ld="<LD_LIBRARY_PATH after: source ${build#"$root"/}/env.sh>"
    else
      [ -x "$train" ] && [ -f "$build/env.sh" ] || die "$train or $build/env.sh missing (run without --skip-build)"
      ld=$(bash -c 'source "$1" && printf %s "$LD_LIBRARY_PATH"' _ "$build/env.sh")
    fi
  fi
  if [ "$dry" = 0 ]; then
    command -v nvidia-smi >/dev/null || die "nvidia-smi not found"
    [ "$poll_ms" -eq 0 ] || nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits >/dev/null \
      || die "nvidia-smi --query-compute-apps failed (use --poll-ms 0 to run without memory polling)"
  fi

  local c v E H L B T P first=${variants%%,*}
  if [ "$ttq_only" = 0 ]; then
    for c in ${configs//,/ }; do
      if [ "$run_ours" = 1 ]; then for v in ${variants//,/ }; do run_ours "$c" "$v"; done; fi
      if [ "$run_torch" = 1 ]; then
        run_torch_peer "$c" on
        [ "$run_fp32" = 1 ] && run_torch_peer "$c" off
        run_torch_peer "$c" graph
      fi
    done
  fi
  [ -z "$ttq" ] || time_to_quality
  [ "$dry" = 1 ] && { echo "(dry run: nothing was run; the summary would follow)"; return 0; }

  # ---- summary -----------------------------------------------------------------------------
  local gpu driver
  gpu=$(nvidia-smi -i 0 --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -n 1 || echo unknown)
  driver=$(nvidia-smi -i 0 --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1 || echo unknown)
  if [ -z "${torch_version:-}" ]; then
    torch_version=$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo unknown)
  fi
  echo
  echo "== GPU training benchmark =="
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  commit: $commit"
  echo "gpu: $gpu  driver: $driver  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores"
  echo "torch: $torch_version (cuDNN ${torch_cudnn:-?})  shakespeare: $( (grep -h 'device_build: cuDNN' "$tmp/build.out" 2>/dev/null || echo 'cuDNN ?') | sed 's/device_build: *//; s/  */ /g')"
  echo "steps: $warmup warm-up + $steps timed; tokens/s = B*T / median step; data: $(basename "$data")"
  echo "variants: IMPL/PRECISION/GRAPH[/TC] = --rnn-impl / --precision / --cuda-graph / --tensor-cores; pytorch TF32 allowed (pt_fp32: TF32"
  echo "          forbidden; pt_graph: TF32 allowed, the step replayed as one CUDA graph); ratio = sk / pt_best"
  echo "memory: *_peak_mib = peak of nvidia-smi's used_memory for the process (polled every $poll_ms ms: CUDA context,"
  echo "        library workspaces and caching-allocator reserve included); pt_reserved/pt_alloc = torch.cuda.max_memory_reserved/allocated"
  if [ "$ttq_only" = 0 ]; then
    printf '%-6s %-22s %-26s %11s %11s %11s %11s %11s %7s %9s %9s %11s %9s\n' config 'E/H/L/B/T/dropout' variant \
      sk_tok/s pt_tok/s pt_fp32 pt_graph pt_best ratio sk_peak pt_peak pt_reserved pt_alloc
    for c in ${configs//,/ }; do
      read -r E H L B T P <<<"$(config "$c")"
      for v in ${variants//,/ }; do
        local k="$c:$v" shown
        shown=${ours_tps[$k]:-${ours_status[$k]:-na}}
        printf '%-6s %-22s %-26s %11s %11s %11s %11s %11s %7s %9s %9s %11s %9s\n' "$c" "$E/$H/$L/$B/$T/$P" "$v" "$shown" \
          "${torch_tps[$c]:-na}" "${fp32_tps[$c]:-na}" "${graph_tps[$c]:-na}" "$(pt_best "$c" | sed 's/^$/na/')" \
          "$(ratio "${ours_tps[$k]:-}" "$(pt_best "$c")")" \
          "${ours_peak[$k]:-na}" "${torch_peak[$c]:-na}" "${torch_res[$c]:-na}" "${torch_alloc[$c]:-na}"
      done
    done
    for c in ${configs//,/ }; do
      for v in ${variants//,/ }; do
        [ "${ours_status[$c:$v]:-}" = refused ] && echo "note: config $c $v refused: ${ours_why[$c:$v]}"
      done
      [ "${graph_tps[$c]:-}" = failed ] && echo "note: config $c pytorch's CUDA graph capture failed: ${graph_why[$c]}"
      echo "note: config $c training loss at the last step: shakespeare ($first) ${ours_loss[$c:$first]:-na}," \
           "pytorch ${torch_loss[$c]:-na} (a sanity check only: the initializations differ)"
      [ "${ours_src[$c:$first]:-pid}" = pid ] && [ "${torch_src[$c]:-pid}" = pid ] \
        || echo "note: config $c peak_source shakespeare=${ours_src[$c:$first]:-na} pytorch=${torch_src[$c]:-na}"
    done
  fi
  if [ -n "$ttq" ]; then
    echo "time to quality: seconds from start until val_loss <= $ttq (evaluated every $ttq_every steps, evaluations" \
         "included), E/H/L/B/T/dropout ${ttq_config// //}, Adam lr 2e-3, clip 5; shakespeare $ttq_variant, pytorch TF32 allowed"
    printf '%-24s %10s %10s %10s\n' implementation step val_loss seconds
    [ -n "${ttq_ours:-}" ] && printf '%-24s %10s %10s %10s\n' "shakespeare" $ttq_ours_at "$ttq_ours"
    [ -n "${ttq_torch:-}" ] && printf '%-24s %10s %10s %10s\n' "pytorch $torch_version" $ttq_torch_at "$ttq_torch"
  fi
  [ "$failed" = 0 ] || echo "note: some runs failed (see above)"
  if [ "$ttq_only" = 0 ]; then
    for c in ${configs//,/ }; do
      local best="" best_tps=0
      for v in ${variants//,/ }; do
        local k="$c:$v"
        echo "variant config=$c variant=$v status=${ours_status[$k]:-na} tokens_per_s=${ours_tps[$k]:-na}" \
             "ratio=$(ratio "${ours_tps[$k]:-}" "$(pt_best "$c")") peak_mib=${ours_peak[$k]:-na}"
        if [ -n "${ours_tps[$k]:-}" ] && awk -v a="${ours_tps[$k]}" -v b="$best_tps" 'BEGIN { exit !(a > b) }'; then
          best=$v best_tps=${ours_tps[$k]}
        fi
      done
      echo "best config=$c variant=${best:-na} tokens_per_s=${best:+$best_tps} ratio=$(ratio "${best:+$best_tps}" "$(pt_best "$c")")" \
           "peak_mib=${ours_peak[$c:$best]:-na} pytorch_peak_mib=${torch_peak[$c]:-na}"
    done
  fi
  if [ -n "$ttq" ]; then
    echo "ttq target=$ttq shakespeare_s=${ttq_ours:-na} pytorch_s=${ttq_torch:-na} speedup=$(ratio "${ttq_torch:-}" "${ttq_ours:-}")" \
         "seeds=$ttq_seeds shakespeare_each=$(IFS=,; echo "${ttq_ours_all[*]:-na}") pytorch_each=$(IFS=,; echo "${ttq_torch_all[*]:-na}")"
  fi
  if [ "$ttq_only" = 0 ]; then
    for c in ${configs//,/ }; do
      local k="$c:$first"
      echo "config=$c shakespeare_tokens_per_s=${ours_tps[$k]:-na} pytorch_tokens_per_s=$(pt_best "$c" | sed 's/^$/na/')" \
           "ratio=$(ratio "${ours_tps[$k]:-}" "$(pt_best "$c")") shakespeare_peak_mib=${ours_peak[$k]:-na}" \
           "pytorch_peak_mib=${torch_peak[$c]:-na}"
    done
  fi
  return "$failed"
}

ttq_ours_all=() ttq_torch_all=()
declare -A ours_tps ours_peak ours_src ours_loss ours_status ours_why torch_loss torch_tps torch_peak torch_src torch_res \
  torch_alloc fp32_tps graph_tps graph_why

ratio() { if [ -n "$1" ] && [ -n "$2" ]; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; else echo na; fi; }

sleep_s=$(awk -v m="$poll_ms" 'BEGIN { printf "%.3f", (m > 0 ? m : 200) / 1000 }')
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sk-bench-gpu-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ "$dry" = 1 ]; then
  main
  exit 0
fi
mkdir -p "$(dirname "$out")"
# Not "main | tee || rc=$?": inside a || list bash ignores set -e, also in main.
set +e
main 2>&1 | tee "$out"
exit "${PIPESTATUS[0]}"
