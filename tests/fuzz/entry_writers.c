/*
** tests/fuzz/entry_writers.c - the fuzz entry points of lenx's writers (see
** entry.h): lenx slurm's job scripts and the report's escapers and plots.
** The readers' entry points are in entry.c.
*/
#include "tests/fuzz/entry.h"
#include "tests/fuzz/promise.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/scaleout/slurm.h"
#include "results/plot.h"
#include "results/views.h"
#include "tests/slurm_check.h"

/* ---- lenx slurm's job scripts -------------------------------------------------- */

/* Expected "#SBATCH" options of one script, ticked off as sb_header meets them. */
struct sb_expect {
    const char *want[8];    /* options that must be there, "--name=value" (a prefix for --output) */
    int n_want, seen[8];
};

static void sb_tick(void *ctx, const char *option)
{
    struct sb_expect *e = ctx;
    for (int k = 0; k < e->n_want; k++)
        e->seen[k] |= (k == 0 ? strncmp(option, e->want[0], strlen(e->want[0])) : strcmp(option, e->want[k])) == 0;
}

/* "/" then c, as long as path (2 bytes at least), malloc'd: the merge job's form (stores as arguments or a
** list on stdin) follows the byte length of the lenx, --db and folder paths (merge_arg_bytes in slurm.c). */
static char *plain_path(const char *path, char c)
{
    size_t n = strlen(path) > 2 ? strlen(path) : 2;
    char *s = lx_xmalloc(n + 1);
    memset(s, c, n), s[0] = '/', s[n] = '\0';
    return s;
}

/* The strings of j replaced by plain ones (lenx, db and dir malloc'd), numbers and presence kept. */
static struct lx_slurm_job plain_job(const struct lx_slurm_job *j)
{
    struct lx_slurm_job p = *j;
    p.sweep = "s", p.config = "/c", p.cwd = "/w";
    p.lenx = plain_path(j->lenx, 'l'), p.db = plain_path(j->db, 'd'), p.dir = plain_path(j->dir, 'r');
    p.data = j->data ? "a" : NULL, p.partition = j->partition ? "p" : NULL;
    p.time = j->time ? "1-0" : NULL, p.mem = j->mem ? "1" : NULL;   /* a day: past any signal lead */
    return p;
}

/* The promises of one job's scripts (tests/slurm_check.h): sbatch reads one
** option per #SBATCH line, with the values given; the shell's skeleton is the
** plain job's (every value stays inside its single quotes or a comment). */
static void check_scripts(const struct lx_slurm_job *j, struct lx_buf out[LX_SLURM_N_FILES])
{
    struct lx_buf plain[LX_SLURM_N_FILES] = {{0}}, v = {0};
    struct lx_slurm_job p = plain_job(j);
    struct lx_error err = {{0}};
    PROMISE(lx_slurm_scripts(&p, plain, &err) == LX_OK, "the plain job was refused: %s", err.msg);
    static const char *const stage[3] = {"models", "cells", "merge"};
    for (int f = 0; f < LX_SLURM_N_FILES; f++) {
        if (f < 3) {
            struct sb_expect e = {{0}, 0, {0}};
            char why[SB_ARG + 256];
            lx_buf_reset(&v);
            lx_buf_puts(&v, "--output=");
            for (const char *s = j->dir; *s; s++)
                lx_buf_puts(&v, *s == '%' ? "%%" : (char[2]){*s, 0});
            lx_buf_printf(&v, ".slurm/logs/%c", 0);     /* one buffer, several strings */
            lx_buf_printf(&v, "--job-name=lenx-%s-%s%c--chdir=%s%c", j->sweep, stage[f], 0, j->cwd, 0);
            const char *opt[] = {"partition", j->partition, "time", j->time, "mem", j->mem};
            for (int i = 0; i < 6; i += 2)
                if (opt[i + 1])
                    lx_buf_printf(&v, "--%s=%s%c", opt[i], opt[i + 1], 0);
            for (const char *s = v.s; s < v.s + v.len; s += strlen(s) + 1)
                e.want[e.n_want++] = s;
            PROMISE(sb_header(lx_buf_str(&out[f]), sb_tick, &e, why, sizeof why) == 0, "%s: %s", lx_slurm_files[f],
                    why);
            for (int k = 0; k < e.n_want; k++)
                PROMISE(e.seen[k], "%s: sbatch does not read %s", lx_slurm_files[f], e.want[k]);
        }
        size_t cap = out[f].len + plain[f].len + 2;
        char *a = lx_xmalloc(cap), *b = lx_xmalloc(cap);
        sh_skeleton(lx_buf_str(&out[f]), a, cap);
        sh_skeleton(lx_buf_str(&plain[f]), b, cap);
        PROMISE(strcmp(a, b) == 0, "%s: a value escaped its quotes: the shell reads\n%s\nwhere plain values give\n%s",
                lx_slurm_files[f], a, b);
        free(a), free(b);
        lx_buf_free(&plain[f]);
    }
    lx_buf_free(&v);
    free((char *)p.lenx), free((char *)p.db), free((char *)p.dir);
}

int lx_fuzz_feed_slurm(const uint8_t *data, size_t n, struct lx_error *err)
{
    if (n < 4)
        return LX_OK;
    enum { N_FIELDS = 10 };
    char *text = lx_xmalloc(n + N_FIELDS + 1), *field[N_FIELDS];
    size_t k = 0, at = 4;
    for (int f = 0; f < N_FIELDS; f++) {     /* NUL-separated; a path gets a leading '/' unless flag 0x10 */
        field[f] = text + k;
        if (f >= 1 && f <= 5 && !(data[0] & 0x10))
            text[k++] = '/';
        while (at < n && data[at])
            text[k++] = (char)data[at++];
        text[k++] = '\0';
        at += at < n;
    }
    struct lx_slurm_job j = {
        .sweep = field[0], .lenx = field[1], .config = field[2], .cwd = field[3], .db = field[4], .dir = field[5],
        .data = data[0] & 1 ? field[6] : NULL, .partition = data[0] & 2 ? field[7] : NULL,
        .time = data[0] & 4 ? field[8] : NULL, .mem = data[0] & 8 ? field[9] : NULL,
        .shards = data[1], .cpus = 5L * data[2], .model_shards = data[3],
    };
    struct lx_buf out[LX_SLURM_N_FILES] = {{0}};
    int rc = lx_slurm_scripts(&j, out, err);
    PROMISE(rc == LX_OK || (rc == LX_EINVAL && err->msg[0]), "refused with %d without a message", rc);
    if (rc == LX_OK)
        check_scripts(&j, out);
    for (int f = 0; f < LX_SLURM_N_FILES; f++)
        lx_buf_free(&out[f]);
    free(text);
    return rc;
}

/* ---- report: stored strings through every escaper ------------------------- */

#define N_STR 6     /* strings of one input */

/* Decode the five entities lx_esc_html writes; U+FFFD for a control byte. */
static void check_html(const char *s)
{
    struct lx_buf b = {0}, back = {0};
    lx_esc_html(&b, s);
    static const char *const ent[][2] = {{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""},
                                         {"&#39;", "'"}};
    for (const char *p = lx_buf_str(&b); *p;) {
        unsigned char c = (unsigned char)*p;
        LX_ASSERT(!strchr("<>\"'", c));
        LX_ASSERT(!((c < 0x20 && !strchr("\t\n\r", c)) || c == 0x7f));
        if (c != '&') {
            lx_buf_printf(&back, "%c", c);
            p++;
            continue;
        }
        size_t k = 0;
        while (k < 5 && strncmp(p, ent[k][0], strlen(ent[k][0])))
            k++;
        LX_ASSERT(k < 5);       /* a bare & of the input */
        lx_buf_puts(&back, ent[k][1]);
        p += strlen(ent[k][0]);
    }
    struct lx_buf want = {0};
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p < 0x20 && !strchr("\t\n\r", *p)) || *p == 0x7f)
            lx_buf_puts(&want, "\xef\xbf\xbd");
        else
            lx_buf_printf(&want, "%c", *p);
    LX_ASSERT(strcmp(lx_buf_str(&back), lx_buf_str(&want)) == 0);
    lx_buf_free(&b);
    lx_buf_free(&back);
    lx_buf_free(&want);
}

static void check_md(const char *s)
{
    struct lx_buf b = {0};
    lx_esc_md(&b, s);
    const char *b0 = lx_buf_str(&b);
    for (const char *p = b0; *p; p++) {
        unsigned char c = (unsigned char)*p;
        LX_ASSERT(c >= 0x20 && c != 0x7f);                  /* one line */
        if (c == '\\') {
            LX_ASSERT(p[1] && strchr("\\|`*(~_:.$", p[1]));
            p++;
            continue;
        }
        LX_ASSERT(!strchr("|`*<>~$", c));                    /* no strikethrough or math either */
        LX_ASSERT(c != '_' || (p > b0 && isalnum((unsigned char)p[-1]) && isalnum((unsigned char)p[1])));
        LX_ASSERT(c != ':' || strncmp(p, "://", 3));        /* no autolink */
        LX_ASSERT(c != '(' || p == lx_buf_str(&b) || p[-1] != ']');     /* no link */
        LX_ASSERT(c != '&' || !strncmp(p, "&amp;", 5) || !strncmp(p, "&lt;", 4) || !strncmp(p, "&gt;", 4));
    }
    lx_buf_free(&b);
}

static void check_latex(const char *s)
{
    static const char *const cmd[] = {"\\textbackslash{}", "\\textasciicircum{}", "\\textasciitilde{}",
                                      "\\textless{}", "\\textgreater{}", "\\textbar{}"};
    struct lx_buf b = {0};
    lx_esc_latex(&b, s);
    const char *p = lx_buf_str(&b);
    int guarded = !strncmp(p, "{}", 2);     /* only before a [ or * that opens the label, past blanks */
    const char *q = p + 2 * guarded;
    while (*q == ' ')
        q++;
    LX_ASSERT(guarded || (*q != '[' && *q != '*'));     /* no optional argument or star after a row's \\ */
    p += 2 * guarded;
    for (; *p; p++) {
        unsigned char c = (unsigned char)*p;
        LX_ASSERT(c >= 0x20 && c != 0x7f);
        if (c == '\\' && p[1] && strchr("_%&#${}", p[1])) {
            p++;
            continue;
        }
        if (c == '\\') {
            size_t k = 0;
            while (k < 6 && strncmp(p, cmd[k], strlen(cmd[k])))
                k++;
            LX_ASSERT(k < 6);
            p += strlen(cmd[k]) - 1;
            continue;
        }
        LX_ASSERT(!strchr("_%&#${}^~<>|", c));
    }
    lx_buf_free(&b);
}

static void check_csv(const char *s)
{
    struct lx_buf b = {0}, back = {0};
    lx_esc_csv(&b, s);
    const char *p = lx_buf_str(&b);
    if (*p != '"') {
        LX_ASSERT(!strpbrk(p, ",\"\r\n") && strcmp(p, s) == 0);
    } else {
        for (p++; !(p[0] == '"' && p[1] != '"'); p++) {
            LX_ASSERT(*p);
            p += *p == '"';         /* "" is one quote */
            lx_buf_printf(&back, "%c", *p);
        }
        LX_ASSERT(p[1] == '\0' && strcmp(lx_buf_str(&back), s) == 0);
    }
    lx_buf_free(&b);
    lx_buf_free(&back);
}

/* The script with every single-quoted literal emptied: what the strings
** cannot change. Ends at a newline inside a literal (a broken command). */
static void skeleton(const char *script, struct lx_buf *out)
{
    for (const char *p = script; *p; p++) {
        if (*p != '\'') {
            lx_buf_printf(out, "%c", *p);
            continue;
        }
        for (p++; !(p[0] == '\'' && p[1] != '\''); p++) {
            LX_ASSERT(*p && *p != '\n' && *p != '\r');
            p += *p == '\'';
        }
        lx_buf_puts(out, "''");
    }
}

/* Two plots (lines and a heat map) labelled with the strings, or with ""s. */
static void script_of(const char *const *s, struct lx_buf *out)
{
    const double x[] = {16, 32}, y[] = {1.5, 2.5}, z[] = {0, 1};
    struct lx_plot_line lines[2] = {{.label = s[3], .n = 2, .x = x, .y = y}, {.label = s[4], .n = 2, .x = x, .y = y}};
    const char *xt[] = {s[5]}, *yt[] = {s[0], s[1]};
    struct lx_plot p[2] = {
        {.kind = LX_PLOT_LINES, .title = s[0], .xlabel = s[1], .ylabel = s[2], .log2x = 1, .mark_x = 16,
         .mark_label = s[5], .lines = lines, .n_lines = 2},
        {.kind = LX_PLOT_HEAT, .title = s[3], .xlabel = s[4], .ylabel = s[5], .nx = 1, .ny = 2, .xtics = xt,
         .ytics = yt, .z = z, .zmax = 1},
    };
    lx_plot_script(p, 2, out);
}

static void check_gnuplot(const char *const *s)
{
    static const char *const none[N_STR] = {"", "", "", "", "", ""};
    struct lx_buf got = {0}, want = {0}, a = {0}, b = {0};
    script_of(s, &got);
    script_of(none, &want);
    skeleton(lx_buf_str(&got), &a);
    skeleton(lx_buf_str(&want), &b);
    LX_ASSERT(strcmp(lx_buf_str(&a), lx_buf_str(&b)) == 0);
    lx_buf_free(&got);
    lx_buf_free(&want);
    lx_buf_free(&a);
    lx_buf_free(&b);
}

int lx_fuzz_feed_report(const uint8_t *data, size_t n, struct lx_error *err)
{
    char *text = lx_xmalloc(n + 1);
    memcpy(text, data, n);
    text[n] = '\0';
    const char *s[N_STR];
    size_t at = 0;
    for (int i = 0; i < N_STR; i++) {
        s[i] = text + (at <= n ? at : n);
        at += strlen(s[i]) + 1;
    }
    for (int i = 0; i < N_STR; i++) {
        check_html(s[i]);
        check_md(s[i]);
        check_latex(s[i]);
        check_csv(s[i]);
    }
    check_gnuplot(s);
    free(text);
    return LX_OK;
}

