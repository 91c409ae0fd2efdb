/*
** harness/core/result.c - growing a cell's metrics, series and outputs.
*/
#include "harness/core/result.h"

#include <stdlib.h>
#include <string.h>

void lx_result_metric(struct lx_result *r, const char *name, double value)
{
    for (int i = 0; i < r->n_metrics; i++)
        LX_ASSERT(strcmp(r->metrics[i].name, name) != 0);   /* a task reports a name once */
    if (r->n_metrics == r->cap_metrics) {
        r->cap_metrics = r->cap_metrics ? 2 * r->cap_metrics : 16;
        r->metrics = lx_xrealloc(r->metrics, (size_t)r->cap_metrics * sizeof *r->metrics);
    }
    r->metrics[r->n_metrics].name = lx_xstrdup(name);
    r->metrics[r->n_metrics].value = value;
    r->n_metrics++;
}

void lx_result_point(struct lx_result *r, const char *series, double x, double y)
{
    if (r->n_points == r->cap_points) {
        r->cap_points = r->cap_points ? 2 * r->cap_points : 64;
        r->points = lx_xrealloc(r->points, (size_t)r->cap_points * sizeof *r->points);
    }
    r->points[r->n_points].series = lx_xstrdup(series);
    r->points[r->n_points].x = x;
    r->points[r->n_points].y = y;
    r->n_points++;
}

void lx_result_output(struct lx_result *r, long sample, double depth, const char *gold, const char *text,
                      long n_text, const char *stop, int score, double logprob)
{
    if (r->n_outputs == r->cap_outputs) {
        r->cap_outputs = r->cap_outputs ? 2 * r->cap_outputs : 32;
        r->outputs = lx_xrealloc(r->outputs, (size_t)r->cap_outputs * sizeof *r->outputs);
    }
    struct lx_output *o = &r->outputs[r->n_outputs++];
    o->sample = sample;
    o->depth = depth;
    o->gold = lx_xstrdup(gold);
    o->text = lx_xmalloc((size_t)n_text + 1);
    memcpy(o->text, text, (size_t)n_text);
    o->text[n_text] = '\0';
    o->n_text = n_text;
    o->stop = stop;
    o->score = score;
    o->logprob = logprob;
    o->prompt = NULL;
    o->n_prompt = 0;
}

void lx_result_output_prompt(struct lx_result *r, int i, const char *bytes, long n)
{
    LX_ASSERT(i >= 0 && i < r->n_outputs && n >= 0);
    struct lx_output *o = &r->outputs[i];
    free(o->prompt);
    o->prompt = lx_xmalloc((size_t)n + 1);
    memcpy(o->prompt, bytes, (size_t)n);
    o->prompt[n] = '\0';
    o->n_prompt = n;
}

const struct lx_metric *lx_result_find(const struct lx_result *r, const char *name)
{
    for (int i = 0; i < r->n_metrics; i++)
        if (strcmp(r->metrics[i].name, name) == 0)
            return &r->metrics[i];
    return NULL;
}

void lx_result_release(struct lx_result *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n_metrics; i++)
        free(r->metrics[i].name);
    for (int i = 0; i < r->n_points; i++)
        free(r->points[i].series);
    for (int i = 0; i < r->n_outputs; i++) {
        free(r->outputs[i].gold);
        free(r->outputs[i].text), free(r->outputs[i].prompt);
    }
    free(r->metrics);
    free(r->points);
    free(r->outputs);
    memset(r, 0, sizeof *r);
}
