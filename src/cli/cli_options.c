// cli_options.c: the parser, --help and the options record made from a program's table (see cli_options.h).
#include "cli_options.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "shakespeare/checkpoint.h"

#define FIELD(opts, o, T) ((T *)(void *)((char *)(opts) + (o)->offset))
#define CFIELD(opts, o, T) ((const T *)(const void *)((const char *)(opts) + (o)->offset))

// Parses v into field, o's field (of the options struct, or a scratch copy of it).
static sk_status parse_field(const cli_option *o, const char *v, void *field, sk_error *err) {
    char flag[80];
    snprintf(flag, sizeof flag, "--%s", o->name);
    switch (o->type) {
    case CLI_ACTION: return SK_OK;
    case CLI_FLAG: *(int *)field = 1; return SK_OK;
    case CLI_STR: *(const char **)field = v; return SK_OK;
    case CLI_INT: return cli_parse_int(flag, v, (long)o->lo, (long)o->hi, field, err);
    case CLI_I64: return cli_parse_i64(flag, v, (int64_t)o->lo, (int64_t)o->hi, field, err);
    case CLI_U64: return cli_parse_u64(flag, v, field, err);
    case CLI_FLOAT: return cli_parse_float(flag, v, o->lo, o->lo_open, o->hi, o->hi_open, field, err);
    case CLI_DOUBLE: return cli_parse_double(flag, v, o->lo, o->lo_open, o->hi, o->hi_open, field, err);
    case CLI_KIND: return o->kind->parse(flag, v, field, err);
    }
    return sk_fail(err, SK_ERR_ARG, "%s: unknown option type", flag);
}

// The entry named "help" (for -h), or -1.
static int help_entry(const cli_program *p) {
    for (size_t i = 0; i < p->n_opts; i++)
        if (p->opts[i].type == CLI_ACTION && strcmp(p->opts[i].name, "help") == 0) return (int)i;
    return -1;
}

int cli_parse_options(const cli_program *p, int argc, char **argv, void *opts, unsigned char *named) {
    struct option *lo = calloc(p->n_opts + 1, sizeof *lo);
    if (!lo) cli_die(CLI_EXIT_FAILURE, "out of memory");
    for (size_t i = 0; i < p->n_opts; i++) {
        const cli_option *o = &p->opts[i];
        int takes = o->type != CLI_ACTION && o->type != CLI_FLAG;
        lo[i] = (struct option){o->name, takes ? required_argument : no_argument, 0, 256 + (int)i};
    }
    opterr = 0;
    int action = -1;
    const int help = help_entry(p);
    for (;;) {
        int c = getopt_long(argc, argv, help >= 0 ? ":h" : ":", lo, NULL);
        if (c == -1) break;
        if (c == 'h') c = 256 + help;
        if (c < 256 || c >= 256 + (int)p->n_opts) cli_bad_option(c, argv);
        const cli_option *o = &p->opts[c - 256];
        if (o->type == CLI_ACTION) {
            action = c - 256;
            break;
        }
        sk_error err = {{0}};
        char line[SK_ERROR_MSG_MAX + 8]; // a kind's parser names the setting; the user reads the flag
        if (parse_field(o, optarg, FIELD(opts, o, void), &err) != SK_OK)
            cli_die(CLI_EXIT_USAGE, "%s", cli_message(p, err.msg, line, sizeof line));
        if (named) named[c - 256] = 1;
        if (o->set_bit && p->set_offset != (size_t)-1) *(int *)(void *)((char *)opts + p->set_offset) |= o->set_bit;
    }
    free(lo);
    if (action < 0 && optind < argc) cli_die(CLI_EXIT_USAGE, "unexpected argument \"%s\" (see --help)", argv[optind]);
    return action;
}

// x in the fewest significant digits that read back as x (%g's 6 when they do), so that a
// recorded value is the run's own, bit for bit.
static void shortest_float(float x, char *buf, size_t n) {
    for (int digits = 6; digits < 9; digits++) {
        snprintf(buf, n, "%.*g", digits, (double)x);
        if (strtof(buf, NULL) == x) return;
    }
    snprintf(buf, n, "%.9g", (double)x);
}
static void shortest_double(double x, char *buf, size_t n) {
    for (int digits = 6; digits < 17; digits++) {
        snprintf(buf, n, "%.*g", digits, x);
        if (strtod(buf, NULL) == x) return;
    }
    snprintf(buf, n, "%.17g", x);
}

// The value of field (o's, of the options struct or a scratch copy) as --help and the options
// record write it.
static const char *field_text(const cli_option *o, const void *field, char *buf, size_t n) {
    switch (o->type) {
    case CLI_ACTION: return "";
    case CLI_FLAG: return *(const int *)field ? "on" : "off";
    case CLI_STR: {
        const char *s = *(const char *const *)field;
        return s ? s : "none";
    }
    case CLI_INT: snprintf(buf, n, "%d", *(const int *)field); return buf;
    case CLI_I64: snprintf(buf, n, "%lld", (long long)*(const int64_t *)field); return buf;
    case CLI_U64: snprintf(buf, n, "%llu", (unsigned long long)*(const uint64_t *)field); return buf;
    case CLI_FLOAT: shortest_float(*(const float *)field, buf, n); return buf;
    case CLI_DOUBLE: shortest_double(*(const double *)field, buf, n); return buf;
    case CLI_KIND: return o->kind->name(field, buf, n);
    }
    return "";
}

static const char *value_text(const cli_option *o, const void *opts, char *buf, size_t n) {
    return field_text(o, CFIELD(opts, o, void), buf, n);
}

#define HELP_INDENT 27 // "  --flag ARG" in a column of 25, then the text

// text at the help column plus `extra`, its continuation lines ('\n') at the same column.
static void print_indented(const char *text, int extra) {
    for (const char *s = text; *s; s++) {
        putchar(*s);
        if (*s == '\n' && s[1]) printf("%*s", HELP_INDENT + extra, "");
    }
}

// Under an option whose kind has words: "  WORD: its help" for each word with help, in the
// table's order (the words without help are named by the option's own text).
static void print_word(const char *word, const char *help) {
    if (!help) return;
    printf("%*s  %s: ", HELP_INDENT, "", word);
    print_indented(help, 4);
    putchar('\n');
}

static void print_words(const cli_kind *k) {
    if (k && k->words)
        for (size_t i = 0; i < k->words->n; i++) print_word(k->words->rows[i].word, k->words->rows[i].help);
    const char *word, *help = NULL;
    if (k && k->word_at)
        for (int i = 0; (word = k->word_at(i, &help)) != NULL; i++) print_word(word, help);
}

void cli_print_help(const cli_program *p, const void *defaults) {
    fputs(p->usage, stdout);
    char actions[128] = "";
    for (size_t i = 0; i < p->n_opts; i++) {
        const cli_option *o = &p->opts[i];
        if (o->section) printf("%s\n", o->section);
        if (!o->help) continue; // hidden: a benchmark's or a test's knob
        if (o->type == CLI_ACTION) { // listed together on the last line: "--help, --version"
            size_t k = strlen(actions);
            snprintf(actions + k, sizeof actions - k, "%s--%s", k ? ", " : "", o->name);
            continue;
        }
        char flag[80], value[256];
        snprintf(flag, sizeof flag, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        printf("  %-24s ", flag);
        print_indented(o->help, 0);
        if (strstr(o->help, "(default:") || strstr(o->help, "(required)")) {
            putchar('\n');
            print_words(o->type == CLI_KIND ? o->kind : NULL);
            continue;
        }
        const char *d = o->default_text ? o->default_text : value_text(o, defaults, value, sizeof value);
        const size_t len = strlen(o->help);
        if (len && o->help[len - 1] == '\n') printf("%*s(default: %s)\n", HELP_INDENT, "", d);
        else printf("%s(default: %s)\n", len ? " " : "", d);
        print_words(o->type == CLI_KIND ? o->kind : NULL);
    }
    if (actions[0]) printf("  %s\n", actions);
}

// s as a JSON string body: quotes, backslashes and control characters escaped.
static void json_escape(const char *s, char *out, size_t n) {
    size_t k = 0;
    for (; *s && k + 7 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') out[k++] = '\\', out[k++] = (char)c;
        else if (c < 0x20) k += (size_t)snprintf(out + k, n - k, "\\u%04x", c);
        else out[k++] = (char)c;
    }
    out[k] = '\0';
}

char *cli_options_json(const cli_program *p, const void *opts) {
    size_t cap = 256, len = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    out[len++] = '{';
    for (size_t i = 0; i < p->n_opts; i++) {
        const cli_option *o = &p->opts[i];
        if (!o->json) continue;
        char value[1024], escaped[6 * 1024 + 8], item[6 * 1024 + 128];
        const char *v = value_text(o, opts, value, sizeof value);
        int quoted = o->type == CLI_STR || o->type == CLI_FLAG || (o->type == CLI_KIND && o->kind->quoted);
        if (quoted) json_escape(v, escaped, sizeof escaped);
        int k = snprintf(item, sizeof item, "%s\"%s\":%s%s%s", len > 1 ? "," : "", o->json, quoted ? "\"" : "",
                         quoted ? escaped : v, quoted ? "\"" : "");
        if (len + (size_t)k + 2 > cap) {
            cap = 2 * (len + (size_t)k + 2);
            char *grown = realloc(out, cap);
            if (!grown) return free(out), NULL;
            out = grown;
        }
        memcpy(out + len, item, (size_t)k);
        len += (size_t)k;
    }
    out[len++] = '}';
    out[len] = '\0';
    return out;
}

char *cli_options_identity(const cli_program *p, const void *opts) {
    size_t cap = 1024, len = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    out[0] = '\0';
    for (size_t i = 0; i < p->n_opts; i++) {
        const cli_option *o = &p->opts[i];
        if (o->type == CLI_ACTION || o->per_rank) continue;
        char value[1024], item[1200];
        const char *v = value;
        if (o->type == CLI_FLOAT) snprintf(value, sizeof value, "%.7g", (double)*CFIELD(opts, o, float));
        else if (o->type == CLI_DOUBLE) snprintf(value, sizeof value, "%.17g", *CFIELD(opts, o, double));
        else v = value_text(o, opts, value, sizeof value);
        const int k = snprintf(item, sizeof item, "--%s=%s;", o->name, v);
        if (len + (size_t)k + 1 > cap) {
            cap = 2 * (len + (size_t)k + 1);
            char *grown = realloc(out, cap);
            if (!grown) return free(out), NULL;
            out = grown;
        }
        memcpy(out + len, item, (size_t)k + 1);
        len += (size_t)k;
    }
    return out;
}

const char *cli_flag_of(const cli_program *p, const char *setting, char *buf, size_t n) {
    for (size_t i = 0; i < p->n_opts; i++)
        if (strcmp(p->opts[i].name, setting) == 0) return snprintf(buf, n, "--%s", setting), buf;
    return NULL;
}

const char *cli_message(const cli_program *p, const char *msg, char *buf, size_t n) {
    size_t w = strcspn(msg, " ");
    char setting[64], flag[80];
    if (w == 0 || w >= sizeof setting || msg[w] != ' ') return msg;
    memcpy(setting, msg, w);
    setting[w] = '\0';
    if (!cli_flag_of(p, setting, flag, sizeof flag)) return msg;
    snprintf(buf, n, "%s%s", flag, msg + w);
    return buf;
}

void cli_kept_free(cli_kept *k) {
    for (size_t i = 0; i < k->n; i++) free(k->s[i]);
    free(k->s);
    k->s = NULL, k->n = 0;
}

// A copy of s that lives as long as *k; NULL when out of memory.
static char *keep(cli_kept *k, const char *s) {
    char **grown = realloc(k->s, (k->n + 1) * sizeof *grown);
    if (!grown) return NULL;
    k->s = grown;
    char *copy = strdup(s);
    if (copy) k->s[k->n++] = copy;
    return copy;
}

static void add_line(char *notes, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add_line(char *notes, size_t n, const char *fmt, ...) {
    size_t used = strlen(notes);
    if (used + 1 >= n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(notes + used, n - used - 1, fmt, ap);
    va_end(ap);
    used = strlen(notes);
    notes[used] = '\n', notes[used + 1] = '\0';
}

// A recorded value read into a scratch field of o's type (a flag's "on" or "off" included).
static sk_status parse_recorded(const cli_option *o, const char *v, void *field, sk_error *err) {
    if (o->type != CLI_FLAG) return parse_field(o, v, field, err);
    if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0) return sk_fail(err, SK_ERR_ARG, "not on or off");
    *(int *)field = strcmp(v, "on") == 0;
    return SK_OK;
}

sk_status cli_options_inherit(const cli_program *p, void *opts, const unsigned char *named, const char *record,
                              cli_kept *kept, char *notes, size_t notes_size, sk_error *err) {
    if (notes_size) notes[0] = '\0';
    for (size_t i = 0; i < p->n_opts; i++) {
        const cli_option *o = &p->opts[i];
        char rec[1024], mine[1024], theirs[1024];
        if (!o->json || o->type == CLI_ACTION || sk_train_config_value(record, o->json, rec, sizeof rec) != SK_OK)
            continue;
        // The recorded value, checked (a kind stores what it parses: the text must outlive opts).
        union { int i; int64_t l; double d; const char *s; char bytes[16]; } scratch;
        memset(&scratch, 0, sizeof scratch);
        sk_error why;
        const char *v = o->type == CLI_STR || o->type == CLI_KIND ? keep(kept, rec) : rec;
        if (!v) return sk_fail(err, SK_ERR_NOMEM, "out of memory for the checkpoint's options");
        if (parse_recorded(o, v, &scratch, &why) != SK_OK) {
            add_line(notes, notes_size, "the checkpoint records --%s \"%s\", which this version does not take; "
                     "the run uses --%s %s", o->name, rec, o->name, value_text(o, opts, mine, sizeof mine));
            continue;
        }
        if (named && named[i]) {
            const char *now = value_text(o, opts, mine, sizeof mine), *was = field_text(o, &scratch, theirs, sizeof theirs);
            if (strcmp(now, was) != 0)
                add_line(notes, notes_size, "--%s %s differs from the checkpoint's %s: the command line's value is used",
                         o->name, now, was);
            continue;
        }
        if (parse_recorded(o, v, FIELD(opts, o, void), err) != SK_OK) return SK_ERR_ARG; // checked above
    }
    return SK_OK;
}

int cli_options_take_resolved(const cli_program *p, void *opts, size_t sub_offset, size_t sub_size, const void *from,
                              char *took, size_t n) {
    int differed = 0;
    size_t at = 0;
    if (took && n) took[0] = '\0';
    for (size_t i = 0; i < p->n_opts; i++) {
        const cli_option *o = &p->opts[i];
        if (!o->resolved || o->offset < sub_offset || o->offset >= sub_offset + sub_size) continue;
        char buf[256], mine[256], theirs[256];
        snprintf(mine, sizeof mine, "%s", field_text(o, CFIELD(opts, o, void), buf, sizeof buf));
        const char *w = field_text(o, (const char *)from + (o->offset - sub_offset), theirs, sizeof theirs);
        if (strcmp(mine, w) == 0) continue;
        sk_error err = {{0}};
        if (parse_field(o, w, FIELD(opts, o, void), &err) != SK_OK) continue; // a value no word names: keep ours
        if (took && at < n) at += (size_t)snprintf(took + at, n - at, "%s--%s %s", differed ? ", " : "", o->name, mine);
        differed++;
    }
    return differed;
}
