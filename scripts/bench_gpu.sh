#!/usr/bin/env bash
# bench_gpu.sh: GPU training throughput and memory of shakespeare-train against PyTorch.
#
# Builds build-gpu/ (scripts/device_build.sh), then for each configuration
#   A  E=128 H=256 L=2 B=32 T=100 dropout 0
#   B  E=256 H=512 L=4 B=64 T=128 dropout 0.2
# runs `shakespeare-train --device cuda` for warm-up + timed steps, then the PyTorch peer
# scripts/bench_gpu_torch.py (CharLSTM, nn.LSTM on cuDNN, TF32 allowed, Adam(fused=True),
# clip_grad_norm_) on the same job: data/tinyshakespeare.txt's training split in B streams,
# windows of T, state carried and detached; Adam lr 2e-3, clip 5. Then, by default, PyTorch
# once more with TF32 forbidden (plain fp32, the arithmetic shakespeare's backend uses).
# tokens/s = B*T / median step time. shakespeare-train times every step (the median is over
# warm-up + timed steps, which moves it by less than the warm-up's share); the PyTorch script
# drops its warm-up steps. Both time a step on the host, between device synchronizations.
#
# Memory: while each process runs, nvidia-smi is polled every --poll-ms ms for the process's
# used device memory (--query-compute-apps, matched by pid); the peak is *_peak_mib. That is
# the process's whole device footprint: CUDA context and module images, cuBLAS/cuDNN
# workspaces, and for PyTorch its caching allocator's reserve; the same measure for both. If
# nvidia-smi does not list the pid (containers), the peak of the GPU's memory.used minus its
# value before the launch is used instead, and the line says peak_source=gpu-delta. PyTorch's
# own torch.cuda.max_memory_reserved / max_memory_allocated (tensors only) are reported too.
#
# Prints progress, then a header (date, commit, GPU, driver, torch) and a table, and ends
# with exactly one line per configuration:
#   config=A shakespeare_tokens_per_s=... pytorch_tokens_per_s=... ratio=... shakespeare_peak_mib=... pytorch_peak_mib=...
# (ratio = shakespeare / pytorch with TF32 allowed; "na" where a side did not run).
# Everything is also written to --out FILE (default bench/results/gpu-<date>-<commit>.txt).
#
# Usage: scripts/bench_gpu.sh [--out FILE] [--configs A,B] [--steps N] [--warmup N]
#          [--poll-ms N] [--build-dir DIR] [--data FILE] [--skip-build] [--skip-torch]
#          [--skip-ours] [--no-fp32] [--timeout S] [--dry-run]
#   --steps 200 timed steps, --warmup 20 untimed; --poll-ms 50 (0: no memory polling);
#   --timeout 300 s per process; --dry-run prints the commands instead of running them.
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
    -h|--help) sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option \"$1\" (see --help)" ;;
  esac
done
case "$build" in /*) ;; *) build="$PWD/$build" ;; esac
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

main() {
  set -euo pipefail
  echo "bench_gpu.sh: configs $configs, $warmup warm-up + $steps timed steps; log: $out"
  local train="$build/shakespeare-train" ld="" failed=0
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

  local c E H L B T P
  declare -A ours_tps ours_peak ours_src ours_loss torch_loss torch_tps torch_peak torch_src torch_res torch_alloc fp32_tps
  for c in ${configs//,/ }; do
    read -r E H L B T P <<<"$(config "$c")"
    if [ "$run_ours" = 1 ]; then
      local cmd=(env "LD_LIBRARY_PATH=$ld" "$train" --data "$data" --embed-size "$E" --hidden-size "$H" --num-layers "$L"
                 --batch-size "$B" --seq-length "$T" --dropout "$P" --max-iters $((warmup + steps))
                 --eval-every 0 --checkpoint-every 0 --log-every 1000000 --out-dir "$tmp/run-$c" --device cuda)
      echo "== config $c: shakespeare-train, $((warmup + steps)) steps"
      if [ "$dry" = 1 ]; then show "${cmd[@]}"; echo "  (polled: nvidia-smi --query-compute-apps=pid,used_memory every $poll_ms ms)"
      else
        polled "ours-$c" "${cmd[@]}"
        { grep -v '^epoch ' "$tmp/ours-$c.log" || true; } | tail -n 5 | sed 's/^/  /'
        local backend
        backend=$(field backend "$tmp/ours-$c.log")
        if [ "$run_rc" -ne 0 ] || [ "$backend" != cuda ]; then
          echo "  FAILED: exit status $run_rc, backend=${backend:-none}"; failed=1
        else
          ours_tps[$c]=$(field median_tokens_per_s "$tmp/ours-$c.log")
          ours_loss[$c]=$(field final_train_loss "$tmp/ours-$c.log")
          read -r ours_peak[$c] ours_src[$c] n <<<"$(peak "ours-$c" "$run_pid" "$run_base")"
          echo "  median_tokens_per_s=${ours_tps[$c]} peak_mib=${ours_peak[$c]} peak_source=${ours_src[$c]} samples=$n"
        fi
      fi
    fi
    if [ "$run_torch" = 1 ]; then
      local tf
      for tf in on off; do
        [ "$tf" = off ] && [ "$run_fp32" = 0 ] && continue
        local tcmd=(env PYTHONUNBUFFERED=1 "$python" "$root/scripts/bench_gpu_torch.py" --data "$data" --config "$c"
                    --warmup "$warmup" --steps "$steps" --tf32 "$tf")
        echo "== config $c: pytorch (tf32 $tf), $warmup + $steps steps"
        if [ "$dry" = 1 ]; then show "${tcmd[@]}"; continue; fi
        polled "torch-$c-$tf" "${tcmd[@]}"
        sed 's/^/  /' "$tmp/torch-$c-$tf.log" | tail -n 4
        if [ "$run_rc" -ne 0 ] || ! grep -q "config=$c median_tokens_per_s=" "$tmp/torch-$c-$tf.log"; then
          echo "  FAILED: exit status $run_rc"; failed=1; continue
        fi
        torch_version=$(field torch_version "$tmp/torch-$c-$tf.log")
        torch_cudnn=$(field cudnn "$tmp/torch-$c-$tf.log")
        local p s n
        read -r p s n <<<"$(peak "torch-$c-$tf" "$run_pid" "$run_base")"
        echo "  nvidia-smi peak_mib=$p peak_source=$s samples=$n"
        if [ "$tf" = on ]; then
          torch_tps[$c]=$(field median_tokens_per_s "$tmp/torch-$c-$tf.log")
          torch_res[$c]=$(field peak_mib "$tmp/torch-$c-$tf.log")
          torch_alloc[$c]=$(field max_memory_allocated_mib "$tmp/torch-$c-$tf.log")
          torch_peak[$c]=$p torch_src[$c]=$s torch_loss[$c]=$(field last_loss "$tmp/torch-$c-$tf.log")
        else
          fp32_tps[$c]=$(field median_tokens_per_s "$tmp/torch-$c-$tf.log")
        fi
      done
    fi
  done
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
  echo "arithmetic: shakespeare fp32 (cuBLAS default math, cuDNN FMA math); pytorch TF32 allowed (pt_fp32: TF32 forbidden)"
  echo "memory: *_peak_mib = peak of nvidia-smi's used_memory for the process (polled every $poll_ms ms: CUDA context,"
  echo "        library workspaces and caching-allocator reserve included); pt_reserved/pt_alloc = torch.cuda.max_memory_reserved/allocated"
  printf '%-6s %-26s %11s %11s %11s %7s %9s %9s %11s %9s\n' config 'E/H/L/B/T/dropout' sk_tok/s pt_tok/s pt_fp32 ratio sk_peak pt_peak pt_reserved pt_alloc
  for c in ${configs//,/ }; do
    read -r E H L B T P <<<"$(config "$c")"
    printf '%-6s %-26s %11s %11s %11s %7s %9s %9s %11s %9s\n' "$c" "$E/$H/$L/$B/$T/$P" "${ours_tps[$c]:-na}" \
      "${torch_tps[$c]:-na}" "${fp32_tps[$c]:-na}" "$(ratio "${ours_tps[$c]:-}" "${torch_tps[$c]:-}")" \
      "${ours_peak[$c]:-na}" "${torch_peak[$c]:-na}" "${torch_res[$c]:-na}" "${torch_alloc[$c]:-na}"
  done
  for c in ${configs//,/ }; do
    echo "note: config $c training loss at the last step: shakespeare ${ours_loss[$c]:-na}, pytorch ${torch_loss[$c]:-na}" \
         "(a sanity check only: the initializations differ)"
    [ "${ours_src[$c]:-pid}" = pid ] && [ "${torch_src[$c]:-pid}" = pid ] \
      || echo "note: config $c peak_source shakespeare=${ours_src[$c]:-na} pytorch=${torch_src[$c]:-na}"
  done
  [ "$failed" = 0 ] || echo "note: some runs failed (see above)"
  for c in ${configs//,/ }; do
    echo "config=$c shakespeare_tokens_per_s=${ours_tps[$c]:-na} pytorch_tokens_per_s=${torch_tps[$c]:-na}" \
         "ratio=$(ratio "${ours_tps[$c]:-}" "${torch_tps[$c]:-}") shakespeare_peak_mib=${ours_peak[$c]:-na}" \
         "pytorch_peak_mib=${torch_peak[$c]:-na}"
  done
  return "$failed"
}

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
