/*
** harness/core/spec.c - composing logit ops, visibility and position maps (see
** spec.h). Everything here is the naive reference the engine's fast paths
** are tested against.
*/
#include "harness/core/spec.h"

#include <math.h>
#include <string.h>

void lx_spec_init(struct lx_spec *spec, const struct lx_facts *facts)
{
    memset(spec, 0, sizeof *spec);
    spec->facts = *facts;
    spec->temperature = 1.0;
    spec->cos_scale = 1.0;
    spec->posmap.cap = INFINITY;
}

/* op inserted at index at of the stack's logit ops (the later ones move up). */
static int push_at(struct lx_spec *spec, const struct lx_logit_op *op, int at, struct lx_error *err)
{
    LX_ASSERT(op->kind == LX_OP_ROW_SCALE ? op->row_scale != NULL : op->dist_affine != NULL);
    if (spec->n_ops == LX_SPEC_MAX_OPS)
        return lx_err(err, LX_EINVAL, "method '%s': the stack has more than %d logit transforms\n"
                      "  hint: split the stack", op->method, LX_SPEC_MAX_OPS);
    memmove(&spec->ops[at + 1], &spec->ops[at], (size_t)(spec->n_ops - at) * sizeof *spec->ops);
    spec->ops[at] = *op;
    spec->n_ops++;
    spec->has_dist |= op->kind == LX_OP_DIST_AFFINE;
    spec->signed_dist |= op->kind == LX_OP_DIST_AFFINE && op->signed_t;
    return LX_OK;
}

int lx_spec_push(struct lx_spec *spec, const struct lx_logit_op *op, struct lx_error *err)
{
    if (spec->rel.method)
        return lx_err(err, LX_EINVAL, "method '%s' comes after '%s' in the stack: '%s' adds the model's learned "
                      "bias to the final logits, so it must be the stack's last logit transform\n  hint: move "
                      "%s to the end of the stack", op->method, spec->rel.method, spec->rel.method, spec->rel.method);
    return push_at(spec, op, spec->n_ops, err);
}

int lx_spec_claim(const char **slot, const char *method, const char *what, struct lx_error *err)
{
    if (*slot)
        return lx_err(err, LX_EINVAL, "methods '%s' and '%s' both set %s\n"
                      "  hint: keep one of them in this stack", *slot, method, what);
    *slot = method;
    return LX_OK;
}

int lx_spec_claim_positions(struct lx_spec *spec, const char *method, struct lx_error *err)
{
    return lx_spec_claim(&spec->positions, method, "the position scheme", err);
}

/* A position map and a rotary decay cannot share a stack: the decay's factors follow the positions the rows are
** turned by, not a far key's mapped distance. */
static int decay_beside_posmap(const struct lx_spec *spec, struct lx_error *err)
{
    return lx_err(err, LX_EINVAL, "method '%s' decays q.k by the distance the rows are turned by, and '%s' in the "
                  "same stack maps far keys to other positions\n  hint: keep one of them in this stack",
                  spec->decay, spec->posmap.method);
}

int lx_spec_claim_posmap(struct lx_spec *spec, const char *method, struct lx_error *err)
{
    int rc = lx_spec_claim(&spec->posmap.method, method, "the far-key positions", err);
    return rc == LX_OK && spec->decay ? decay_beside_posmap(spec, err) : rc;
}

int lx_spec_claim_decay(struct lx_spec *spec, const char *method, struct lx_error *err)
{
    int rc = lx_spec_need_rotary(spec, method, err);
    if (rc == LX_OK)
        rc = lx_spec_claim(&spec->decay, method, "the rotary decay", err);
    return rc == LX_OK && spec->posmap.method ? decay_beside_posmap(spec, err) : rc;
}

int lx_spec_claim_train_positions(struct lx_spec *spec, const char *method, struct lx_error *err)
{
    int rc = lx_spec_need_rotary(spec, method, err);
    return rc == LX_OK ? lx_spec_claim(&spec->pose.method, method, "the training positions", err) : rc;
}

int lx_spec_check_train_target(const char *method, long target, const struct lx_facts *f, struct lx_error *err)
{
    if (!f->training || target >= f->length)
        return LX_OK;
    return lx_err(err, LX_EINVAL, "%s: target %ld is shorter than the %ld-token windows it trains%s\n"
                  "  hint: target is the length the positions spread over: at least the window, e.g. 16 x it",
                  method, target, f->length, f->length > f->train_len ? " (the fine-tuning length)" : "");
}

int lx_spec_need_rotary(const struct lx_spec *spec, const char *method, struct lx_error *err)
{
    if (spec->rotary.n_pairs)
        return LX_OK;
    return lx_err(err, LX_EINVAL, "method '%s' needs rotary positions, and %s\n"
                  "  hint: put rope before it in the stack, e.g. [rope, %s]", method,
                  spec->positions ? "this stack's position scheme is not rope" : "no rope comes before it",
                  method);
}

int lx_spec_claim_frequencies(struct lx_spec *spec, const char *method, struct lx_error *err)
{
    int rc = lx_spec_need_rotary(spec, method, err);
    if (rc == LX_OK && spec->wavelengths)
        return lx_err(err, LX_EINVAL, "method '%s' rescales the rotary frequencies after '%s' rounded their "
                      "wavelengths\n  hint: put %s before %s in the stack ([rope, %s, %s])", method,
                      spec->wavelengths, method, spec->wavelengths, method, spec->wavelengths);
    return rc < 0 ? rc : lx_spec_claim(&spec->frequencies, method, "the rotary frequencies", err);
}

int lx_spec_resolve_scale(const char *method, double *scale, long *original, const struct lx_facts *f,
                          struct lx_error *err)
{
    if (f->training && !f->ft_len && *scale == 0)
        return lx_err(err, LX_EINVAL, "%s: trained in (train: true) it needs an explicit scale\n"
                      "  hint: e.g. %s: {scale: 4, train: true}", method, method);
    if (original && *original == 0)
        *original = f->train_len;
    long L = original ? *original : f->train_len;
    long n = f->ft_len ? f->ft_len : f->length;
    if (*scale == 0)
        *scale = L > 0 && n > L ? (double)n / L : 1.0;
    return LX_OK;
}

int lx_spec_compress_distances(struct lx_spec *spec, const char *method, double s, struct lx_error *err)
{
    if (!spec->positions)
        return lx_spec_need_rotary(spec, method, err);
    if (spec->rel.method)
        return lx_err(err, LX_EINVAL, "method '%s' needs rotary positions or a fixed distance bias, and this "
                      "stack's positions are %s, learned\n  hint: PI compresses rope's frequencies ([rope, %s]) or "
                      "the distances of alibi or sandwich ([alibi, %s])", method, lx_relbias_describe(spec->rel.kind),
                      method, method);
    int n = 0;
    for (int k = 0; k < spec->n_ops; k++) {
        struct lx_logit_op *op = &spec->ops[k];
        if (op->kind == LX_OP_DIST_AFFINE && strcmp(op->method, spec->positions) == 0) {
            op->compress = s;
            n++;
        }
    }
    if (n == 0)
        return lx_spec_need_rotary(spec, method, err);
    return lx_spec_claim(&spec->frequencies, method, "the positions' scale", err);
}

double lx_longrope_attention(double given, double s, double L)
{
    return given > 0 ? given : s > 1 && L > 1 ? sqrt(1 + log(s) / log(L)) : 1;
}

void lx_spec_affine(const struct lx_spec *spec, int head, long n, double t, double *A, double *B)
{
    double a = 1.0, b = 0.0;
    for (int k = 0; k < spec->n_ops; k++) {
        const struct lx_logit_op *op = &spec->ops[k];
        if (op->kind == LX_OP_ROW_SCALE) {
            double r = op->row_scale(op->params, &spec->facts, n);
            a *= r;
            b *= r;
        } else {
            double x, m;
            op->dist_affine(op->params, &spec->facts, head, lx_op_distance(op, t), &x, &m);
            a *= x;
            b = x * b + m;
        }
    }
    *A = a / spec->temperature;
    *B = b / spec->temperature;
}

double lx_spec_logit(const struct lx_spec *spec, int head, long n, double t, double s)
{
    for (int k = 0; k < spec->n_ops; k++) {
        const struct lx_logit_op *op = &spec->ops[k];
        if (op->kind == LX_OP_ROW_SCALE) {
            s *= op->row_scale(op->params, &spec->facts, n);
        } else {
            double a, m;
            op->dist_affine(op->params, &spec->facts, head, lx_op_distance(op, t), &a, &m);
            s = a * s + m;
        }
    }
    return s / spec->temperature;
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
                double a, m, t = (double)(t0 + i);
                op->dist_affine(op->params, &spec->facts, head, lx_op_distance(op, t), &a, &m);
                A[i] *= a;
                B[i] = a * B[i] + m;
            }
        }
    }
    if (spec->temperature != 1.0)
        for (long i = 0; i < n_t; i++) {
            A[i] /= spec->temperature;
            B[i] /= spec->temperature;
        }
}

int lx_spec_visible(const struct lx_spec *spec, long i, long j, long T, int causal)
{
    (void)T;
    if (causal && j > i)
        return 0;
    long d = i > j ? i - j : j - i, B = spec->vis.block;
    if (B)      /* its block and the ones beside it */
        return j / B >= i / B - 1 && j / B <= i / B + 1;
    return !spec->vis.window || d < spec->vis.window || j < spec->vis.sinks;
}

long lx_spec_upper_sinks(const struct lx_spec *spec, long T, int causal, long hi)
{
    long S = spec->vis.sinks < T ? spec->vis.sinks : T;
    return !causal && S > hi ? S : hi;
}

long lx_spec_row_keys(const struct lx_spec *spec, long i, long T, int causal, long *lo, long *hi)
{
    long W = spec->vis.window, B = spec->vis.block;
    if (B) {    /* blocks ⌊i/B⌋ − 1 … ⌊i/B⌋ (+ 1 bidirectional) */
        *lo = i / B > 0 ? (i / B - 1) * B : 0;
        *hi = causal ? i + 1 : ((i / B + 2) * B < T ? (i / B + 2) * B : T);
    } else {
        *lo = W && i - W + 1 > 0 ? i - W + 1 : 0;
        *hi = causal ? i + 1 : (W && i + W < T ? i + W : T);
    }
    long s = spec->vis.sinks < *lo ? spec->vis.sinks : *lo;
    return *hi - *lo + s + (lx_spec_upper_sinks(spec, T, causal, *hi) - *hi);
}

int lx_spec_far(const struct lx_spec *spec, long i, long j)
{
    const struct lx_posmap *p = &spec->posmap;
    return p->method && (j < i ? j < lx_posmap_near_lo(p, i) : j >= lx_posmap_near_hi(p, i));
}

long lx_posmap_near_lo(const struct lx_posmap *p, long i)
{
    if (p->period <= 0)
        return i - p->from + 1;
    long C = p->period, c = i / C;
    return i % C <= p->local ? C * (c - 1) : C * c;
}

long lx_posmap_near_hi(const struct lx_posmap *p, long i)
{
    if (p->period <= 0)
        return i + p->from;
    long C = p->period;     /* past the last key j with near_lo(j) <= i: r(j) <= local in the next chunk */
    return C * (i / C + 1) + (p->local < C - 1 ? p->local : C - 1) + 1;
}

int lx_spec_rotary_gain(struct lx_spec *spec, const struct lx_logit_op *a2, double a, struct lx_error *err)
{
    struct lx_rotary *r = &spec->rotary;
    if (2 * r->n_pairs >= spec->facts.d_head)   /* q and k times a: the base logit times a², before every op */
        return push_at(spec, a2, 0, err);
    r->gain = (r->gain != 0 ? r->gain : 1.0) * a;
    return LX_OK;
}

double lx_posmap_pos(const struct lx_posmap *p, long t, int shifted)
{
    if (p->period > 0)
        return shifted ? p->cap : (double)(t % p->period);
    double g = p->group > 1 ? (double)(t / p->group) : (double)t;     /* t >= 0: C's division floors */
    return shifted ? fmin(p->scale * g + p->shift, p->cap) : p->scale * g;
}

double lx_spec_delta(const struct lx_spec *spec, long i, long j)
{
    if (!lx_spec_far(spec, i, j))
        return (double)(i - j);
    const struct lx_posmap *p = &spec->posmap;
    return lx_posmap_pos(p, i, j < i) - lx_posmap_pos(p, j, j > i);
}

long lx_posmap_first_far(const struct lx_posmap *p)
{
    if (p->period <= 0)
        return p->from;
    long C = p->period;     /* r(i) past local in chunk 1, else chunk 2's first row */
    return p->local < C - 1 ? C + p->local + 1 : 2 * C;
}

double lx_spec_qk_scale(const struct lx_spec *spec, int d)
{
    return spec->cosine ? spec->cos_scale : 1.0 / sqrt(spec->qk_dim > 0 ? spec->qk_dim : (double)d);
}

int lx_spec_calibrate(struct lx_spec *spec, const struct lx_probe *probe, struct lx_error *err)
{
    if (!spec->calibrate)
        return LX_OK;
    double tau = 1.0;
    int rc = spec->calibrate(spec->calib_params, &spec->facts, probe, &tau, err);
    if (rc == LX_OK)
        spec->temperature = tau;
    return rc;
}

int lx_relbias_bucket(const struct lx_relbias *r, double t)
{
    long d = (long)floor(t < 0 ? -t : t);
    int nb = r->bidirectional ? r->buckets / 2 : r->buckets, off = r->bidirectional && t < 0 ? nb : 0;
    int exact = nb / 2;
    if (d < exact)
        return off + (int)d;
    /* float32 throughout, as transformers computes it: log of the ratio, over the
    ** double ln(max_distance / exact) rounded to float, times the exact count, truncated */
    float ratio = (float)d / (float)exact, span = (float)log((double)r->max_distance / exact);
    float x = logf(ratio) / span * (float)(nb - exact);
    long b = exact + (x < (float)nb ? (long)x : nb);
    return off + (int)(b < nb - 1 ? b : nb - 1);
}

const char *lx_relbias_describe(int kind)
{
    static const char *const what[] = {
        [LX_REL_NONE] = "none",
        [LX_REL_T5] = "T5's bucket table (t5bias)",
        [LX_REL_KERPLE_LOG] = "KERPLE's log kernel (kerple)",
        [LX_REL_KERPLE_POWER] = "KERPLE's power kernel ({kerple: {kernel: power}})",
    };
    return kind >= 0 && kind <= LX_REL_KERPLE_POWER ? what[kind] : "unknown";
}
