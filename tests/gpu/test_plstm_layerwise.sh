#!/usr/bin/env bash
# test_plstm_layerwise.sh (label gpu): the persistent LSTM's layer-after-layer kernels with one
# grid.sync a step (kernels/lstm_layerwise.h, --rnn-impl persistent-layerwise) against the CPU
# backend, in graph replay and resume (plstm_layerwise_check.sh says what is held). Skipped (77)
# where no GPU is usable.
. "$(dirname "$0")/../cli/lib.sh"

require_gpu
impl=persistent-layerwise
. "$(dirname "$0")/plstm_layerwise_check.sh"
