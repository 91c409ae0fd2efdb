/*
** harness/engine/model/evaluate.c - batched evaluation over windows (see evaluate.h).
*/
#include "harness/engine/model/evaluate.h"

#include <stdlib.h>

int lx_eval_windows(const struct lx_model *m, const struct lx_spec *spec, long n_windows, int T, int logits,
                    lx_eval_fill fill, lx_eval_score score, void *ctx, struct lx_error *err)
{
    long per = 8192 / T > 1 ? 8192 / T : 1;
    int B = (int)(n_windows < per ? n_windows : per);
    if (B < 1)
        return LX_OK;
    struct lx_acts a;
    int rc = lx_acts_alloc(&a, &m->arch, B, T, logits ? LX_ACTS_EVAL : LX_ACTS_EVAL_LOSS, err);
    if (rc < 0)
        return rc;
    int *tok = lx_xmalloc(sizeof(int) * (size_t)B * (size_t)T), *tgt = lx_xmalloc(sizeof(int) * (size_t)B * (size_t)T);
    long V = m->arch.vocab;
    for (long w0 = 0; w0 < n_windows; w0 += B) {
        int nb = (int)(n_windows - w0 < B ? n_windows - w0 : B);
        for (int b = 0; b < B; b++)     /* a short last batch repeats its last window, unscored */
            fill(ctx, w0 + (b < nb ? b : nb - 1), tok + (long)b * T, tgt + (long)b * T);
        lx_model_forward(m, spec, tok, tgt, &a);
        if ((rc = lx_acts_check_finite(&a, V, nb, tgt, err)) < 0)
            break;
        for (int b = 0; b < nb; b++)
            score(ctx, w0 + b, a.loss + (long)b * T, logits ? a.logits + (long)b * T * V : NULL, tgt + (long)b * T);
    }
    free(tok);
    free(tgt);
    lx_acts_release(&a);
    return rc;
}
