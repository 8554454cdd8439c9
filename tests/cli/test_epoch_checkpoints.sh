#!/usr/bin/env bash
# test_epoch_checkpoints.sh: --keep-checkpoints and the time a run records (issue 50's low items).
#   - each epoch's checkpoint carries its model's validation loss, in its name
#     (epoch-NNNN-valL.LLLL.safetensors, as char-rnn's lm_lstm_epoch1.00_1.4534.t7) and in its
#     training state (val_loss), the loss of an evaluation at the epoch's last step: run for it
#     (with --eval-every 0 the log holds exactly the epoch ends' evaluations) or the one just run
#     (with --eval-every at the epoch's end, one evaluation a step, not two);
#   - without a validation split the name stays epoch-NNNN; the last N epochs are kept (all
#     with "all");
#   - a resume from an epoch checkpoint keeps the others' states (the start's removal of
#     orphan states reads names with dots), replaces a checkpoint of an epoch it replays, and
#     removes an epoch N older in either name form (directories written before); --overwrite
#     removes both forms; shakespeare-sample --checkpoint loads one;
#   - elapsed_s continues across a resume: the state records the run's seconds, the resumed
#     run's metrics records count on from them, and a state written before (tests/data/v2)
#     starts from 0; scripts/plot_metrics.py --x time plots against it.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || skip "$PY is needed to read the logs and states"
gen_text text.txt 60 11 # ~3000 characters
# state_fields MODEL: "VERSION ELAPSED_S VAL_LOSS" of the training state MODEL names (version 3
# adds elapsed_s and val_loss after the optimizer record, where later versions keep them:
# checkpoint.c's layout).
state_fields() {
    "$PY" - "$1" <<'EOF'
import json, os, struct, sys
path = sys.argv[1]
with open(path, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    meta = json.loads(f.read(n))["__metadata__"]
with open(os.path.join(os.path.dirname(path), meta["state_file"]), "rb") as f:
    b = f.read()
version = struct.unpack_from("<I", b, 8)[0]
if version < 3:
    print(version, "-", "-")
else:
    slots = struct.unpack_from("<I", b, 136)[0]
    elapsed, val = struct.unpack_from("<dd", b, 140 + 16 * slots)
    print(version, repr(elapsed), repr(val))
EOF
}
# val_records LOG: "ITER VAL_LOSS" of each evaluation record.
val_records() { sed -n 's/^{"iter":\([0-9]*\),"val_loss":\([0-9.]*\),.*/\1 \2/p' "$1"; }

K=("$SK_TRAIN" "${TINY[@]}" --data text.txt --log-every 1000 --max-epochs 5)

echo "== the validation loss in the name and the state"
expect_ok "${K[@]}" --out-dir k --keep-checkpoints 2 --eval-every 0 || finish
names=$(cd k && ls epoch-*.safetensors | tr '\n' ' ')
[[ $names =~ ^epoch-0004-val[0-9]+\.[0-9]{4}\.safetensors\ epoch-0005-val[0-9]+\.[0-9]{4}\.safetensors\ $ ]] &&
    note "--keep-checkpoints 2 keeps epochs 4 and 5: $names" || fail "--keep-checkpoints 2 left: $(ls k)"
e4=$(ls k/epoch-0004-*.safetensors) e5=$(ls k/epoch-0005-*.safetensors)
per_epoch=$(( $(state_step "$e5") / 5 ))
[ "$per_epoch" -gt 0 ] && [ "$(state_step "$e4")" = $((4 * per_epoch)) ] &&
    note "$e4 holds step $((4 * per_epoch)), the end of epoch 4" || fail "$e4 is at the wrong step"
# --eval-every 0: the log's evaluations are those of the 5 epoch ends (the run's end among them, not twice).
want=$(for e in 1 2 3 4 5; do echo $((e * per_epoch)); done | tr '\n' ' ')
got=$(val_records k/metrics.jsonl | cut -d' ' -f1 | tr '\n' ' ')
[ "$got" = "$want" ] && note "an evaluation at each epoch's end: steps $got" || fail "evaluations at steps '$got', want '$want'"
for f in "$e4" "$e5"; do
    step=$(state_step "$f")
    logged=$(val_records k/metrics.jsonl | awk -v s="$step" '$1 == s {print $2}')
    read -r version elapsed val <<< "$(state_fields "$f")"
    in_name=${f##*-val}; in_name=${in_name%.safetensors}
    "$PY" -c "import sys; l, v, n = map(float, sys.argv[1:]); sys.exit(not (abs(l - v) <= 5e-7 and abs(v - n) <= 5e-5))" \
        "$logged" "$val" "$in_name" 2> /dev/null && [ "$version" -ge 3 ] &&
        note "$f: val_loss $val in its state (version $version), the log's $logged, $in_name in its name" ||
        fail "$f: state version $version val_loss $val, name $in_name, the log's evaluation at step $step: '$logged'"
done
# The tolerances: the log prints 6 decimals (half a unit: 5e-7), the name 4 (5e-5).

echo "== an evaluation step at the epoch's end is used, not repeated"
expect_ok "${K[@]}" --out-dir ke --keep-checkpoints 1 --eval-every "$per_epoch" --max-epochs 2 || finish
got=$(val_records ke/metrics.jsonl | cut -d' ' -f1 | tr '\n' ' ')
[ "$got" = "$per_epoch $((2 * per_epoch)) " ] && note "one evaluation a step: $got" || fail "evaluations at '$got'"
ls ke/epoch-0002-val*.safetensors > /dev/null 2>&1 && [ "$(ls ke/epoch-*.safetensors | wc -l)" = 1 ] &&
    note "$(cd ke && ls epoch-*.safetensors)" || fail "ke holds: $(ls ke)"

echo "== without a validation split: epoch-NNNN"
expect_ok "${K[@]}" --out-dir kn --keep-checkpoints all --val-frac 0 --max-epochs 2 || finish
[ "$(cd kn && ls epoch-*.safetensors | tr '\n' ' ')" = "epoch-0001.safetensors epoch-0002.safetensors " ] &&
    [ "$(state_fields kn/epoch-0002.safetensors | cut -d' ' -f1)" -ge 3 ] &&
    [ "$(state_fields kn/epoch-0002.safetensors)" = "$(state_fields kn/epoch-0002.safetensors | cut -d' ' -f1-2) nan" ] &&
    note "no validation split: epoch-0001, epoch-0002, val_loss nan" || fail "kn holds: $(ls kn)"
expect_error '^error: --keep-checkpoints expects an integer, got "some"' "${K[@]}" --out-dir kx --keep-checkpoints some

echo "== a resume from an epoch checkpoint"
# Planted: epoch 5 under another loss (the resume replays epoch 5 and must replace it), and
# epoch 3 in the old name form with its state (epoch 6 with --keep-checkpoints 3 removes it).
cp "$e5" k/epoch-0005-val9.9999.safetensors
cp "$e4" k/epoch-0003.safetensors
cp k/epoch-0004-val*.state k/epoch-0003.000000001.state # named by no model: an orphan, removed at the start
expect_ok "${K[@]}" --out-dir k --keep-checkpoints 3 --eval-every 0 --max-epochs 6 --init-from "$e4" ||
    fail "cannot resume from $e4: $(cat .ok.err)"
names=$(cd k && ls epoch-* | tr '\n' ' ')
[[ $names =~ ^(epoch-000[456]-val[0-9.]+\.(0+[0-9]+(\.[0-9]+)?\.state|safetensors)\ ){6}$ ]] && [ ! -e k/epoch-0003.safetensors ] &&
    [ ! -e k/epoch-0005-val9.9999.safetensors ] && note "epochs 4-6 with their states: $names" ||
    fail "after the resume k holds: $names"
for f in k/epoch-000[456]-*.safetensors; do
    [ "$(state_fields "$f" | cut -d' ' -f1)" -ge 3 ] || fail "$f: its state does not load"
done
e6=$(ls k/epoch-0006-*.safetensors)
expect_ok "$SK_SAMPLE" --checkpoint "$e6" --device cpu --length 20 --seed 1 && [ -n "$(cat .ok.out)" ] &&
    note "shakespeare-sample --checkpoint $e6" || fail "shakespeare-sample --checkpoint $e6: $(cat .ok.err)"
expect_ok "${K[@]}" --out-dir k --keep-checkpoints 3 --eval-every 0 --max-epochs 7 --init-from "$e6" &&
    note "--init-from $e6 (its state found after a start's cleanup)" || fail "--init-from $e6: $(cat .ok.err)"
cp ke/epoch-0002-val*.safetensors k/ && cp ke/epoch-0002-val*.state k/
cp kn/epoch-0001.safetensors kn/epoch-0001.*.state k/
expect_ok "${K[@]}" --out-dir k --overwrite --max-iters 3 --val-frac 0 || finish
[ "$(cd k && ls epoch-* 2> /dev/null)" = "" ] && note "--overwrite removes the old run's epoch checkpoints, both forms" ||
    fail "after --overwrite k holds: $(ls k)"

echo "== elapsed_s across a resume"
R=("$SK_TRAIN" "${TINY[@]}" --data text.txt --log-every 10 --eval-every 50 --max-epochs 0)
expect_ok "${R[@]}" --out-dir t --max-iters 300 || finish
read -r version e300 val <<< "$(state_fields t/last.safetensors)"
last=$(sed -n 's/^{"iter":300,"epoch".*"elapsed_s":\([0-9.]*\)}$/\1/p' t/metrics.jsonl)
"$PY" -c "import sys; e, l = map(float, sys.argv[1:]); sys.exit(not (l <= e and e > 0))" "$e300" "$last" 2> /dev/null &&
    note "last.* at step 300 records elapsed_s $e300 (the log's record of step 300: $last)" ||
    fail "state elapsed_s '$e300' (version $version), the log's step 300: '$last'"
expect_ok "${R[@]}" --out-dir t --max-iters 330 --init-from t || finish
after=$(sed -n 's/^{"iter":3[1-3]0,.*"elapsed_s":\([0-9.]*\)}$/\1/p' t/metrics.jsonl | tr '\n' ' ')
"$PY" -c "import sys; e = float(sys.argv[1]); a = list(map(float, sys.argv[2].split())); sys.exit(not (len(a) == 4 and a == sorted(a) and a[0] >= e))" \
    "$e300" "$after" 2> /dev/null && note "the resumed run's elapsed_s counts on from $e300: $after" ||
    fail "the resumed run's elapsed_s '$after' do not count on from the checkpoint's $e300"
if "$PY" -c 'import matplotlib' 2> /dev/null; then
    "$PY" "$SK_SOURCE_DIR/scripts/plot_metrics.py" t/metrics.jsonl --x time -o time.png > plot.out 2>&1 &&
        [ "$(head -c 4 time.png | od -An -c | tr -d ' ')" = '211PNG' ] && note "plot_metrics.py --x time: $(cat plot.out)" ||
        fail "plot_metrics.py --x time: $(cat plot.out)"
fi
# A state written before version 3 (tests/data/v2: 773fb49's, version 1) holds no time: the
# resumed run starts from 0.
V2=$SK_SOURCE_DIR/tests/data/v2
mkdir v2 && cp "$V2"/utf8/last.safetensors "$V2"/utf8/last.000000150.state v2/ && cp "$V2"/text.txt v2text.txt
[ "$(state_fields v2/last.safetensors | cut -d' ' -f1)" -lt 3 ] || fail "tests/data/v2's state is of version 3"
expect_ok "$SK_TRAIN" --init-from v2/last.safetensors --out-dir v2 --data v2text.txt --max-iters 160 --log-every 5 --device cpu \
    --threads 1 || finish
read -r version e160 val <<< "$(state_fields v2/last.safetensors)"
first=$(sed -n 's/^{"iter":155,"epoch".*"elapsed_s":\([0-9.]*\)}$/\1/p' v2/metrics.jsonl)
"$PY" -c "import sys; f, e = map(float, sys.argv[1:]); sys.exit(not (0 <= f <= e < 60))" "$first" "$e160" 2> /dev/null &&
    [ "$version" -ge 3 ] && note "from a state before version 3: elapsed_s from 0 ($first at step 155, $e160 at 160)" ||
    fail "from a state before version 3: elapsed_s '$first' at step 155, the state's '$e160' (version $version)"
finish
