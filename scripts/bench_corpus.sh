#!/usr/bin/env bash
# bench_corpus.sh: corpora of any size. Generates corpora of 1 MB, 100 MB and 1 GB
# (copies of data/tinyshakespeare.txt, so that the vocabulary and hence the model are the same)
# under a temporary directory, and measures with build/shakespeare-train:
#   - tokenization (the first run builds the token cache): seconds and MB/s of source, on one
#     core (taskset), as the trainer reports it (both streaming passes and the write), in wall
#     time and per CPU second (this machine is shared: wall time includes waiting for a core);
#     next to it, the peer: cp of the corpus into the cache directory;
#   - the start-up of a second run: the time the trainer reports for checking and mapping the
#     cache (corpora of 16 MB or more), and the wall time of the whole 1-step run, next to the
#     same on 1 MB (the difference is what the corpus size costs);
#   - the peak anonymous memory (RssAnon, sampled every 5 ms from /proc) of a 20-step run of
#     the default model on each corpus; they must agree within 32 MB.
# The corpora and caches are removed at the end. Usage: scripts/bench_corpus.sh [SIZES_MB...]
# (default 1 100 1000). Output: plain lines, the last one "memory_spread_mb=... ok|FAIL".
set -euo pipefail
cd "$(dirname "$0")/.."
TRAIN=${SK_TRAIN:-build/shakespeare-train}
[ -x "$TRAIN" ] || bash scripts/build.sh > /dev/null
SIZES=("${@:-1 100 1000}")
[ $# -gt 0 ] || SIZES=(1 100 1000)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sk_bench_corpus.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export OPENBLAS_NUM_THREADS=1

echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) cores"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (modified)')"
echo "model: default (E=128, H=256, L=2, B=32, T=100), --threads 1, --eval-tokens 3200"

# run_peak LOG CMD...: runs CMD, samples its RssAnon; prints "peak_rss_anon_kb wall_s".
run_peak() {
    local log=$1; shift
    local t0 peak=0 kb
    t0=$(date +%s.%N)
    "$@" > "$log" 2>&1 &
    local pid=$!
    while kill -0 "$pid" 2> /dev/null; do
        kb=$(sed -n 's/^RssAnon:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status" 2> /dev/null || true)
        [ -n "$kb" ] && [ "$kb" -gt "$peak" ] && peak=$kb
        sleep 0.005
    done
    wait "$pid" || { echo "run failed:"; cat "$log"; exit 1; }
    echo "$peak $(echo "$(date +%s.%N) - $t0" | bc)"
}

declare -A PEAK
for mb in "${SIZES[@]}"; do
    corpus=$WORK/corpus_${mb}mb.txt
    bytes=$((mb * 1000 * 1000))
    head -c "$bytes" < <(while :; do cat data/tinyshakespeare.txt; done) > "$corpus" || true
    [ "$(stat -c %s "$corpus")" = "$bytes" ] || { echo "could not write $corpus"; exit 1; }
    common=(--data "$corpus" --cache-dir "$WORK/cache" --threads 1 --device cpu --eval-tokens 3200
            --eval-every 0 --checkpoint-every 0 --log-every 10)
    # 1. First run: tokenizes on one core (the trainer's own line), 1 step.
    first=$(run_peak "$WORK/first.log" taskset -c 0 "$TRAIN" "${common[@]}" --out-dir "$WORK/o1" --max-iters 1)
    tok=$(grep '^tokenized' "$WORK/first.log" || echo "tokenized: under a second (no rate line)")
    echo "corpus ${mb} MB: first run (builds the cache): wall ${first#* } s, peak RssAnon $((${first% *} / 1024)) MB; $tok"
    # Peer: copying the corpus into the cache directory (what writing a file of that size costs here).
    t0=$(date +%s.%N); cp "$corpus" "$WORK/cache/copy"
    echo "corpus ${mb} MB: peer: cp of the corpus next to the cache: $(echo "$(date +%s.%N) - $t0" | bc) s"
    rm -f "$WORK/cache/copy"
    # 2. Second run: the cache is reused; 1 step.
    second=$(run_peak "$WORK/second.log" "$TRAIN" "${common[@]}" --out-dir "$WORK/o2" --max-iters 1)
    grep -q 'rebuilding' "$WORK/second.log" && { echo "the second run rebuilt the cache"; exit 1; }
    opened=$(sed -n 's/.*checked and mapped in \([0-9.]*\) s.*/\1/p' "$WORK/second.log")
    echo "corpus ${mb} MB: second run, 1 step (start-up with the cache): wall ${second#* } s;" \
         "cache checked and mapped in ${opened:-(not reported below 16 MB)} s"
    # 3. 20 steps: peak anonymous memory.
    run=$(run_peak "$WORK/steps.log" "$TRAIN" "${common[@]}" --out-dir "$WORK/o3" --max-iters 20)
    PEAK[$mb]=${run% *}
    echo "corpus ${mb} MB: 20-step run: wall ${run#* } s, peak RssAnon $((${run% *} / 1024)) MB (${run% *} kB)"
    rm -rf "$corpus" "$WORK/cache" "$WORK"/o1 "$WORK"/o2 "$WORK"/o3
done
lo=; hi=
for mb in "${SIZES[@]}"; do
    p=${PEAK[$mb]}
    [ -z "$lo" ] || [ "$p" -lt "$lo" ] && lo=$p
    [ -z "$hi" ] || [ "$p" -gt "$hi" ] && hi=$p
done
spread=$(((hi - lo) / 1024))
echo "memory_spread_mb=$spread (peak RssAnon of the 20-step runs, max - min) $([ "$spread" -le 32 ] && echo ok || echo FAIL)"
