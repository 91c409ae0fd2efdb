/*
** harness/engine/model/calibrate.c - attention statistics of a model on text, and the
** probe built from them (see calibrate.h).
*/
#include "harness/engine/model/calibrate.h"

#include <stdlib.h>
#include <string.h>

#include "harness/engine/kernels/attention.h"

/* Windows per measurement: about 16k tokens, between 1 and 16 windows. */
static long probe_windows(int T)
{
    long n = 16384 / T;
    return n < 1 ? 1 : n > 16 ? 16 : n;
}

int lx_attn_probe(const struct lx_model *m, const struct lx_spec *spec, const struct lx_corpus_tokens *text, int bos,
                  int T, long n_windows, int layer0, struct lx_probe_stats *out, struct lx_error *err)
{
    int causal = m->arch.mode == LX_MODEL_CAUSAL && bos >= 0;
    long n_text = causal ? T - 1 : T;       /* causal windows start with BOS (none: bos < 0, begin: text) */
    struct lx_window *win = lx_xcalloc((size_t)n_windows, sizeof *win);
    int B = (int)lx_tokens_windows(text, n_text, n_windows, win);
    if (B < 1) {
        free(win);
        return lx_err(err, LX_EINVAL, "no document of the %s split holds a window of %d tokens\n"
                      "  hint: use a shorter length", text->c->split, T);
    }
    struct lx_acts a;
    int rc = lx_acts_alloc(&a, &m->arch, B, T, LX_ACTS_EVAL_ANSWER, err);     /* no targets: no head */
    if (rc < 0) {
        free(win);
        return rc;
    }
    long L = m->arch.layers, H = m->arch.heads, n_slots = L * B * H;
    double *st = lx_xcalloc((size_t)(n_slots * LX_ATTN_NSTATS), sizeof *st);
    int *tok = lx_xmalloc(sizeof(int) * (size_t)B * (size_t)T);
    for (int b = 0; b < B; b++) {
        int *t = tok + (long)b * T;
        const int *src = text->ids[win[b].doc] + win[b].off;
        if (causal)
            *t++ = bos;
        for (long i = 0; i < n_text; i++)
            t[i] = src[i];
    }
    a.stats = st;
    lx_model_forward(m, spec, tok, NULL, &a);
    double sum[LX_ATTN_NSTATS] = {0};
    for (long s = 0; s < (layer0 ? B * H : n_slots); s++)      /* fixed order: thread count free */
        for (int k = 0; k < LX_ATTN_NSTATS; k++)
            sum[k] += st[s * LX_ATTN_NSTATS + k];
    out->rows = (long)sum[LX_ST_ROWS];
    out->pmax = sum[LX_ST_PMAX] / sum[LX_ST_ROWS];
    out->entropy = sum[LX_ST_ENTROPY] / sum[LX_ST_ROWS];
    out->sigma = sum[LX_ST_SIGMA] / sum[LX_ST_ROWS];
    free(tok);
    free(st);
    free(win);
    lx_acts_release(&a);
    return LX_OK;
}

struct model_probe {
    const struct lx_spec *spec, *spec_train;    /* the cell's stack at its length and at the training length */
    const struct lx_model *m;
    const struct lx_corpus_tokens *text;
    int bos;            /* what a causal window starts with */
};

static int model_stats(void *ctx, int at_train, double tau, int layer0, struct lx_probe_stats *out,
                       struct lx_error *err)
{
    const struct model_probe *p = ctx;
    struct lx_spec s = *(at_train ? p->spec_train : p->spec);
    s.temperature = tau;
    int T = (int)s.facts.length;
    return lx_attn_probe(p->m, &s, p->text, p->bos, T, probe_windows(T), layer0, out, err);
}

int lx_calibrate_model(struct lx_spec *spec, const struct lx_spec *spec_train, const struct lx_model *m,
                       const struct lx_corpus_tokens *text, int bos, struct lx_error *err)
{
    struct model_probe mp = {.spec = spec, .spec_train = spec_train, .m = m, .text = text, .bos = bos};
    struct lx_probe probe = {.ctx = &mp, .stats = model_stats};
    return lx_spec_calibrate(spec, &probe, err);
}
