#!/usr/bin/env bash
# test_signals.sh: SIGHUP (a closed terminal), SIGINT and SIGTERM make shakespeare-train finish
# the step, write last.* and exit 129 / 130 / 143, with no lock file left; a run stopped before
# its first evaluation evaluates at the stop, so best.* exists for the sampler (the README's
# command); a run resumed from that checkpoint is bit-identical to an uninterrupted one.
# SIGKILL at random instants, repeatedly, while checkpoints are written every step: the
# surviving last.safetensors (and best.safetensors) always loads in shakespeare-sample and
# --init-from always resumes from it.
# A long step: the first signal prints a note at once, the second ends the process at once.
. "$(dirname "$0")/lib.sh"

gen_text text.txt 40 7
LONG=("$SK_TRAIN" "${TINY[@]}" --data text.txt --max-epochs 0 --max-iters 100000000 --dropout 0.1)

# ---- SIGHUP / SIGINT / SIGTERM -------------------------------------------------------------------
for sig in HUP INT TERM; do
    want=$((128 + $(kill -l "$sig")))
    out=run_$sig
    "${LONG[@]}" --out-dir "$out" --log-every 1 --eval-every 0 --checkpoint-every 0 > "$sig.out" 2> "$sig.err" &
    pid=$!
    # Started training: a few metrics records are written.
    wait_for 20 has_records "$out/metrics.jsonl" 5 || fail "SIG$sig: the trainer did not start"
    kill -s "$sig" "$pid"
    wait "$pid"; rc=$?
    [ "$rc" = "$want" ] && note "SIG$sig: exit code $rc" || fail "SIG$sig: exit code $rc, want $want"
    msg=$(cat "$sig.err")
    step=$(sed -n 's/^interrupted at step \([0-9]*\); checkpoint saved to .*last\.safetensors$/\1/p' "$sig.err")
    [ -n "$step" ] || fail "SIG$sig: unexpected stderr: $msg"
    grep -q '^done:' "$sig.out" && fail "SIG$sig: the run printed a normal summary"
    [ "$(state_step "$out/last.safetensors")" = "$step" ] || fail "SIG$sig: last.* is not at step $step"
    expect_ok "$SK_SAMPLE" --checkpoint "$out/last.safetensors" --device cpu --length 5 --argmax &&
        note "SIG$sig: the checkpoint at step $step loads"
    [ -e "$out/.lock" ] && fail "SIG$sig: a lock file is left: $(ls -a "$out")"
    expect_ok "$SK_SAMPLE" --checkpoint "$out/best.safetensors" --device cpu --length 5 --argmax &&
        [ "$(state_step "$out/best.safetensors")" = "$step" ] &&
        note "SIG$sig: evaluated at the stop: best.* at step $step samples" ||
        fail "SIG$sig: no best.* at step $step: $(ls "$out")"
    expect_ok "$SK_SAMPLE" --checkpoint "$out" --device cpu --length 5 --argmax &&
        note "SIG$sig: --checkpoint $out (the out-dir) samples"
done

# Resume the SIGINT run by 25 steps; an uninterrupted run to the same step must be identical.
step=$(state_step run_INT/last.safetensors)
if [ -n "$step" ]; then
    to=$((step + 25))
    expect_ok "${LONG[@]}" --out-dir run_INT --max-iters $to --eval-every 0 --init-from run_INT/last.safetensors
    expect_ok "${LONG[@]}" --out-dir straight --max-iters $to --eval-every 0
    same_tensors run_INT/last.safetensors straight/last.safetensors &&
        note "interrupted at $step and resumed to $to == uninterrupted to $to, bit for bit" ||
        fail "the run interrupted at $step and resumed differs from the uninterrupted run"
fi

# ---- a long step: the first signal says so at once, the second ends the process at once ----------
# Steps of 16,000 characters through a 256-wide LSTM on one thread (seconds each); last.* after
# every step. The first SIGTERM, mid-step, prints its note within a second while the step goes
# on; the second ends the process within 2 s, killed by the signal (no "interrupted" line, no
# checkpoint of the unfinished step), and the last checkpoint, of the step before, loads.
gen_text long.txt 700 9 # ~23,000 characters: one window of 16,000 in the training split
LS=("$SK_TRAIN" --data long.txt --embed-size 32 --hidden-size 256 --num-layers 1 --batch-size 1 --seq-length 16000
    --device cpu --threads 1 --max-epochs 0 --max-iters 1000 --eval-every 0 --checkpoint-every 1 --log-every 1)
"${LS[@]}" --out-dir slow > slow.out 2> slow.err &
pid=$!
started_or_ended() { [ -n "$(state_step slow/last.safetensors 2> /dev/null)" ] || ! kill -0 "$pid" 2> /dev/null; }
if ! wait_for 120 started_or_ended || ! kill -0 "$pid" 2> /dev/null; then
    fail "no checkpoint after the first long step: $(cat slow.err)"
else
    sleep 0.3 # the checkpoint written (milliseconds), the next step under way (seconds)
    step=$(state_step slow/last.safetensors)
    kill -TERM "$pid"
    if wait_for 1 grep -q '^note: stopping after this step, which then writes last\.\*; a second signal ends the process at once$' slow.err &&
        kill -0 "$pid" 2> /dev/null; then
        note "the first SIGTERM, mid-step: $(grep stopping slow.err)"
    else
        fail "no note within a second of the first SIGTERM, or the step ended first: $(cat slow.err)"
    fi
    kill -TERM "$pid"
    t0=$(date +%s%N)
    wait "$pid"; rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    [ "$rc" = 143 ] && [ "$ms" -lt 2000 ] && ! grep -q '^interrupted' slow.err &&
        note "the second SIGTERM ended the process in $ms ms" ||
        fail "the second SIGTERM: exit $rc after $ms ms: $(cat slow.err)"
    [ "$(state_step slow/last.safetensors)" = "$step" ] &&
        expect_ok "$SK_SAMPLE" --checkpoint slow/last.safetensors --device cpu --length 5 --argmax &&
        note "last.* of step $step is intact" || fail "last.* after the second signal is not step $step's: $(ls slow)"
fi
wait "$pid" 2> /dev/null

# ---- SIGKILL while writing checkpoints --------------------------------------------------------------
# Every step writes last.* (model + state) and every 3rd also best.*; kills land anywhere in
# the write protocol. Each restart resumes from the surviving checkpoint.
K=killed
kills=0 loaded=0 resumed=0
for i in $(seq 1 20); do
    args=(--out-dir "$K" --checkpoint-every 1 --eval-every 3 --log-every 50)
    from=
    if [ -e "$K/last.safetensors" ]; then from=$(state_step "$K/last.safetensors"); args+=(--init-from "$K/last.safetensors"); fi
    "${LONG[@]}" "${args[@]}" > kill.out 2> kill.err &
    pid=$!
    # The first run gets to write a checkpoint (however slow the machine); then 10 to 200 ms
    # more: kills land during start-up, loading, training steps and, mostly, checkpoint writes.
    [ "$i" = 1 ] && { wait_for 20 test -e "$K/last.safetensors" || fail "no checkpoint after 20 s"; }
    sleep "0.$(printf %03d $((10 + RANDOM % 190)))"
    if ! kill -0 "$pid" 2> /dev/null; then
        wait "$pid"
        fail "kill $i: the trainer had already exited ($?): $(cat kill.err)"
        continue
    fi
    kill -KILL "$pid"
    wait "$pid" 2> /dev/null
    kills=$((kills + 1))
    if grep -q '^error:' kill.err; then fail "kill $i: the trainer failed: $(cat kill.err)"; fi
    [ -n "$from" ] && resumed=$((resumed + 1))
    for ck in last best; do
        [ -e "$K/$ck.safetensors" ] || continue
        if timeout 20 "$SK_SAMPLE" --checkpoint "$K/$ck.safetensors" --device cpu --length 5 --argmax > s.out 2> s.err; then
            [ $ck = last ] && loaded=$((loaded + 1))
        else
            fail "kill $i: $ck.safetensors does not load: $(cat s.err)"
        fi
    done
    # The state a model names is always there (the model is written after its state).
    if [ -e "$K/last.safetensors" ]; then
        s=$(state_step "$K/last.safetensors")
        ls "$K"/last.*.state 2> /dev/null | grep -q "last\.0*$s\(\.[0-9]*\)\?\.state$" ||
            fail "kill $i: the state of step $s is missing: $(ls "$K")"
    fi
done
note "$kills kills, $loaded surviving checkpoints loaded, $resumed runs resumed from one"
[ "$loaded" = 20 ] || fail "only $loaded of 20 kills left a loadable last.safetensors behind"
# A final resume completes normally.
if [ -e "$K/last.safetensors" ]; then
    s=$(state_step "$K/last.safetensors")
    expect_ok "${LONG[@]}" --out-dir "$K" --max-iters $((s + 3)) --init-from "$K/last.safetensors" &&
        [ "$(state_step "$K/last.safetensors")" = $((s + 3)) ] && note "the final resume from step $s completes" ||
        fail "the final resume from step $s failed"
    # Temporary files of the killed writes were cleared by the runs that followed.
    stale=$(find "$K" -name '.*.tmp.*' | wc -l)
    [ "$stale" = 0 ] && note "no stale temporary files remain" || fail "$stale stale temporary files in $K"
    # Nor training states that no model names (a kill between a state's write and its model's, or
    # before the older states went): the run that followed removed them at its start.
    orphans=$(cd "$K" && for f in *.state; do
        m=${f%%.*}.safetensors
        [ -e "$m" ] && head -c "$(($(od -An -t u8 -N 8 "$m" | tr -d ' ') + 8))" "$m" | grep -qaF "$f" || echo "$f"
    done)
    [ -z "$orphans" ] && note "every training state left is its model's: $(cd "$K" && ls ./*.state | tr '\n' ' ')" ||
        fail "training states that no model names: $orphans"
fi
finish
