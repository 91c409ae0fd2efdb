/*
** harness/core/result.h - what a cell produces: named metrics, named series and
** the raw outputs of retrieval tasks (exact bytes, with what ended them).
*/
#ifndef LX_RESULT_H
#define LX_RESULT_H

#include "harness/core/lx.h"

struct lx_metric {
    char *name;         /* "entropy", "range_mass:10-100", "entropy_se" */
    double value;
};

struct lx_point {
    char *series;       /* "loss_by_position", ... */
    double x, y;
};

/* One raw answer of a retrieval task, kept so results can be re-scored. */
struct lx_output {
    long sample;        /* sample index within the cell */
    double depth;       /* needle depth 0 … 1 (NaN when none) */
    char *gold;         /* the gold answer */
    char *text;         /* (n_text,) the greedy output's bytes before the first special token;
                        ** a 0 byte is a byte (a NUL follows, for printing) */
    long n_text;        /* bytes in text */
    const char *stop;   /* the special token that ended it ("eos", ...; static), NULL when none did */
    int score;          /* 1 correct, 0 wrong, -1 unparsable */
    double logprob;     /* teacher-forced log p(gold answer) */
    char *prompt;       /* (n_prompt,) the instance's prompt bytes after BOS (lenx run --keep-prompts), or NULL */
    long n_prompt;
};

struct lx_result {
    struct lx_metric *metrics;  /* (n_metrics,) in the order the task reported them */
    int n_metrics, cap_metrics;
    struct lx_point *points;    /* (n_points,) */
    int n_points, cap_points;
    struct lx_output *outputs;  /* (n_outputs,) */
    int n_outputs, cap_outputs;
};

void lx_result_metric(struct lx_result *r, const char *name, double value);
void lx_result_point(struct lx_result *r, const char *series, double x, double y);
void lx_result_output(struct lx_result *r, long sample, double depth, const char *gold, const char *text,
                      long n_text, const char *stop, int score, double logprob);
/* Keep a prompt's n bytes with output i. */
void lx_result_output_prompt(struct lx_result *r, int i, const char *bytes, long n);
const struct lx_metric *lx_result_find(const struct lx_result *r, const char *name);
void lx_result_release(struct lx_result *r);

#endif
