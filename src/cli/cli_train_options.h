// cli_train_options.h: shakespeare-train's options, declared once (cli_options.h).
// defines: cli_train_program, cli_train_options_json, cli_train_options_identity, cli_train_take_resolved
#ifndef SK_CLI_TRAIN_OPTIONS_H
#define SK_CLI_TRAIN_OPTIONS_H

#include "cli_options.h"
#include "shakespeare/trainer.h"

extern const cli_program cli_train_program;

// The options record of o (the trainer's sk_train_options.options_json): malloc'd, or NULL.
char *cli_train_options_json(const sk_train_options *o);
// What the data-parallel ranks must agree on (the trainer's options_identity): malloc'd, or NULL.
char *cli_train_options_identity(const sk_train_options *o);
// The trainer's take_resolved: the entries marked resolved (precision, rnn-impl, tensor-cores).
int cli_train_take_resolved(sk_train_options *o, const sk_backend_config *from, char *took, size_t n);

#endif
