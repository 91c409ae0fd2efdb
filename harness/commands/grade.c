/*
** harness/commands/grade.c - `lenx grade`: score predictions made elsewhere with a
** named scorer (tasks/scorers.h) or a protocol preset's (tasks/protocols.h),
** so that a model run by any tool gives the same numbers as a lenx cell
** (docs/tasks.md#lenx-grade).
**
** Input: JSON Lines, one object a line, {"gold": G, "output": "..."}: G an
** integer, a string or a list of strings; with --task/--protocol the peer's
** own field names are read too (lost in the middle's "answers" and
** "model_answer", RULER's "outputs" and "pred", LongChat's "expected_number"
** and "topics"). Output: one JSON object,
** {"scores": [...], "mean": M, "null_rate": R, "n": N}.
*/
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/cli.h"
#include "harness/core/json.h"
#include "tasks/protocols.h"
#include "tasks/scorers.h"

#define MAX_GOLDS 4096

static const struct lx_opt grade_opts[] = {
    {"scorer", 1, "a named scorer: first_int, last_int, token_exact, substring, ruler_all, ruler_part, "
                  "litm_subspan_em, topic_contains"},
    {"predictions", 1, "JSON Lines file, one {\"gold\": G, \"output\": \"...\"} a line (- = standard input)"},
    {"task", 1, "with --protocol: the task whose preset names the scorer"},
    {"protocol", 1, "with --task: the preset (line/topic longchat|longchat_base, mdqa litm|ruler_qa_squad|"
                    "ruler_qa_hotpotqa, needle ruler|"
                    "ruler_niah_single_2|_3|ruler_niah_multikey_1|_2|_3|ruler_niah_multivalue|"
                    "ruler_niah_multiquery|ruler_vt|ruler_fwe|ruler_cwe|kamradt, "
                    "passkey landmark|yarn|longlora)"},
};

static const char grade_usage[] =
    "usage: lenx grade (--scorer NAME | --task T --protocol P) --predictions F.jsonl\n\n"
    "Score each line's output against its gold and print {\"scores\": [...], \"mean\": M, \"null_rate\": R,\n"
    "\"n\": N} (a score per line: 1 or 0, or the fraction of golds found for ruler_all; null_rate: outputs\n"
    "with nothing the scorer can read). A malformed line exits 2 naming its number.";

/* What a line's fields are called. */
struct grade_fields {
    const char *gold, *output;          /* lenx's names */
    const char *peer_gold, *peer_output;    /* the preset's peer's, or NULL */
};

/* The member named name or, when absent, peer (NULL: none). */
static const struct lx_jv *field(const struct lx_jv *obj, const char *name, const char *peer)
{
    const struct lx_jv *v = lx_json_member(obj, name);
    return v || !peer ? v : lx_json_member(obj, peer);
}

/* The gold value v as golds; an integer is written in decimal into num. */
static int read_golds(const struct lx_json *doc, const struct lx_jv *v, struct lx_golds *g, const char **s,
                      size_t *len, char *num, struct lx_error *err)
{
    g->s = s, g->len = len, g->n = 0;
    enum lx_json_type t = lx_json_type(v);
    if (t == LX_JSON_INT) {
        int64_t x;
        int rc = lx_json_int(doc, v, &x, err);
        if (rc < 0)
            return rc;
        snprintf(num, 32, "%" PRId64, x);
        s[0] = num, len[0] = strlen(num), g->n = 1;
        return LX_OK;
    }
    if (t == LX_JSON_STRING) {
        g->n = 1;
        return lx_json_str(doc, v, &s[0], &len[0], err);
    }
    if (t != LX_JSON_ARRAY)
        return lx_err(err, LX_EINVAL, "the gold is %s; expected an integer, a string or a list of strings",
                      lx_json_type_name(t));
    if (lx_json_len(v) > MAX_GOLDS)
        return lx_err(err, LX_EINVAL, "the gold lists %ld answers, more than %d", lx_json_len(v), MAX_GOLDS);
    for (long i = 0; i < lx_json_len(v); i++, g->n++) {
        const struct lx_jv *e = lx_json_at(v, i);
        if (lx_json_type(e) != LX_JSON_STRING)
            return lx_err(err, LX_EINVAL, "gold[%ld] is %s; a list of golds holds strings", i,
                          lx_json_type_name(lx_json_type(e)));
        lx_json_str(doc, e, &s[i], &len[i], err);
    }
    return LX_OK;
}

/* Score one parsed line into *score, *null. */
static int grade_doc(const struct lx_scorer *sc, const struct grade_fields *f, const struct lx_json *doc,
                     double *score, int *null, struct lx_error *err)
{
    int rc = LX_OK;
    const struct lx_jv *r = lx_json_root(doc);
    const struct lx_jv *gv = field(r, f->gold, f->peer_gold), *ov = field(r, f->output, f->peer_output);
    const char *out, *s[MAX_GOLDS];
    size_t n_out, len[MAX_GOLDS];
    char num[32];
    struct lx_golds g;
    if (lx_json_type(r) != LX_JSON_OBJECT)
        rc = lx_err(err, LX_EINVAL, "%s, not an object", lx_json_type_name(lx_json_type(r)));
    else if (!gv || !ov)
        rc = lx_err(err, LX_EINVAL, "no \"%s\" member%s%s%s", !gv ? f->gold : f->output,
                    (!gv ? f->peer_gold : f->peer_output) ? " (nor \"" : "",
                    !gv ? (f->peer_gold ? f->peer_gold : "") : (f->peer_output ? f->peer_output : ""),
                    (!gv ? f->peer_gold : f->peer_output) ? "\")" : "");
    else if (lx_json_type(ov) != LX_JSON_STRING)
        rc = lx_err(err, LX_EINVAL, "the output is %s, not a string", lx_json_type_name(lx_json_type(ov)));
    else if ((rc = read_golds(doc, gv, &g, s, len, num, err)) == LX_OK &&
             (rc = lx_scorer_check_gold(sc, &g, err)) == LX_OK) {
        lx_json_str(doc, ov, &out, &n_out, err);
        *score = sc->score(out, n_out, &g, null);
    }
    return rc;
}

/* Score line lineno of path (text[0, n), its newline left out) into *score, *null; an error names path:lineno
** and says what a line holds. */
static int grade_line(const struct lx_scorer *sc, const struct grade_fields *f, const char *text, size_t n,
                      const char *path, long lineno, double *score, int *null, struct lx_error *err)
{
    struct lx_json *doc = NULL;
    int rc = lx_json_parse_line(&doc, text, n, path, lineno, err);
    if (rc < 0)
        return rc;
    rc = grade_doc(sc, f, doc, score, null, err);
    lx_json_free(doc);
    if (rc < 0 && strstr(err->msg, "\n  hint: "))
        lx_err_prefix(err, rc, "%s:%ld: ", path, lineno);
    else if (rc < 0)
        lx_err(err, rc, "%s:%ld: %s\n  hint: one JSON object a line, {\"%s\": G, \"%s\": \"...\"}", path, lineno,
               err->msg, f->peer_gold ? f->peer_gold : f->gold, f->peer_output ? f->peer_output : f->output);
    return rc;
}

/* The shortest %g form of x that reads back as x. */
static void print_num(double x)
{
    char b[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(b, sizeof b, "%.*g", p, x);
        if (strtod(b, NULL) == x)
            break;
    }
    fputs(b, stdout);
}

/* Every line of f through sc; prints the JSON summary. Errors name path:line. */
static int grade_file(const struct lx_scorer *sc, const struct grade_fields *fl, FILE *f, const char *path,
                      struct lx_error *err)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t k;
    long n = 0, nulls = 0, lineno = 0;
    double *scores = NULL, sum = 0.0;
    int rc = LX_OK;
    while (rc == LX_OK && (k = getline(&line, &cap, f)) >= 0) {
        lineno++;
        int null = 0;
        scores = lx_xrealloc(scores, sizeof(double) * (size_t)(n + 1));
        while (k > 0 && (line[k - 1] == '\n' || line[k - 1] == '\r'))
            k--;
        rc = grade_line(sc, fl, line, (size_t)k, path, lineno, &scores[n], &null, err);
        if (rc == LX_OK)
            sum += scores[n++], nulls += null;
    }
    if (rc == LX_OK && ferror(f))
        rc = lx_err(err, LX_EIO, "%s: read failed after line %ld: %s", path, lineno, strerror(errno));
    if (rc == LX_OK && n == 0)
        rc = lx_err(err, LX_EINVAL, "%s: no predictions\n  hint: one JSON object a line, "
                    "{\"gold\": G, \"output\": \"...\"}", path);
    if (rc == LX_OK) {
        fputs("{\"scores\": [", stdout);
        for (long i = 0; i < n; i++)
            fputs(i ? ", " : "", stdout), print_num(scores[i]);
        fputs("], \"mean\": ", stdout);
        print_num(sum / (double)n);
        fputs(", \"null_rate\": ", stdout);
        print_num((double)nulls / (double)n);
        printf(", \"n\": %ld}\n", n);
    }
    free(line);
    free(scores);
    return rc;
}

/* The scorer the options name, and the fields to read; NULL after printing why. */
static const struct lx_scorer *grade_scorer(const struct lx_args *a, struct grade_fields *f)
{
    const char *name = lx_args_value(a, "scorer"), *task = lx_args_value(a, "task"),
               *proto = lx_args_value(a, "protocol");
    const struct lx_protocol *p = NULL;
    if (!name == !(task || proto) || (!name && !(task && proto))) {
        fprintf(stderr, "lenx: error: name the scorer with --scorer NAME, or with --task T --protocol P (not both)\n"
                "  hint: lenx grade --help\n");
        return NULL;
    }
    if (!name && !(p = lx_protocol_find(task, proto))) {
        const char *tasks[64];
        int n = 0, known = 0;
        for (int i = 0; i < lx_n_protocols && n < 64; i++) {
            tasks[n++] = lx_protocols[i].task;
            known |= strcmp(lx_protocols[i].task, task) == 0;
        }
        const char *near = known ? NULL : lx_closest(task, tasks, n);
        if (known)
            fprintf(stderr, "lenx: error: task '%s' has no protocol preset '%s'\n  hint: presets:", task, proto);
        else
            fprintf(stderr, "lenx: error: unknown task '%s' (no protocol preset names it)\n  hint: %s%s%spresets:",
                    task, LX_DID_YOU_MEAN(near));
        for (int i = 0; i < lx_n_protocols; i++)
            fprintf(stderr, " %s/%s", lx_protocols[i].task, lx_protocols[i].name);
        fputc('\n', stderr);
        return NULL;
    }
    if (p)
        name = p->scorer, f->peer_gold = p->gold_field, f->peer_output = p->output_field;
    const struct lx_scorer *sc = lx_scorer_find(name);
    if (!sc) {
        const char *names[64];
        for (int i = 0; i < lx_n_scorers && i < 64; i++)
            names[i] = lx_scorers[i].name;
        const char *near = lx_closest(name, names, lx_n_scorers);
        fprintf(stderr, "lenx: error: unknown scorer '%s'\n  hint: %s%s%sthe scorers are", name,
                LX_DID_YOU_MEAN(near));
        for (int i = 0; i < lx_n_scorers; i++)
            fprintf(stderr, " %s", lx_scorers[i].name);
        fputc('\n', stderr);
    }
    return sc;
}

int lx_cmd_grade(int argc, char **argv)
{
    struct lx_args a;
    int rc = lx_cli_args(&a, grade_opts, LX_N_OPTS(grade_opts), grade_usage, argc, argv);
    if (rc >= 0)
        return rc;
    const char *path = lx_args_value(&a, "predictions");
    if (!path || a.n_pos)   /* a shell glob, --predictions *.jsonl, grades one file: say so */
        return lx_cli_misuse(&a, "grade", "--predictions F.jsonl is required");
    struct grade_fields f = {.gold = "gold", .output = "output"};
    const struct lx_scorer *sc = grade_scorer(&a, &f);
    if (!sc)
        return 2;
    struct lx_error err;
    struct stat sb;
    if (strcmp(path, "-") && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return lx_cli_fail(&err, lx_err(&err, LX_EIO, "cannot read %s: it is a directory\n  hint: --predictions "
                                         "names one JSON Lines file (- for standard input)", path));
    FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!in) {
        lx_err(&err, LX_EIO, "cannot read %s: %s\n  hint: --predictions names one JSON Lines file (- for standard "
               "input)", path, strerror(errno));
        return lx_cli_fail(&err, LX_EIO);
    }
    rc = grade_file(sc, &f, in, path, &err);
    if (in != stdin)
        fclose(in);
    return rc < 0 ? lx_cli_fail(&err, rc) : 0;
}
