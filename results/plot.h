/*
** results/plot.h - plots as SVG documents, drawn by gnuplot (results/plot.c is
** the only file that runs it; docs/results.md#the-html-report says why gnuplot
** rather than hand-written SVG).
**
** A plot is declarative: lines over x (optionally a log-2 axis, a marked x,
** error bars) or a heat map over two categorical axes. Callers never see the
** gnuplot language.
*/
#ifndef LX_PLOT_H
#define LX_PLOT_H

#include "harness/core/lx.h"

struct lx_plot_line {
    const char *label;          /* legend entry */
    int n;                      /* points */
    const double *x, *y;        /* (n,) in x order; y NaN: no point */
    const double *lo, *hi;      /* (n,) the ends of the error bar (NaN: none), or NULL */
};

enum lx_plot_kind { LX_PLOT_LINES, LX_PLOT_HEAT };

struct lx_plot {
    enum lx_plot_kind kind;
    const char *title, *xlabel, *ylabel;
    int width, height;          /* pixels (0: 520 x 340) */
    /* LX_PLOT_LINES */
    int log2x;                  /* x on a log-2 axis */
    double mark_x;              /* a dashed vertical line labelled mark_label at this x (0: none) */
    const char *mark_label;
    const double *xtics_at;     /* (n_xtics,) ticks at these x (the stored lengths), or NULL: gnuplot's */
    int n_xtics;
    const struct lx_plot_line *lines;   /* (n_lines,) */
    int n_lines;
    /* LX_PLOT_HEAT: z over nx columns and ny rows, each labelled */
    int nx, ny;
    const char *const *xtics;   /* (nx,) column labels */
    const char *const *ytics;   /* (ny,) row labels, bottom to top */
    const double *z;            /* (ny, nx) row-major; NaN: not stored */
    double zmin, zmax;          /* colour range */
};

/* Draw n plots with one gnuplot process: svg[i] gets plot i's SVG document
** (to free). LX_EIO with a hint when gnuplot is missing or fails (its
** message included). The program is `gnuplot`, or $LENX_GNUPLOT when set. */
int lx_plot_svg(const struct lx_plot *plots, int n, char **svg, struct lx_error *err);

/* The gnuplot script lx_plot_svg runs, appended to b: one `plot` per plot,
** each an SVG document on stdout. Every text of a plot is a single-quoted
** literal (results/plot.c, gp_str): one line per command whatever it holds. */
void lx_plot_script(const struct lx_plot *plots, int n, struct lx_buf *b);

#endif
