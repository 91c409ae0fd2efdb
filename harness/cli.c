/*
** harness/cli.c - option tables into values.
*/
#define _POSIX_C_SOURCE 200809L     /* setenv */
#include "harness/cli.h"
#include "harness/engine/kernels/blas.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/engine/model/model.h"
#include "harness/engine/model/pilot.h"

/* An option that names a file, given an empty value (--db=, an unset shell variable): SQLite opens "" as a
** private temporary database, and the other readers said ": no such file" of nothing. */
static int empty_path(const char *name, const char *v, struct lx_error *err)
{
    static const char *const paths[] = {"db", "into", "output", "text", "tokenizer", "predictions", "gguf", "hf",
                                        "port-file"};     /* not --model: rm's is a name; --model '' finds no file */
    for (size_t i = 0; !*v && i < sizeof paths / sizeof *paths; i++)
        if (strcmp(name, paths[i]) == 0)
            return lx_err(err, LX_EINVAL, "--%s is empty: it names no file\n  hint: give --%s a path (was it a shell "
                          "variable that is not set?)", name, name);
    return LX_OK;
}

/* The row of opts named by the len bytes at name, or -1. */
static int opt_index(const char *name, size_t len, const struct lx_opt *opts, int n)
{
    for (int k = 0; k < n; k++)
        if (strlen(opts[k].name) == len && strncmp(opts[k].name, name, len) == 0)
            return k;
    return -1;
}

/* Whether arg is --NAME or --NAME=V for an option of opts, or --help: an option, never a value. */
static int option_named(const char *arg, const struct lx_opt *opts, int n)
{
    return strcmp(arg, "--help") == 0 ||
           (strncmp(arg, "--", 2) == 0 && opt_index(arg + 2, strcspn(arg + 2, "="), opts, n) >= 0);
}

int lx_args_parse(struct lx_args *a, const struct lx_opt *opts, int n, int argc, char **argv,
                  int *help, struct lx_error *err)
{
    LX_ASSERT(n <= LX_MAX_OPTS);
    memset(a, 0, sizeof *a);
    a->opts = opts;
    a->n_opts = n;
    a->pos = (const char **)argv;   /* a positional goes to argv[n_pos], a slot already read (n_pos <= i) */
    *help = 0;
    for (int i = 0; i < argc; i++) {
        char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            *help = 1;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {    /* at most 64 were kept: a merge of 100 shards failed */
            argv[a->n_pos++] = arg;
            continue;
        }
        const char *name = arg + 2;
        size_t len = strcspn(name, "=");
        int k = opt_index(name, len, opts, n);
        if (k < 0) {
            const char *names[LX_MAX_OPTS];
            for (int j = 0; j < n; j++)
                names[j] = opts[j].name;
            char word[64];
            snprintf(word, sizeof word, "%.*s", (int)(len < 63 ? len : 63), name);
            const char *near = lx_closest(word, names, n);
            if (strcmp(word, "data") == 0)     /* main.c's, before the command: "--help lists the options" misled */
                return lx_err(err, LX_EINVAL, "unknown option '--data'\n  hint: --data is a global option, given "
                              "before the command: lenx --data DIR COMMAND ...");
            return lx_err(err, LX_EINVAL, "unknown option '--%s'\n  hint: %s%s%s--help lists the options",
                          word, near ? "did you mean '--" : "", near ? near : "", near ? "'? " : "");
        }
        const char *was = a->value[k];
        if (!opts[k].has_arg) {
            if (name[len] == '=')
                return lx_err(err, LX_EINVAL, "option '--%s' takes no value\n  hint: it is a switch, given alone: "
                              "--%s (%s)", opts[k].name, opts[k].name, opts[k].help);
            a->value[k] = "1";
        } else if (name[len] == '=') {
            a->value[k] = name + len + 1;
        } else if (i + 1 < argc && option_named(argv[i + 1], opts, n)) {   /* --db --dry-run ran a whole sweep */
            return lx_err(err, LX_EINVAL, "option '--%s' needs a value, and '%s' is another option\n  hint: --%s V: %s "
                          "(a value that starts with -- is given as --%s=VALUE)", opts[k].name, argv[i + 1],
                          opts[k].name, opts[k].help, opts[k].name);
        } else if (i + 1 < argc) {
            a->value[k] = argv[++i];
        } else {
            return lx_err(err, LX_EINVAL, "option '--%s' needs a value\n  hint: --%s V: %s", opts[k].name,
                          opts[k].name, opts[k].help);
        }
        if (was && strcmp(was, a->value[k]) != 0)  /* the last one won: --sweep a --sweep b showed b alone */
            return lx_err(err, LX_EINVAL, "option '--%s' is given twice ('%s', then '%s')\n  hint: it takes one "
                          "value; give it once", opts[k].name, was, a->value[k]);
        if (empty_path(opts[k].name, a->value[k], err) < 0)
            return LX_EINVAL;
    }
    return LX_OK;
}

/* Whether arg is an option of opts that takes its value from the next argument (--name V, not --name=V). */
static int takes_next(const char *arg, const struct lx_opt *opts, int n)
{
    int k = strncmp(arg, "--", 2) == 0 && !strchr(arg, '=') ? opt_index(arg + 2, strlen(arg + 2), opts, n) : -1;
    return k >= 0 && opts[k].has_arg;
}

void lx_args_short(int argc, char **argv, char **out, const struct lx_opt *opts, int n, const char *spelling,
                   const char *as)
{
    for (int i = 0; i < argc; i++)
        out[i] = strcmp(argv[i], spelling) == 0 && !(i > 0 && takes_next(out[i - 1], opts, n)) ? (char *)as : argv[i];
}

const char *lx_args_get(const struct lx_args *a, const struct lx_opt *opts, int n, const char *name)
{
    for (int j = 0; j < n; j++)
        if (strcmp(opts[j].name, name) == 0)
            return a->value[j];
    LX_ASSERT(0 && "option not in the table");
    return NULL;
}

const char *lx_args_value(const struct lx_args *a, const char *name)
{
    return lx_args_get(a, a->opts, a->n_opts, name);
}

int lx_args_long(const char *text, const char *name, long lo, long hi, long *out, struct lx_error *err)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (!*text || *end || (errno && errno != ERANGE))
        return lx_err(err, LX_EINVAL, "--%s must be an integer, got '%s'\n  hint: --%s takes a whole number from %ld "
                      "to %ld", name, text, name, lo, hi);
    if (errno == ERANGE || v < lo || v > hi)    /* past a long: out of bounds too, not "not an integer" */
        return lx_err(err, LX_EINVAL, "--%s = %s is out of bounds [%ld, %ld]\n  hint: --%s takes a whole number "
                      "from %ld to %ld", name, text, lo, hi, name, lo, hi);
    *out = v;
    return LX_OK;
}

int lx_args_double(const char *text, const char *name, double *out, struct lx_error *err)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    int range = errno == ERANGE;    /* set for overflow (+-HUGE_VAL) and for underflow (a tiny or zero value) */
    const char *hint = "\n  hint: a finite decimal number >= 0, such as 0.5, 3 or 1e-3";
    if (!*text || *end || isspace((unsigned char)*text))
        return lx_err(err, LX_EINVAL, "--%s must be a number, got '%s'%s", name, text, hint);
    if (isnan(v) || (isinf(v) && !range))
        return lx_err(err, LX_EINVAL, "--%s must be a finite number, got '%s'%s", name, text, hint);
    if (isinf(v))
        return lx_err(err, LX_EINVAL, "--%s = %s is too large for a double%s", name, text, hint);
    if (v < 0)  /* an underflow keeps its sign: -1e-320 is negative too */
        return lx_err(err, LX_EINVAL, "--%s must be a non-negative number, got '%s'%s", name, text, hint);
    *out = v;   /* an underflow is the nearest double (a subnormal, or 0 below 4.9e-324): a value, not an error */
    return LX_OK;
}

int lx_args_numerics(const struct lx_args *a, enum lx_numerics *out, int *given, struct lx_error *err)
{
    const char *flag = lx_args_value(a, "portable"), *v = lx_args_value(a, "numerics");
    enum lx_numerics n = LX_NUMERICS_PORTABLE;
    *given = flag || v;
    if (v && lx_numerics_parse(v, &n) < 0)
        return lx_err(err, LX_EINVAL, "--numerics must be fast, portable or bf16, got '%s'\n  hint: --numerics "
                      "portable (or --portable) gives the same bits on any x86-64 machine with AVX2; bf16 multiplies "
                      "bf16 operands (docs/numerics.md#half-precision)", v);
    if (flag && n != LX_NUMERICS_PORTABLE)
        return lx_err(err, LX_EINVAL, "--portable and --numerics %s contradict each other\n  hint: give one of them", v);
    if (*given)
        *out = n;
    return LX_OK;
}

int lx_args_kv_cache(const struct lx_args *a, int *dt, int *given, struct lx_error *err)
{
    const char *v = lx_args_value(a, "kv-cache");
    *given = v != NULL;
    if (v && lx_kv_parse(v, dt) < 0)
        return lx_err(err, LX_EINVAL, "--kv-cache must be fp32, bf16 or f16, got '%s'\n  hint: bf16 and f16 halve the "
                      "KV cache (docs/config.md#numerics)", v);
    return LX_OK;
}

int lx_args_activations(const struct lx_args *a, int *llamacpp, int *given, struct lx_error *err)
{
    const char *v = lx_args_value(a, "activations");
    *given = v != NULL;
    if (v && lx_acts_parse(v, llamacpp) < 0)
        return lx_err(err, LX_EINVAL, "--activations must be fp32 or llamacpp, got '%s'\n  hint: llamacpp rounds x "
                      "before each weight product as llama.cpp does (docs/config.md#numerics)", v);
    return LX_OK;
}

int lx_check_activations(enum lx_numerics n, int llamacpp, struct lx_error *err)
{
    const char *msg = lx_acts_conflict(n, llamacpp);
    return msg ? lx_err(err, LX_EINVAL, "%s", msg) : LX_OK;
}

int lx_cli_numerics(const struct lx_args *a, struct lx_error *err)
{
    enum lx_numerics n = LX_NUMERICS_FAST;
    int given, kv = 0, acts = 0, rc = lx_args_numerics(a, &n, &given, err);
    if (rc == LX_OK)
        rc = lx_args_kv_cache(a, &kv, &given, err);
    if (rc == LX_OK)
        rc = lx_args_activations(a, &acts, &given, err);
    if (rc == LX_OK)
        rc = lx_check_activations(n, acts, err);
    char msg[512];
    if (rc == LX_OK && n != LX_NUMERICS_PORTABLE && lx_blas_unrunnable(msg, sizeof msg))
        rc = lx_err(err, LX_EINVAL, "%s", msg);
    if (rc == LX_OK)
        lx_numerics_set(n), lx_kv_set(kv), lx_acts_llamacpp_set(acts);
    if (rc == LX_OK && n == LX_NUMERICS_FAST)
        lx_cli_blas_notice();
    return rc;
}

void lx_cli_blas_notice(void)
{
    char msg[512];
    if (lx_blas_notice(msg, sizeof msg))
        fprintf(stderr, "lenx: %s\n", msg);
}

int lx_args_global(int *argc, char ***argv, struct lx_error *err)
{
    while (*argc >= 2 && strncmp((*argv)[1], "--data", 6) == 0) {
        const char *a = (*argv)[1];
        if (a[6] != '=' && a[6] != '\0')
            break;      /* not ours: the command table reports it */
        const char *dir = a[6] == '=' ? a + 7 : *argc >= 3 ? (*argv)[2] : NULL;
        struct stat st;
        if (!dir || !*dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
            return lx_err(err, LX_EINVAL, "--data needs an existing directory%s%s\n"
                          "  hint: lenx --data /path/to/data run CONFIG; `make data` fills the checkout's data/",
                          dir ? ", not " : "", dir ? dir : "");
        setenv("LENX_DATA", dir, 1);
        int used = a[6] == '=' ? 1 : 2;
        (*argv)[used] = (*argv)[0];
        *argv += used;
        *argc -= used;
    }
    const char *ta = getenv("LENX_TRAIN_ATTENTION");
    enum lx_train_attn mode = LX_TRAIN_TILED;
    if (ta && *ta && lx_train_attn_parse(ta, &mode) < 0)
        return lx_err(err, LX_EINVAL, "LENX_TRAIN_ATTENTION is '%s', not an attention path for training\n"
                      "  hint: tiled (the default) or materialised (docs/PERFORMANCE.md, \"Training attention\")", ta);
    lx_train_attn_set(mode);
    const char *tm = getenv("LENX_TEAM");
    int team = -1;
    if (tm && *tm && lx_pilot_parse(tm, &team) < 0)
        return lx_err(err, LX_EINVAL, "LENX_TEAM is '%s', not a way to run steps\n  hint: pilot (the default), "
                      "team or one (docs/PERFORMANCE.md, \"A step's team, chosen by timing both\")", tm);
    lx_pilot_force(team);
    static const char *const switches[][2] = {
        {"LENX_AMX", "0 turns the AMX kernels off (docs/numerics.md), 1 or unset leaves them on where the CPU has "
                     "them"},
        {"LENX_PACK", "1 packs weights into oneDNN's layout, 0 never does; unset: lenx picks (docs/numerics.md)"},
    };
    for (size_t i = 0; i < sizeof switches / sizeof *switches; i++) {
        const char *v = getenv(switches[i][0]);     /* any other word was taken as unset without a sign */
        if (v && *v && strcmp(v, "0") && strcmp(v, "1"))
            return lx_err(err, LX_EINVAL, "%s is '%s', not 0 or 1\n  hint: %s", switches[i][0], v, switches[i][1]);
    }
    const char *tr = getenv("LENX_PILOT_TRACE");
    if (tr && *tr) {
        FILE *f = fopen(tr, "a");   /* closed by the process's exit */
        if (!f)
            return lx_err(err, LX_EIO, "LENX_PILOT_TRACE is '%s', which cannot be opened for appending: %s\n"
                          "  hint: a file in a directory that exists and is writable, or unset it", tr,
                          strerror(errno));
        lx_pilot_trace(f);
    }
    return LX_OK;
}

int lx_cli_fail(const struct lx_error *err, int rc)
{
    lx_term_printf(stderr, "lenx: error: %s\n", err->msg);
    return rc == LX_EINVAL ? 2 : rc == LX_EIO ? 3 : 1;
}

void lx_cli_usage(const char *text, const struct lx_opt *opts, int n)
{
    printf("%s\n", text);
    if (n) {
        printf("\noptions:\n");
        for (int i = 0; i < n; i++)
            printf("  --%-12s %s %s\n", opts[i].name, opts[i].has_arg ? "V" : " ", opts[i].help);
    }
}

int lx_cli_misuse(const struct lx_args *a, const char *cmd, const char *missing)
{
    if (a->n_pos)
        fprintf(stderr, "lenx: error: unexpected argument '%s'\n", a->pos[0]);
    else
        fprintf(stderr, "lenx: error: %s\n", missing);
    fprintf(stderr, "  hint: lenx %s --help lists its options\n", cmd);
    return 2;
}

int lx_cli_args(struct lx_args *a, const struct lx_opt *opts, int n, const char *usage, int argc, char **argv)
{
    struct lx_error err;
    int help, rc = lx_args_parse(a, opts, n, argc, argv, &help, &err);
    if (rc < 0)
        return lx_cli_fail(&err, rc);
    if (help)
        return lx_cli_usage(usage, opts, n), 0;
    return -1;
}
