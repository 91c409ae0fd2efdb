/*
** harness/spec.c - composing logit ops (see spec.h).
*/
#include "harness/spec.h"

#include <string.h>

void lx_spec_init(struct lx_spec *spec, const struct lx_facts *facts)
{
    memset(spec, 0, sizeof *spec);
    spec->facts = *facts;
}

int lx_spec_push(struct lx_spec *spec, const struct lx_logit_op *op, struct lx_error *err)
{
    LX_ASSERT(op->kind == LX_OP_ROW_SCALE ? op->row_scale != NULL : op->dist_affine != NULL);
    if (spec->n_ops == LX_SPEC_MAX_OPS)
        return lx_err(err, LX_EINVAL, "method '%s': the stack has more than %d logit transforms\n"
                      "  hint: split the stack", op->method, LX_SPEC_MAX_OPS);
    spec->ops[spec->n_ops++] = *op;
    return LX_OK;
}

int lx_spec_claim_positions(struct lx_spec *spec, const char *method, struct lx_error *err)
{
    if (spec->positions)
        return lx_err(err, LX_EINVAL, "methods '%s' and '%s' both set the position scheme\n"
                      "  hint: keep one of them in this stack", spec->positions, method);
    spec->positions = method;
    return LX_OK;
}

double lx_spec_logit(const struct lx_spec *spec, int head, long n, long t, double s)
{
    for (int k = 0; k < spec->n_ops; k++) {
        const struct lx_logit_op *op = &spec->ops[k];
        if (op->kind == LX_OP_ROW_SCALE) {
            s *= op->row_scale(op->params, &spec->facts, n);
        } else {
            double a, m;
            op->dist_affine(op->params, &spec->facts, head, t, &a, &m);
            s = a * s + m;
        }
    }
    return s;
}

void lx_spec_row(const struct lx_spec *spec, int head, long n, long t0, long n_t,
                 double *A, double *B)
{
    for (long i = 0; i < n_t; i++) {
        A[i] = 1.0;
        B[i] = 0.0;
    }
    for (int k = 0; k < spec->n_ops; k++) {
        const struct lx_logit_op *op = &spec->ops[k];
        if (op->kind == LX_OP_ROW_SCALE) {
            double r = op->row_scale(op->params, &spec->facts, n);
            for (long i = 0; i < n_t; i++) {
                A[i] *= r;
                B[i] *= r;
            }
        } else {
            for (long i = 0; i < n_t; i++) {
                double a, m;
                op->dist_affine(op->params, &spec->facts, head, t0 + i, &a, &m);
                A[i] *= a;
                B[i] = a * B[i] + m;
            }
        }
    }
}
