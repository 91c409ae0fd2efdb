/*
** tasks/gaussian.c - attention statistics of IID Gaussian logits.
**
** The theory experiment of Anson, Wang, Aitchison, "Scale-invariant attention"
** (arXiv 2505.17083, §3.1-3.2, Fig. 1 top row, Fig. 2, Fig. 6; App. I.1). One
** query attends to keys t = 0..N-1 (t counts back from the query; t = 0 is the
** query itself) whose base logits are IID N(0, sigma²). The method stack
** transforms them (every key is visible, so n = N in every row scale); the task
** draws `samples` independent rows and reports, each with a standard error
** <metric>_se over the rows:
**
**   entropy                 global attention entropy  −Σ A_t log A_t
**   local_mass              Σ_{t < local} A_t
**   range_entropy:t1-t2     entropy of the renormalised distribution on [t1, t2)
**   range_mass:t1-t2        Σ_{t1 <= t < t2} A_t
**   range_z:t1-t2           the unnormalised total Σ_{t1 <= t < t2} exp(L_t), the
**                           paper's Z_{t1}^{t2}; for L_t ~ N(m_t, a_t²σ²) its mean
**                           is Σ exp(m_t + a_t²σ²/2) in closed form
**
** Ranges that do not fit inside N are skipped. Draws come from Philox keyed on
** the cell's data key with the sample index as stream, so the numbers do not
** depend on the thread count or on which method runs. Definitions and
** parameters: docs/tasks.md#gaussian; results: docs/REPRODUCTIONS.md.
*/
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/rng.h"
#include "tasks/task.h"

struct gaussian_params {
    long samples;               /* independent query rows drawn */
    double sigma;               /* standard deviation of the base logits */
    long local;                 /* local_mass counts t < local */
    struct lx_ranges ranges;    /* [t1, t2) ranges for range_* metrics */
    long d_head;                /* d for methods that read it (InfoScale) */
    long train_len;             /* training length for methods that read it */
};

static const struct lx_param gaussian_rows[] = {
    LX_P_INT(struct gaussian_params, samples, "2000", 2, 1e8, 0,
             "independent query rows; standard errors shrink as 1/sqrt(samples)"),
    LX_P_FLOAT(struct gaussian_params, sigma, "1", 0, 1e3, LX_PF_MIN_OPEN,
               "standard deviation of the IID base logits"),
    LX_P_INT(struct gaussian_params, local, "100", 1, 1e12, 0,
             "local_mass is the attention on the `local` nearest keys (t < local)"),
    LX_P_RANGES(struct gaussian_params, ranges, "[[10,100],[100,1000],[1000,10000]]", 0, 1e12, 0,
                "[t1, t2) distance ranges for range_entropy, range_mass and range_z"),
    LX_P_INT(struct gaussian_params, d_head, "64", 1, 65536, 0,
             "head dimension reported to methods (there is no model)"),
    LX_P_INT(struct gaussian_params, train_len, "64", 1, 1e12, 0,
             "training length reported to methods (there is no model)"),
};

static void gaussian_facts(const void *params, long length, struct lx_facts *f)
{
    const struct gaussian_params *p = params;
    f->d_head = (int)p->d_head;
    f->train_len = p->train_len;
    f->n_heads = 1;
    f->length = length;
    f->caps = LX_CAP_LOGITS;
}

static int gaussian_check(const void *params, long length, struct lx_error *err)
{
    (void)params;
    if (length < 1 || length > 100000000L)
        return lx_err(err, LX_EINVAL, "gaussian: length %ld is outside [1, 1e8]", length);
    return LX_OK;
}

/* log Σ exp(L_t) and the entropy of softmax(L) over n >= 1 values. */
static void softmax_stats(const double *L, long n, double *log_z, double *entropy)
{
    double mx = L[0];
    for (long t = 1; t < n; t++)
        mx = L[t] > mx ? L[t] : mx;
    double z = 0.0, zl = 0.0;
    for (long t = 0; t < n; t++) {
        double e = exp(L[t] - mx);
        z += e;
        zl += e * (L[t] - mx);
    }
    *log_z = mx + log(z);
    *entropy = log(z) - zl / z;
}

/* Metrics of one row, in the order of the names built in gaussian_run. */
static void one_row(const struct gaussian_params *p, const struct lx_ranges *rg, long N,
                    const double *A, const double *B, struct lx_rng *rng, double *L, double *out)
{
    for (long t = 0; t < N; t += 2) {
        double z0, z1;
        lx_rng_normal2(rng, &z0, &z1);
        L[t] = A[t] * p->sigma * z0 + B[t];
        if (t + 1 < N)
            L[t + 1] = A[t + 1] * p->sigma * z1 + B[t + 1];
    }
    double log_z, h, log_zl, hl;
    softmax_stats(L, N, &log_z, &h);
    softmax_stats(L, p->local < N ? p->local : N, &log_zl, &hl);
    int k = 0;
    out[k++] = h;
    out[k++] = exp(log_zl - log_z);
    for (int r = 0; r < rg->n; r++) {
        double log_zr, hr;
        softmax_stats(L + rg->lo[r], rg->hi[r] - rg->lo[r], &log_zr, &hr);
        out[k++] = hr;
        out[k++] = exp(log_zr - log_z);
        out[k++] = exp(log_zr);
    }
}

/* The probe a calibrating method (t5align) measures: `samples` rows of N IID
** N(0, σ²) base logits (N = the training length or the cell's), transformed
** by the spec with every logit divided by tau; mean max p, entropy and
** per-row standard deviation of the logits. Draws key on the cell and N. */
static int gaussian_probe(const struct lx_task_ctx *ctx, int at_train, double tau, struct lx_probe_stats *out,
                          struct lx_error *err)
{
    const struct gaussian_params *p = ctx->params;
    long N = at_train ? p->train_len : ctx->length;
    struct lx_spec s = *ctx->spec;
    s.temperature = tau;
    double *A = malloc((size_t)N * sizeof *A), *B = malloc((size_t)N * sizeof *B), *L = malloc((size_t)N * sizeof *L);
    if (!A || !B || !L) {
        free(A), free(B), free(L);
        return lx_err(err, LX_ENOMEM, "gaussian: out of memory for a probe row of N = %ld", N);
    }
    lx_spec_row(&s, 0, N, 0, N, A, B);
    memset(out, 0, sizeof *out);
    for (long r = 0; r < p->samples; r++) {
        struct lx_rng rng;
        lx_rng_init(&rng, ctx->data_key ^ (uint64_t)N, (uint32_t)r, LX_RNG_LOGITS);
        double sum = 0.0, sum2 = 0.0, log_z, h;
        for (long t = 0; t < N; t++) {
            L[t] = A[t] * p->sigma * lx_rng_normal(&rng) + B[t];
            sum += L[t];
            sum2 += L[t] * L[t];
        }
        softmax_stats(L, N, &log_z, &h);
        double mx = L[0], mean = sum / (double)N, var = sum2 / (double)N - mean * mean;
        for (long t = 1; t < N; t++)
            mx = L[t] > mx ? L[t] : mx;
        out->pmax += exp(mx - log_z);
        out->entropy += h;
        out->sigma += sqrt(var > 0.0 ? var : 0.0);
    }
    out->rows = p->samples;
    out->pmax /= (double)p->samples;
    out->entropy /= (double)p->samples;
    out->sigma /= (double)p->samples;
    free(A), free(B), free(L);
    return LX_OK;
}

static int gaussian_run(const struct lx_task_ctx *ctx, struct lx_result *out, struct lx_error *err)
{
    const struct gaussian_params *p = ctx->params;
    long N = ctx->length;
    struct lx_ranges rg = {0};   /* the ranges that fit inside N */
    for (int r = 0; r < p->ranges.n; r++)
        if (p->ranges.hi[r] <= N) {
            rg.lo[rg.n] = p->ranges.lo[r];
            rg.hi[rg.n++] = p->ranges.hi[r];
        }
    int n_metrics = 2 + 3 * rg.n;
    double *A = malloc((size_t)N * sizeof *A);
    double *B = malloc((size_t)N * sizeof *B);
    double *vals = malloc((size_t)p->samples * (size_t)n_metrics * sizeof *vals);
    if (!A || !B || !vals) {
        free(A), free(B), free(vals);
        return lx_err(err, LX_ENOMEM, "gaussian: out of memory for N = %ld, samples = %ld",
                      N, p->samples);
    }
    lx_spec_row(ctx->spec, 0, N, 0, N, A, B);
    int oom = 0;
#pragma omp parallel reduction(| : oom)
    {
        double *L = malloc((size_t)N * sizeof *L);
        oom = L == NULL;
#pragma omp for schedule(static)
        for (long s = 0; s < p->samples; s++) {
            if (!L)
                continue;
            struct lx_rng rng;
            lx_rng_init(&rng, ctx->data_key, (uint32_t)s, LX_RNG_LOGITS);
            one_row(p, &rg, N, A, B, &rng, L, vals + s * n_metrics);
        }
        free(L);
    }
    if (oom) {
        free(A), free(B), free(vals);
        return lx_err(err, LX_ENOMEM, "gaussian: out of memory for a row of N = %ld", N);
    }
    /* Reduce in sample order: the same sums whatever the thread count. */
    for (int k = 0; k < n_metrics; k++) {
        double sum = 0.0, ss = 0.0;
        for (long s = 0; s < p->samples; s++)
            sum += vals[s * n_metrics + k];
        double mean = sum / (double)p->samples;
        for (long s = 0; s < p->samples; s++) {
            double d = vals[s * n_metrics + k] - mean;
            ss += d * d;
        }
        double se = sqrt(ss / (double)(p->samples - 1) / (double)p->samples);
        char name[96], name_se[100];
        if (k == 0)
            snprintf(name, sizeof name, "entropy");
        else if (k == 1)
            snprintf(name, sizeof name, "local_mass");
        else {
            int r = (k - 2) / 3;
            static const char *kind[3] = {"range_entropy", "range_mass", "range_z"};
            snprintf(name, sizeof name, "%s:%ld-%ld", kind[(k - 2) % 3], rg.lo[r], rg.hi[r]);
        }
        snprintf(name_se, sizeof name_se, "%s_se", name);
        lx_result_metric(out, name, mean);
        lx_result_metric(out, name_se, se);
    }
    free(A), free(B), free(vals);
    return LX_OK;
}

const struct lx_task lx_task_gaussian = {
    .name = "gaussian",
    .summary = "IID Gaussian logits: entropy and attention mass in ranges (Anson et al. 2025, §3)",
    .schema = LX_SCHEMA(gaussian_rows, struct gaussian_params, NULL),
    .mode = LX_MODE_LOGITS,
    .caps = LX_CAP_LOGITS,
    .facts = gaussian_facts,
    .check = gaussian_check,
    .probe = gaussian_probe,
    .run = gaussian_run,
};
