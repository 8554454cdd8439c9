// options_table.c: prints a program's option table (src/cli/cli_options.h), one entry a line:
// "NAME JSON_KEY" (JSON_KEY "-" when the option is not in the options record), for
// tests/cli/test_help.sh, which checks --help, the man page and the checkpoint's record against it;
// hidden entries (no help text) are left out, since --help leaves them out.
// Usage: options_table train|sample
#include <stdio.h>
#include <string.h>

#include "cli_sample_options.h"
#include "cli_train_options.h"

int main(int argc, char **argv) {
    const cli_program *p = argc != 2                     ? NULL
                           : strcmp(argv[1], "train") == 0  ? &cli_train_program
                           : strcmp(argv[1], "sample") == 0 ? &cli_sample_program
                                                            : NULL;
    if (!p) {
        fprintf(stderr, "usage: options_table train|sample\n");
        return 2;
    }
    for (size_t i = 0; i < p->n_opts; i++)
        if (p->opts[i].help) printf("%s %s\n", p->opts[i].name, p->opts[i].json ? p->opts[i].json : "-");
    return 0;
}
