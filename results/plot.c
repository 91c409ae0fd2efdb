/*
** results/plot.c - plots as SVG through gnuplot's svg terminal: the only file
** that runs gnuplot (docs/results.md#the-html-report).
**
** One gnuplot process draws every plot of a report: the script (data inline
** as datablocks) goes to a temporary file, gnuplot writes one SVG document
** per plot to its standard output, and the documents are split at "</svg>".
** The svg terminal's output is a function of the script alone (no time
** stamps), so a report is byte-for-byte reproducible. Each document's ids
** are prefixed with its plot number, so several can sit inline in one HTML
** page.
*/
#define _POSIX_C_SOURCE 200809L
#include "results/plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A string as a gnuplot single-quoted literal, the one context where gnuplot
** substitutes nothing: a double-quoted one runs `backquoted` text as a shell
** command and reads backslash escapes. A quote is doubled; a control byte,
** which could end the command line, becomes a space. Every text is drawn
** noenhanced, so ^ _ @ { } are plain characters; gnuplot's svg terminal
** writes & and < of the text as entities. */
static void gp_str(struct lx_buf *b, const char *s)
{
    lx_buf_puts(b, "'");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\'')
            lx_buf_puts(b, "''");
        else if (*p < 0x20 || *p == 0x7f)
            lx_buf_puts(b, " ");
        else
            lx_buf_printf(b, "%c", *p);
    }
    lx_buf_puts(b, "'");
}

static void gp_num(struct lx_buf *b, double v)
{
    char t[32];
    lx_fmt_num(t, v);
    lx_buf_puts(b, isfinite(v) ? t : "NaN");
}

/* What the points of a line plot span: whether any is finite, the smallest
** positive x (a log axis draws x <= 0 at half of it, tic "0") and the x range. */
struct span {
    int any;                /* a point with finite x and y */
    double min_pos;         /* the smallest finite x > 0 (INFINITY when none) */
    double lo, hi;          /* the finite x's range (lo > hi when none) */
    int at_zero;            /* a finite x <= 0 on a log axis */
};

static void span_of(const struct lx_plot *p, struct span *s)
{
    *s = (struct span){.min_pos = INFINITY, .lo = INFINITY, .hi = -INFINITY};
    for (int l = 0; l < p->n_lines; l++)
        for (int i = 0; i < p->lines[l].n; i++) {
            double x = p->lines[l].x[i];
            if (!isfinite(x))
                continue;
            s->at_zero |= p->log2x && x <= 0;
            if (x > 0 && x < s->min_pos)
                s->min_pos = x;
            s->lo = x < s->lo ? x : s->lo, s->hi = x > s->hi ? x : s->hi;
            s->any |= isfinite(p->lines[l].y[i]);
        }
}

static void gp_lines(struct lx_buf *b, const struct lx_plot *p, int id)
{
    struct span s;
    span_of(p, &s);
    double zero_at = isfinite(s.min_pos) ? s.min_pos / 2 : 0.5;    /* where x <= 0 is drawn on a log axis */
    for (int l = 0; l < p->n_lines; l++) {
        const struct lx_plot_line *ln = &p->lines[l];
        lx_buf_printf(b, "$p%d_%d << EOD\n", id, l);
        for (int i = 0; i < ln->n; i++) {
            gp_num(b, p->log2x && ln->x[i] <= 0 ? zero_at : ln->x[i]);
            lx_buf_puts(b, " ");
            gp_num(b, ln->y[i]);
            lx_buf_puts(b, " ");
            int bar = ln->lo && ln->hi && !isnan(ln->lo[i]) && !isnan(ln->hi[i]);
            gp_num(b, bar ? ln->lo[i] : ln->y[i]);
            lx_buf_puts(b, " ");
            gp_num(b, bar ? ln->hi[i] : ln->y[i]);
            lx_buf_puts(b, "\n");
        }
        lx_buf_puts(b, "EOD\n");
    }
    lx_buf_puts(b, p->log2x ? "set logscale x 2\n" : "unset logscale x\n");
    if (p->n_xtics) {
        lx_buf_puts(b, "set xtics (");
        for (int i = 0; i < p->n_xtics; i++) {
            lx_buf_puts(b, i ? ", " : "");
            gp_num(b, p->xtics_at[i]);
        }
        lx_buf_puts(b, ")\n");
    } else {
        lx_buf_puts(b, "set xtics autofreq\n");
    }
    if (s.at_zero) {    /* distance 0 on a log axis: drawn at half the first bucket, named 0 */
        lx_buf_puts(b, "set xtics add (\"0\" ");
        gp_num(b, zero_at);
        lx_buf_puts(b, ")\n");
    }
    if (!s.any) {       /* every value undefined (a diverged run's NaN): an empty panel, not a gnuplot error */
        lx_buf_puts(b, "set yrange [0:1]\nset label 2 \"no finite value\" at graph 0.5, graph 0.5 center\n");
        double xl = s.lo <= s.hi ? (p->log2x && s.lo <= 0 ? zero_at : s.lo) : 1;
        double xh = s.lo <= s.hi ? (p->log2x && s.hi <= 0 ? zero_at : s.hi) : 1;
        if (xh <= xl)
            xh = p->log2x ? 2 * xl : xl + 1;
        lx_buf_puts(b, "set xrange [");
        gp_num(b, xl);
        lx_buf_puts(b, ":");
        gp_num(b, xh);
        lx_buf_puts(b, "]\n");
    }
    lx_buf_puts(b, "set key below Left reverse noenhanced\nset grid\nset offsets graph 0.04, graph 0.04, "
                   "graph 0.05, graph 0.05\n");
    if (p->mark_x > 0) {
        lx_buf_puts(b, "set arrow 1 from ");
        gp_num(b, p->mark_x);
        lx_buf_puts(b, ", graph 0 to ");
        gp_num(b, p->mark_x);
        lx_buf_puts(b, ", graph 1 nohead dashtype 2 linecolor rgb \"#808080\"\nset label 1 ");
        gp_str(b, p->mark_label ? p->mark_label : "");
        lx_buf_puts(b, " at ");
        gp_num(b, p->mark_x);
        lx_buf_puts(b, ", graph 1.03 center textcolor rgb \"#606060\" noenhanced\n");
    }
    lx_buf_puts(b, "plot ");
    for (int l = 0; l < p->n_lines; l++) {
        lx_buf_printf(b, "%s$p%d_%d using 1:2:3:4 with yerrorlines linewidth 1.5 pointtype 7 pointsize 0.6 title ",
                      l ? ", \\\n  " : "", id, l);
        gp_str(b, p->lines[l].label);
    }
    lx_buf_puts(b, "\nunset arrow 1\nunset label 1\nset offsets 0, 0, 0, 0\n");
    if (!s.any)
        lx_buf_puts(b, "unset label 2\nset autoscale xy\n");
}

static void gp_heat(struct lx_buf *b, const struct lx_plot *p, int id)
{
    lx_buf_printf(b, "$p%d << EOD\n", id);
    for (int r = 0; r < p->ny; r++)
        for (int c = 0; c < p->nx; c++) {
            lx_buf_printf(b, "%d %d ", c, r);
            gp_num(b, p->z[(size_t)r * (size_t)p->nx + (size_t)c]);
            lx_buf_puts(b, "\n");
        }
    lx_buf_puts(b, "EOD\nunset logscale x\nunset key\nunset grid\nset xtics (");
    for (int c = 0; c < p->nx; c++) {
        lx_buf_puts(b, c ? ", " : "");
        gp_str(b, p->xtics[c]);
        lx_buf_printf(b, " %d", c);
    }
    lx_buf_puts(b, ")\nset ytics (");
    for (int r = 0; r < p->ny; r++) {
        lx_buf_puts(b, r ? ", " : "");
        gp_str(b, p->ytics[r]);
        lx_buf_printf(b, " %d", r);
    }
    lx_buf_printf(b, ")\nset xrange [-0.5:%g]\nset yrange [-0.5:%g]\nset cbrange [", p->nx - 0.5, p->ny - 0.5);
    gp_num(b, p->zmin);
    lx_buf_puts(b, ":");
    gp_num(b, p->zmax);
    lx_buf_printf(b, "]\nset palette defined (0 \"#b2182b\", 0.5 \"#f7f7f7\", 1 \"#2166ac\")\n"
                  "plot $p%d using 1:2:(0.5):(0.5):3 with boxxyerror fillstyle solid 1.0 noborder fillcolor palette, "
                  "$p%d using 1:2:(sprintf(\"%%.2f\", $3)) "
                  "with labels font \",9\"\n"
                  "set autoscale xy\nunset xrange\nunset yrange\nset xtics autofreq\nset ytics autofreq\n"
                  "set key\n", id, id);
}

void lx_plot_script(const struct lx_plot *plots, int n, struct lx_buf *b)
{
    for (int i = 0; i < n; i++) {
        const struct lx_plot *p = &plots[i];
        lx_buf_printf(b, "set terminal svg size %d,%d font \"sans,11\" background rgb \"white\"\n"
                      "set title ", p->width ? p->width : 520, p->height ? p->height : 340);
        gp_str(b, p->title ? p->title : "");
        lx_buf_puts(b, " noenhanced\nset xlabel ");
        gp_str(b, p->xlabel ? p->xlabel : "");
        lx_buf_puts(b, " noenhanced\nset ylabel ");
        gp_str(b, p->ylabel ? p->ylabel : "");
        lx_buf_puts(b, " noenhanced\n");
        if (p->kind == LX_PLOT_HEAT)
            gp_heat(b, p, i);
        else
            gp_lines(b, p, i);
    }
}

/* One document with its ids (and references to them) prefixed "p<i>-";
** inside tags only, not in text (gnuplot writes a text's "<" as "&lt;"). */
static char *prefix_ids(const char *doc, size_t n, int i)
{
    static const char *const marks[] = {"id='", "id=\"", "href='#", "href=\"#"};
    struct lx_buf b = {0};
    int in_tag = 0;
    for (size_t k = 0; k < n;) {
        int hit = 0;
        in_tag = doc[k] == '<' ? 1 : doc[k] == '>' ? 0 : in_tag;
        for (int m = 0; m < 4 && !hit && in_tag; m++) {
            size_t len = strlen(marks[m]);
            if (k + len <= n && strncmp(doc + k, marks[m], len) == 0) {
                lx_buf_printf(&b, "%sp%d-", marks[m], i);
                k += len;
                hit = 1;
            }
        }
        if (!hit)
            lx_buf_printf(&b, "%c", doc[k++]);
    }
    return b.s ? b.s : lx_xstrdup("");
}

/* Split gnuplot's output into n documents. */
static int split_docs(const char *out, int n, char **svg, struct lx_error *err)
{
    const char *p = out;
    for (int i = 0; i < n; i++) {
        const char *start = strstr(p, "<svg"), *end = start ? strstr(start, "</svg>") : NULL;
        if (!end) {
            for (int j = 0; j < i; j++)
                free(svg[j]), svg[j] = NULL;
            return lx_err(err, LX_EIO, "gnuplot wrote %d SVG documents for %d plots\n"
                          "  hint: run the report again; a gnuplot other than 5.x may not be supported", i, n);
        }
        end += strlen("</svg>");
        svg[i] = prefix_ids(start, (size_t)(end - start), i);
        p = end;
    }
    return LX_OK;
}

/* Run gnuplot on the script file; its stdout into out, stderr into errfile. */
static int run_gnuplot(const char *script, const char *errfile, struct lx_buf *out, struct lx_error *err)
{
    const char *prog = getenv("LENX_GNUPLOT");
    prog = prog && *prog ? prog : "gnuplot";
    struct lx_buf cmd = {0};
    lx_buf_printf(&cmd, "'%s' '%s' 2>'%s'", prog, script, errfile);
    FILE *f = popen(lx_buf_str(&cmd), "r");
    lx_buf_free(&cmd);
    if (!f)
        return lx_err(err, LX_EIO, "cannot start %s\n  hint: is the system out of processes?", prog);
    char chunk[8192];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk - 1, f)) > 0) {
        chunk[got] = '\0';
        lx_buf_puts(out, chunk);
    }
    int st = pclose(f), code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (code == 127)
        return lx_err(err, LX_EIO, "%s not found: the report draws its plots with gnuplot\n"
                      "  hint: apt-get install gnuplot-nox (scripts/deps.sh installs it; `make` runs that), "
                      "or set LENX_GNUPLOT to its path", prog);
    if (code != 0) {
        unsigned char *msg = NULL;
        long n = 0;
        lx_read_file(errfile, &msg, &n, 4096, NULL);
        lx_err(err, LX_EIO, "%s failed (exit status %d) drawing the report's plots: %.600s\n"
               "  hint: this is a lenx bug if gnuplot is 5.x; please report it with the sweep",
               prog, code, msg ? (char *)msg : "");
        free(msg);
        return LX_EIO;
    }
    return LX_OK;
}

int lx_plot_svg(const struct lx_plot *plots, int n, char **svg, struct lx_error *err)
{
    if (n == 0)
        return LX_OK;
    char script[] = "/tmp/lenx-plot-XXXXXX", errfile[] = "/tmp/lenx-plot-err-XXXXXX";
    int fd = mkstemp(script), efd = fd >= 0 ? mkstemp(errfile) : -1;
    if (fd < 0 || efd < 0) {
        if (fd >= 0)
            close(fd), unlink(script);
        return lx_err(err, LX_EIO, "cannot create a temporary file in /tmp for gnuplot\n"
                      "  hint: check that /tmp is writable");
    }
    close(efd);
    struct lx_buf text = {0}, out = {0};
    lx_plot_script(plots, n, &text);
    FILE *f = fdopen(fd, "w");
    int rc = f && fwrite(text.s, 1, text.len, f) == text.len ? LX_OK : LX_EIO;
    if (f ? fclose(f) != 0 : (close(fd), 1))
        rc = LX_EIO;
    if (rc < 0)
        lx_err(err, LX_EIO, "cannot write gnuplot's script %s\n  hint: is /tmp full?", script);
    if (rc == LX_OK)
        rc = run_gnuplot(script, errfile, &out, err);
    if (rc == LX_OK)
        rc = split_docs(lx_buf_str(&out), n, svg, err);
    unlink(script);
    unlink(errfile);
    lx_buf_free(&text);
    lx_buf_free(&out);
    return rc;
}
