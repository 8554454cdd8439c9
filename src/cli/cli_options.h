// cli_options.h: a program's options declared once, in one table, from which the parser,
// --help (and so the man page, help2man's reading of it) and the options record (the JSON
// stored in checkpoints) are made.
// defines: cli_type, cli_kind, cli_option, cli_program, cli_parse_options, cli_print_help, cli_options_json,
//          cli_options_identity, cli_options_inherit, cli_options_take_resolved, cli_kept, cli_kept_free, cli_flag_of, cli_message
// A table entry names the long flag, the value's metavariable, the field it sets (an offset
// into the program's options struct), the range or the choices, the help text and the JSON
// key. Adding an option is one entry plus the code that uses the field. A backend setting is a
// field of sk_backend_config (backend.h), which both programs' options embed as `backend`: its
// entry is one row of cli_backend_options.h's list, which both tables splice in (marked for
// training, sampling or both), points at AT(backend.FIELD), sk_backend_config_make hands it to every backend, and
// .resolved = 1 records what the backend settled on and restores the given value when a device
// refuses a checkpoint's (cli_options_take_resolved); so the field, the entry and its consumer.
#ifndef SK_CLI_OPTIONS_H
#define SK_CLI_OPTIONS_H

#include <stddef.h>

#include "shakespeare/status.h"
#include "shakespeare/words.h"

typedef enum {
    CLI_ACTION, // no value, no field: handled by the caller (--help, --version)
    CLI_FLAG,   // no value: the int field becomes 1
    CLI_STR,    // const char * field, borrowed from argv
    CLI_INT,    // int in [lo, hi]
    CLI_I64,    // int64_t in [lo, hi]
    CLI_U64,    // uint64_t, any
    CLI_FLOAT,  // float in lo..hi (lo_open, hi_open: bound excluded), checked in single precision
    CLI_DOUBLE, // double in lo..hi
    CLI_KIND,   // parsed and named by a cli_kind (enumerations, values with special words)
} cli_type;

// A value the generic types do not cover: parse s into the field, name the field's value (for
// the default in --help and the options record). flag: "--name", for messages.
typedef struct {
    sk_status (*parse)(const char *flag, const char *s, void *field, sk_error *err);
    const char *(*name)(const void *field, char *buf, size_t n);
    int quoted; // 1: a JSON string in the options record; 0: a bare number
    // An enumeration's words (words.h), or NULL: --help lists, under the option, each word that
    // has help with its phrase, so that a new word is one row of the library's table.
    const sk_words *words;
    // Or, for an enumeration whose table is a library's descriptors (cell.h, optim.h): word i and
    // its help phrase in *help, NULL past the last; --help lists them the same way.
    const char *(*word_at)(int i, const char **help);
} cli_kind;

typedef struct {
    const char *section;      // heading printed before this option in --help ("Data:"), or NULL
    const char *name;         // the long flag without "--"; also the setting's name in messages
    const char *arg;          // the value's name in --help; NULL for CLI_ACTION and CLI_FLAG
    cli_type type;
    size_t offset;            // offsetof(the options struct, the field) (not CLI_ACTION)
    double lo, hi;            // numeric range
    int lo_open, hi_open;     // CLI_FLOAT, CLI_DOUBLE: the bound itself is excluded
    const cli_kind *kind;     // CLI_KIND
    const char *help;         // "\n" starts a continuation line; "(default: ...)" is appended unless
                              // the text holds one or says "(required)"; NULL: hidden from --help
                              // and the man page (a knob for benchmarks, documented where they are)
    const char *default_text; // the default as --help says it; NULL: the default value, named
    const char *json;         // key in the options record; NULL: not recorded
    int set_bit;              // OR-ed into the program's set mask when given (0: none)
    int per_rank;             // 1: data-parallel ranks may differ here (a path, threads): not in the identity
    int resolved;             // 1: a backend setting that the backend resolves (auto's choice), which the
                              // options record names as it ran (cli_options_take_resolved)
} cli_option;

typedef struct {
    const char *name;         // "shakespeare-train"
    const char *usage;        // printed before the options: "Usage: ...\n<what it does>\n\n"
    const cli_option *opts;
    size_t n_opts;
    size_t set_offset;        // offsetof the int set mask in the options struct, or (size_t)-1
} cli_program;

// Parses argv into opts (defaults already set). Returns the index of a CLI_ACTION entry met
// (the caller acts on it), or -1 when all of argv was options. -h is the entry named "help".
// named (NULL, or p->n_opts entries): named[i] becomes 1 when entry i is given. Bad input:
// cli_die, exit 2.
int cli_parse_options(const cli_program *p, int argc, char **argv, void *opts, unsigned char *named);

// --help: p->usage, then each entry with its default taken from defaults.
void cli_print_help(const cli_program *p, const void *defaults);

// The options record: {"key":value,...} of the entries with a JSON key, in table order, from
// opts. Returns a malloc'd string, or NULL when out of memory.
char *cli_options_json(const cli_program *p, const void *opts);

// What data-parallel ranks must agree on: "--name=value;" for every entry but the actions and
// those marked per_rank, in table order (floats to 7 significant digits, doubles to 17).
// Returns a malloc'd string, or NULL when out of memory.
char *cli_options_identity(const cli_program *p, const void *opts);

// Strings that cli_options_inherit copied out of a record, for the life of the options that point to them.
typedef struct {
    char **s;
    size_t n;
} cli_kept;
void cli_kept_free(cli_kept *k); // safe twice

// Resume: the values a checkpoint's options record holds (train_config, the JSON of
// cli_options_json; read with checkpoint.h's sk_train_config_value) become opts' values, for
// every entry with a JSON key that the command line did not name (named as cli_parse_options
// fills it; NULL: none was). The entries without a key are never recorded, so never taken:
// each run sets them itself. notes gets one line ('\n'-ended) for each named entry whose value
// differs from the record's, and one for a recorded value that this program does not take (that
// entry keeps its value). Strings taken are copied into *kept. SK_ERR_NOMEM when out of memory.
sk_status cli_options_inherit(const cli_program *p, void *opts, const unsigned char *named, const char *record,
                              cli_kept *kept, char *notes, size_t notes_size, sk_error *err);

// For every entry marked resolved whose field lies in the struct at sub_offset of opts (an
// sk_backend_config embedded in the options): takes the value of the same field of `from` (a
// struct of that type) into opts, by its name (so any type that names and parses its values),
// and returns how many differed, listed in took ("--precision tf32, --rnn-impl cudnn", opts's
// values before; took may be NULL).
int cli_options_take_resolved(const cli_program *p, void *opts, size_t sub_offset, size_t sub_size, const void *from,
                              char *took, size_t n);

// "--name" of the entry whose name is setting, or NULL.
const char *cli_flag_of(const cli_program *p, const char *setting, char *buf, size_t n);

// A library message as the user sees it: a leading setting name ("precision bf16 runs ...")
// becomes its flag ("--precision bf16 runs ..."); other messages are copied as they are.
const char *cli_message(const cli_program *p, const char *msg, char *buf, size_t n);

#endif
