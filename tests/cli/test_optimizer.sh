#!/usr/bin/env bash
# test_optimizer.sh: --optimizer rmsprop (torch.optim.RMSprop, with --alpha, --momentum and
# --weight-decay) on the CPU: a run stopped after 15 steps and resumed to 30 ends bit-identical
# to an uninterrupted 30-step run, the resume keeping the checkpoint's optimizer without being told;
# the options record and the state file name it; a resume naming another optimizer is refused
# with one line (the state would not fit it), also for a checkpoint of 773fb49 (tests/data/v2,
# Adam's m and v); --init-weights starts either optimizer from another's weights; an unknown
# name is refused naming the choices; --help lists the option. The same for --optimizer sgd
# (torch.optim.SGD, with --momentum, --nesterov and --weight-decay), whose default --lr (--help's)
# is recorded when none is named, and --nesterov without a momentum is refused.
. "$(dirname "$0")/lib.sh"

gen_text text.txt 14 3
COMMON=("$SK_TRAIN" --data text.txt --embed-size 8 --hidden-size 16 --num-layers 2 --dropout 0.2
        --batch-size 2 --seq-length 8 --device cpu --threads 1 --max-epochs 0 --eval-every 10 --log /dev/null)
RMS=(--optimizer rmsprop --alpha 0.95 --momentum 0.5 --weight-decay 0.01 --lr 1e-3)

expect_ok "${COMMON[@]}" "${RMS[@]}" --out-dir a --max-iters 30 || finish
expect_ok "${COMMON[@]}" "${RMS[@]}" --out-dir b --max-iters 15 || finish
grep -aq '\\"optimizer\\":\\"rmsprop\\"' b/last.safetensors && grep -aq '\\"alpha\\":0.95' b/last.safetensors &&
    note "the options record names rmsprop and its alpha" || fail "the options record lacks the optimizer"
grep -aq 'square_avg' b/last.*.state && grep -aq 'momentum_buffer' b/last.*.state && grep -aq 'rmsprop' b/last.*.state &&
    note "the state file names rmsprop and its slots" || fail "the state file does not name rmsprop's slots"
mkdir b15 && cp b/last.safetensors b/last.*.state b15/
expect_ok "${COMMON[@]}" --out-dir b --max-iters 30 --init-from b/last.safetensors || finish
[ "$(state_step b/last.safetensors)" = 30 ] || fail "the resumed run's checkpoint is not at step 30"
if same_tensors a/last.safetensors b/last.safetensors; then
    note "rmsprop: 15 + 15 steps == 30 steps, bit for bit (the resume kept the optimizer)"
else
    fail "rmsprop: the resumed parameters differ from the uninterrupted run's"
fi
# The comparisons can fail: Adam from the same start ends elsewhere, and so does RMSprop
# without momentum (the buffer is part of what the resume restored).
expect_ok "${COMMON[@]}" --lr 1e-3 --out-dir adam --max-iters 30 || finish
if same_tensors a/last.safetensors adam/last.safetensors; then fail "--optimizer rmsprop changed nothing"; fi
# Without --lr a run takes its optimizer's default (optim.h's table), and the record holds it.
expect_ok "${COMMON[@]}" --optimizer rmsprop --out-dir rms-default --max-iters 2 || finish
grep -aq '\\"lr\\":0.002,' rms-default/last.safetensors && note "rmsprop without --lr: its default 0.002, recorded" ||
    fail "rmsprop without --lr does not record its default 0.002"
expect_ok "${COMMON[@]}" "${RMS[@]}" --momentum 0 --out-dir nomom --max-iters 30 || finish
if same_tensors a/last.safetensors nomom/last.safetensors; then fail "--momentum 0.5 changed nothing"; fi

# A resume naming another optimizer: refused, before anything is written.
expect_error "^error: --optimizer adam differs from the checkpoint's rmsprop, whose state it cannot take: resume with --optimizer rmsprop, or start a new run from its weights with --init-weights$" \
    "${COMMON[@]}" --optimizer adam --out-dir b15 --max-iters 30 --init-from b15/last.safetensors
[ "$(state_step b15/last.safetensors)" = 15 ] || fail "the refused resume wrote a checkpoint"
V2=$SK_SOURCE_DIR/tests/data/v2
mkdir old && cp "$V2"/utf8/last.safetensors "$V2"/utf8/last.000000150.state old/ && cp "$V2"/text.txt old-text.txt
expect_error "^error: --optimizer rmsprop differs from the checkpoint's adam, whose state it cannot take: " \
    "$SK_TRAIN" --init-from old/last.safetensors --optimizer rmsprop --out-dir old --max-iters 160 --device cpu \
    --threads 1 --log /dev/null

# A new run from another optimizer's weights takes the one it names.
expect_ok "${COMMON[@]}" --optimizer rmsprop --out-dir ft --max-iters 20 --init-weights adam/last.safetensors &&
    grep -aq 'square_avg' ft/last.*.state && note "--init-weights: rmsprop from adam's weights" ||
    fail "--init-weights with --optimizer rmsprop"

# --optimizer sgd (torch.optim.SGD: momentum, Nesterov's, L2 decay): the same resume, bit for bit;
# its record and state file; its default --lr; a resume naming another optimizer refused.
SGD_PLAIN=(--optimizer sgd --momentum 0.9 --weight-decay 0.01 --lr 0.05)
SGD=("${SGD_PLAIN[@]}" --nesterov)
expect_ok "${COMMON[@]}" "${SGD[@]}" --out-dir s --max-iters 30 || finish
expect_ok "${COMMON[@]}" "${SGD[@]}" --out-dir s2 --max-iters 15 || finish
grep -aq '\\"optimizer\\":\\"sgd\\"' s2/last.safetensors && grep -aq '\\"nesterov\\":\\"on\\"' s2/last.safetensors &&
    grep -aq 'momentum_buffer' s2/last.*.state && ! grep -aq 'square_avg' s2/last.*.state &&
    note "the options record names sgd and nesterov on, the state file its one slot" ||
    fail "the options record or the state file does not name sgd, nesterov or its slot"
cp -r s2 s15
expect_ok "${COMMON[@]}" --out-dir s2 --max-iters 30 --init-from s2/last.safetensors || finish
if same_tensors s/last.safetensors s2/last.safetensors; then
    note "sgd: 15 + 15 steps == 30 steps, bit for bit (the resume kept the optimizer, momentum and nesterov)"
else
    fail "sgd: the resumed parameters differ from the uninterrupted run's"
fi
expect_ok "${COMMON[@]}" "${SGD_PLAIN[@]}" --out-dir s-plain --max-iters 30 || finish
if same_tensors s/last.safetensors s-plain/last.safetensors; then fail "--nesterov changed nothing"; fi
expect_error "^error: --optimizer rmsprop differs from the checkpoint's sgd, whose state it cannot take: resume with --optimizer sgd, or start a new run from its weights with --init-weights$" \
    "${COMMON[@]}" --optimizer rmsprop --out-dir s15 --max-iters 30 --init-from s15/last.safetensors
[ "$(state_step s15/last.safetensors)" = 15 ] || fail "the refused resume wrote a checkpoint"
expect_ok "${COMMON[@]}" --optimizer sgd --out-dir sgd-default --max-iters 2 || finish
sgd_lr=$("$SK_TRAIN" --help | sed -n 's/^ *sgd: .*--lr \([0-9.e+-]*\) by default$/\1/p')
[ -n "$sgd_lr" ] && grep -aq "\\\\\"lr\\\\\":$sgd_lr," sgd-default/last.safetensors &&
    note "sgd without --lr: its default $sgd_lr, as --help says, recorded" ||
    fail "sgd without --lr does not record the default --help names ('$sgd_lr')"
expect_error "^error: --nesterov needs --momentum above 0 \(torch.optim.SGD's rule\), got 0$" \
    "${COMMON[@]}" --optimizer sgd --nesterov --out-dir nest0 --max-iters 2

expect_error '^error: --optimizer expects adam, rmsprop or sgd, got "lbfgs"$' "${COMMON[@]}" --optimizer lbfgs
"$SK_TRAIN" --help | grep -q -- '--optimizer O' && "$SK_TRAIN" --help | grep -q -- '--alpha F' &&
    "$SK_TRAIN" --help | grep -q -- '--momentum F' && "$SK_TRAIN" --help | grep -q -- '--nesterov ' &&
    note "--help lists --optimizer, --alpha, --momentum, --nesterov" ||
    fail "--help lacks the optimizer's options"
finish
