/*
** harness/main.c - the lenx command line: the global options (--data,
** --help, --version) and the table of commands.
**
** Each command is one function `int lx_cmd_<name>(int argc, char **argv)`
** beside its logic (declared in cli.h): it parses its own options (a table
** of struct lx_opt and a usage text, through cli.c) and returns the exit
** status. To add a command: write that function, declare it in cli.h and add
** one row to commands[] below (docs/development.md#adding-a-command).
**
** Exit status: 0 success; 1 some cells failed (run), some cells moved
** (compare) or conflicted (merge); 2 bad input (config, arguments) with nothing written; 3 the store
** or a file could not be read or written.
*/
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness/cli.h"
#include "harness/engine/kernels/blas.h"
#include "harness/engine/kernels/dnnl.h"
#include "harness/engine/kernels/gemm.h"
#include "harness/sweep/registry.h"
#include "harness/core/version.h"

/* One command: its name, its function, the line `lenx --help` prints. */
struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"run", lx_cmd_run, "plan a sweep, run the cells not yet stored, store and print them"},
    {"table", lx_cmd_table, "print stored results as md, csv, latex or json"},
    {"compare", lx_cmd_compare, "show cells that moved between commits, sweeps or a CSV baseline"},
    {"score", lx_cmd_score, "per-token NLL of a text under a checkpoint, as JSON"},
    {"tokenize", lx_cmd_tokenize, "a text's token ids under a tokenizer file as JSON, or --decode ids to text"},
    {"generate", lx_cmd_generate, "continue a prompt with a model: greedy (KV cache) or sampled with a seed"},
    {"serve", lx_cmd_serve, "serve a model under a method stack over an OpenAI-compatible HTTP API"},
    {"grade", lx_cmd_grade, "score predictions made elsewhere (JSON Lines of gold and output) with a named scorer"},
    {"report", lx_cmd_report, "write an HTML page of stored sweeps: plots, tables, effective length, provenance"},
    {"export", lx_cmd_export, "write a model as a Hugging Face directory"},
    {"show", lx_cmd_show, "print a method's derived tables, a task's parameters or one instance, a sweep's YAML, what a model holds"},
    {"list", lx_cmd_list, "list methods, tasks, stored sweeps or stored models"},
    {"rm", lx_cmd_rm, "delete chosen stored cells (by sweep, commit, model, method, task, failed, not in a config)"},
    {"merge", lx_cmd_merge, "merge stores (shard databases) into one: lenx merge A.db B.db ... --into OUT.db"},
    {"slurm", lx_cmd_slurm, "write a Slurm array job (models, N shards, merge) for a sweep, and its submit script"},
};

#define N_COMMANDS ((int)(sizeof commands / sizeof *commands))

static void main_usage(FILE *f)
{
    fprintf(f, "lenx %s - length-extrapolation experiments on transformer attention\n\n"
            "usage: lenx [--data DIR] COMMAND [options]   (lenx COMMAND --help for details)\n\ncommands:\n",
            LX_VERSION);
    for (int i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nglobal options:\n"
            "  --data DIR   the corpus data directory (docs/data.md); default $LENX_DATA, else the\n"
            "               checkout's data/ (build tree) or <prefix>/share/lenx/data (installed)\n"
            "\nexit status: 0 ok, 1 cells failed, moved or conflicted, 2 bad input, 3 store or file error\n");
}

/* "unknown command", with the nearest one, or "unknown option" for a word starting with -, with the nearest
** option that goes before a command; 2. */
static int unknown_command(const char *name)
{
    static const char *const opts[] = {"--data", "--help", "--version"};
    const char *names[N_COMMANDS];
    for (int i = 0; i < N_COMMANDS; i++)
        names[i] = commands[i].name;
    int opt = name[0] == '-';
    const char *near = opt ? lx_closest(name, opts, 3) : lx_closest(name, names, N_COMMANDS);
    fprintf(stderr, "lenx: error: unknown %s '%s'\n  hint: %s%s%slenx --help lists the commands%s\n",
            opt ? "option" : "command", name, LX_DID_YOU_MEAN(near),
            opt ? " and the options given before one" : "");
    return 2;
}

/* A word after words that take none (`lenx --version`, `lenx help CMD`): 2. */
static int unexpected(const char *word, const char *after, const char *cmd)
{
    fprintf(stderr, "lenx: error: unexpected argument '%s'\n  hint: `lenx %s%s%s` takes nothing after it\n", word,
            after, cmd ? " " : "", cmd ? cmd : "");
    return 2;
}

/* A command's status, or 3 (a file error) when what it printed did not all
** reach standard output: a table exported to a full disk is not a success. */
static int output_written(int rc)
{
    int e = fflush(stdout) == 0 ? 0 : errno;
    if (!e && !ferror(stdout))
        return rc;
    lx_term_printf(stderr, "lenx: error: writing standard output: %s\n  hint: is the disk full, or the file or "
                   "pipe it goes to closed?\n", e ? strerror(e) : "an earlier write failed");
    return rc == 0 || rc == 1 ? 3 : rc;
}

int main(int argc, char **argv)
{
    /* OpenBLAS chose its kernels when it was loaded, before main: to give it
    ** better ones on a CPU it does not know, lenx sets OPENBLAS_CORETYPE and
    ** runs itself again, once (blas.h; docs/numerics.md). */
    if (lx_blas_choose_core()) {
        execv("/proc/self/exe", argv);
        lx_blas_choice_failed();
    }
    struct lx_error err;
    if (lx_registry_check(&err) < 0) {
        lx_term_printf(stderr, "lenx: internal error: %s\n", err.msg);
        return 70;
    }
    int rc = lx_args_global(&argc, &argv, &err);
    if (rc < 0)
        return lx_cli_fail(&err, rc);
    if (argc >= 3 && strcmp(argv[1], "help") == 0) {   /* help CMD: CMD --help; an unknown CMD is named */
        if (argc > 3)
            return unexpected(argv[3], argv[1], argv[2]);
        if (strcmp(argv[2], "help") == 0)
            return main_usage(stdout), 0;
        for (int i = 0; i < N_COMMANDS; i++)
            if (strcmp(commands[i].name, argv[2]) == 0) {
                char *h[] = {"--help"};
                return commands[i].fn(1, h);
            }
        return unknown_command(argv[2]);
    }
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        main_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        if (argc > 2)
            return unexpected(argv[2], argv[1], NULL);
        char blas[128], dnnl[128];
        lx_blas_describe(blas, sizeof blas);
        lx_dnnl_describe(dnnl, sizeof dnnl);
        printf("lenx %s (commit %.12s%s; %s; %d threads)\n", LX_VERSION, lx_build_commit(),
               lx_build_dirty() ? ", dirty" : "", blas, omp_get_max_threads());
        /* what numerics bf16 would run on: the weight products, the attention's tiles */
        printf("numerics bf16: products %s; attention tiles %s (AMX: %s)\n", dnnl,
               lx_gemm_amx_native() ? "amx" : lx_gemm_bf16_native() ? "avx512bf16" : "fp32", lx_gemm_amx_status());
        return 0;
    }
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, argv[1]) == 0)
            return output_written(commands[i].fn(argc - 2, argv + 2));
    return unknown_command(argv[1]);
}
