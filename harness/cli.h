/*
** harness/cli.h - command-line parsing shared by every command, and the
** commands themselves.
**
** A command declares its options in a table; lx_args_parse() splits argv into
** options and positionals and rejects anything unknown with a hint.
*/
#ifndef LX_CLI_H
#define LX_CLI_H

#include "harness/core/lx.h"
#include "harness/engine/kernels/numerics.h"

struct lx_opt {
    const char *name;       /* long name without "--" */
    int has_arg;            /* takes a value (--name V or --name=V) */
    const char *help;       /* one line */
};

#define LX_MAX_POS 64       /* the k=v arguments a command reads into tables of its own (show) */
#define LX_MAX_OPTS 24

struct lx_args {
    const char *value[LX_MAX_OPTS];     /* per option row: its value, "1" for flags, NULL if absent */
    const char **pos;                   /* (n_pos) positionals in order: the front of the argv parsed, moved there */
    int n_pos;                          /* any number: `lenx merge` of a Slurm job's N shard stores */
    const struct lx_opt *opts;          /* the table parsed against (n_opts rows), for lx_args_value */
    int n_opts;
};

/* Parse argv[0..argc) against opts (n rows). --help is always accepted and
** reported through *help. The positionals are moved, in order, to the front
** of argv (a->pos points there): argv is reordered. */
int lx_args_parse(struct lx_args *a, const struct lx_opt *opts, int n, int argc, char **argv,
                  int *help, struct lx_error *err);

/* argv[0..argc) into out (argc pointers) with a short spelling read as its long option: each argument equal
** to `spelling` ("-o") becomes `as` ("--output") unless it is the value of the option before it (--sweep -o
** names a sweep "-o"). Then lx_args_parse reports a missing value, a repeat or a stray argument as for --as. */
void lx_args_short(int argc, char **argv, char **out, const struct lx_opt *opts, int n, const char *spelling,
                   const char *as);

/* The value of option `name`, or NULL. */
const char *lx_args_get(const struct lx_args *a, const struct lx_opt *opts, int n, const char *name);

/* The same, from the table a was parsed against. */
const char *lx_args_value(const struct lx_args *a, const char *name);

/* Parse a number option; err names the option. */
int lx_args_long(const char *text, const char *name, long lo, long hi, long *out, struct lx_error *err);
int lx_args_double(const char *text, const char *name, double *out, struct lx_error *err);

/* The two rows of an option table that choose the arithmetic (`lenx run`,
** `score`, `generate`), read by lx_args_numerics. */
#define LX_NUMERICS_OPTS                                                                                     \
    {"portable", 0, "portable numerics: the same bits on any x86-64 machine with AVX2 (= --numerics portable)"}, \
    {"numerics", 1, "fast (default), portable or bf16: the arithmetic (docs/config.md#numerics); beats the sweep "  \
                    "file's"},                                                                                           \
    {"kv-cache", 1, "fp32 (default), bf16 or f16: the KV cache's numbers (docs/config.md#numerics); beats the "    \
                    "sweep file's"},                                                                                     \
    {"activations", 1, "fp32 (default) or llamacpp: x rounded before each weight product as llama.cpp rounds it "      \
                       "(docs/config.md#numerics); beats the sweep file's"}

/* The mode those options name into *out, *given = 1; *given = 0 (and *out
** untouched) when neither is there. LX_EINVAL on a value other than fast or
** portable, or on --portable with --numerics fast. */
int lx_args_numerics(const struct lx_args *a, enum lx_numerics *out, int *given, struct lx_error *err);
/* --kv-cache into *dt (numerics.h, lx_kv_parse), *given = 1; *given = 0 when absent. */
int lx_args_kv_cache(const struct lx_args *a, int *dt, int *given, struct lx_error *err);
/* --activations fp32|llamacpp (numerics.h): *given, and the mode if given. */
int lx_args_activations(const struct lx_args *a, int *llamacpp, int *given, struct lx_error *err);
/* The mode with numerics n: an error for bf16, which rounds x itself. */
int lx_check_activations(enum lx_numerics n, int llamacpp, struct lx_error *err);

/* A command without a sweep file (score, generate): the mode those options
** name (fast when neither) set for the process, before its first pass. */
int lx_cli_numerics(const struct lx_args *a, struct lx_error *err);
/* The kernels' note on stderr, when there is one (lx_blas_notice): which
** OpenBLAS kernels lenx chose, or that they are narrower than the CPU's. */
void lx_cli_blas_notice(void);

/* The global options before the command, consumed from argv (*argc and
** *argv move past them, argv[0] kept): --data DIR (or --data=DIR) sets
** LENX_DATA for this process, so every later reader of the data directory
** (harness/engine/data/corpus.c, docs/data.md#the-data-directory) sees one
** setting. LX_EINVAL when DIR is not an existing directory. The
** environment's LENX_TRAIN_ATTENTION (tiled or materialised) is read here,
** once, into lx_train_attn_set; LX_EINVAL on another value. */
int lx_args_global(int *argc, char ***argv, struct lx_error *err);

/* A command's failure: "lenx: error: MSG" on stderr; the exit status of
** code (2 bad input, 3 store or file, 1 otherwise). */
int lx_cli_fail(const struct lx_error *err, int code);

/* A command's usage text and its option table, on stdout. */
void lx_cli_usage(const char *text, const struct lx_opt *opts, int n);

/* A command's first step: parse argv against opts (lx_args_parse). -1 when
** the command goes on; else the exit status to return at once: 0 after
** printing usage and options for --help, 2 after printing a parse error. */
int lx_cli_args(struct lx_args *a, const struct lx_opt *opts, int n, const char *usage, int argc, char **argv);
/* A command used wrongly: its first stray argument (when a has any), else `missing` (what it lacks), as an
** error on stderr with the hint of `lenx CMD --help`; returns 2. */
int lx_cli_misuse(const struct lx_args *a, const char *cmd, const char *missing);

#define LX_N_OPTS(t) ((int)(sizeof t / sizeof *t))

/* The commands, one row each of harness/main.c's commands[]: each takes argv
** after its name (argv[0] is its first argument), parses its own options and
** returns the exit status (0 ok; 1 cells failed, moved or conflicted; 2 bad
** input; 3 store or file error). Each sits in the file of its logic. */
int lx_cmd_run(int argc, char **argv);          /* harness/commands/run.c */
int lx_cmd_table(int argc, char **argv);        /* harness/commands/stored.c */
int lx_cmd_compare(int argc, char **argv);      /* harness/commands/stored.c */
int lx_cmd_report(int argc, char **argv);       /* harness/commands/stored.c */
int lx_cmd_list(int argc, char **argv);         /* harness/commands/stored.c */
int lx_cmd_rm(int argc, char **argv);           /* harness/commands/stored.c */
int lx_cmd_score(int argc, char **argv);        /* harness/commands/score.c */
int lx_cmd_export(int argc, char **argv);       /* harness/commands/export.c */
int lx_cmd_show(int argc, char **argv);         /* harness/commands/show.c */
int lx_cmd_tokenize(int argc, char **argv);     /* harness/commands/tokenize.c */
int lx_cmd_generate(int argc, char **argv);     /* harness/commands/generate.c */
int lx_cmd_grade(int argc, char **argv);        /* harness/commands/grade.c */
int lx_cmd_merge(int argc, char **argv);        /* harness/commands/slurm.c */
int lx_cmd_slurm(int argc, char **argv);        /* harness/commands/slurm.c */
int lx_cmd_serve(int argc, char **argv);        /* harness/commands/serve.c */

#endif
