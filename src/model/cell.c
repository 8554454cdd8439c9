// cell.c: cell.h: the table of cells, one row each.
#include <stddef.h>
#include <string.h>

#include "shakespeare/cell.h"

static const sk_cell cells[SK_CELL_COUNT] = {
    [SK_CELL_LSTM] = {.kind = SK_CELL_LSTM, .name = "lstm",
                      .equations = "c = f*c' + i*g, h = o*tanh(c) (nn.LSTM)", .gates = 4,
                      .gate_names = "i, f, g, o", .n_states = 2, .state_names = {"h", "c"}, .split_hh = 0,
                      .forget_gate = 1, .torch_module = "LSTM", .torch_prefix = "lstm", .cudnn_mode = 2},
    [SK_CELL_GRU] = {.kind = SK_CELL_GRU, .name = "gru", .equations = "h = n + z*(h' - n), n = tanh(x_n + r*h_n) (nn.GRU)",
                     .gates = 3, .gate_names = "r, z, n", .n_states = 1, .state_names = {"h"}, .split_hh = 1,
                     .forget_gate = -1, .torch_module = "GRU", .torch_prefix = "gru", .cudnn_mode = 3},
    [SK_CELL_RNN] = {.kind = SK_CELL_RNN, .name = "rnn", .equations = "h = tanh(x_h + h_h) (nn.RNN, tanh)",
                     .gates = 1, .gate_names = "h", .n_states = 1, .state_names = {"h"}, .split_hh = 0,
                     .forget_gate = -1, .torch_module = "RNN", .torch_prefix = "rnn", .cudnn_mode = 1},
};

const sk_cell *sk_cell_get(sk_cell_kind kind) {
    if ((int)kind < 0 || (int)kind >= SK_CELL_COUNT || !cells[kind].name) return NULL;
    return &cells[kind];
}

const sk_cell *sk_cell_by_name(const char *name) {
    for (int i = 0; i < SK_CELL_COUNT; i++)
        if (cells[i].name && strcmp(cells[i].name, name) == 0) return &cells[i];
    return NULL;
}

const char *sk_cell_names(void) {
    static char names[64];
    if (!names[0]) {
        size_t n = 0;
        for (int i = 0; i < SK_CELL_COUNT; i++) {
            if (!cells[i].name) continue;
            const size_t k = strlen(cells[i].name);
            if (n + k + 2 > sizeof names) break;
            if (n) names[n++] = '|';
            memcpy(names + n, cells[i].name, k + 1);
            n += k;
        }
    }
    return names;
}
