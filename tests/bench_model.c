/*
** tests/bench_model.c - `make bench`, model part: tokens/s of the lenx engine
** beside the same model in PyTorch (tests/bench_torch.py), both measured in
** this run, reported as the ratio lenx / torch (never asserted).
**
** The model: causal, 4 layers, d_model 256, 4 heads of 64, GELU MLP 1024,
** vocab 256, RoPE (half layout, base 10000), no logit ops. Configurations:
**
**   train B x T   one optimizer step: forward + backward + global-norm clip +
**                 AdamW, the step of harness/engine/model/train.c (lx_train itself
**                 cannot run here: its windows carry BOS/EOS, ids 256 and 257,
**                 which a vocab of 256 does not have)
**   eval  1 x T   one forward pass with targets (logits, softmax, loss): what
**                 the ppl task does per window
**
** Tokens are random bytes: four batches drawn once, used in turn. PyTorch runs
** as a child process (bench_torch.py --serve) with torch.set_num_threads equal
** to lenx's OpenMP thread count and the same environment (so the same
** OPENBLAS_CORETYPE); it refuses to time anything unless the OpenBLAS it
** loaded is Debian's OpenMP build, the one lenx links. Both sides build their
** model and run warm-up steps, then take turns in LENX_BENCH_ROUNDS rounds
** (default 4) of LENX_BENCH_SECONDS / rounds each (default 8 / 4 s; at least
** one step per round, three in all), so a busy spell of another process on
** the machine hits both sides alike. tok/s = tokens per step / median step
** time over all rounds. The share of CPU time other processes took just
** before and after is printed: on a busy machine the numbers mean little
** (and contention slows PyTorch's many short parallel regions more than lenx).
**
** For profiling: LENX_BENCH_ONLY=<text> runs the configurations whose name
** contains it ("train 32x64", "eval"), LENX_BENCH_TORCH=0 skips PyTorch.
*/
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/engine/kernels/blas.h"
#include "harness/engine/model/model.h"
#include "harness/engine/model/train.h"
#include "harness/core/rng.h"

#define PYTHON "/usr/bin/python3"
#define N_BATCHES 4     /* distinct random batches, used in turn */

struct bench_cfg {
    const char *name;   /* row label */
    int train;          /* 1: optimizer step; 0: forward only */
    int B, T;           /* windows, window length */
    int warmup;         /* untimed steps first */
};

static const struct bench_cfg cfgs[] = {
    {"train 32x64", 1, 32, 64, 3},
    {"train 8x256", 1, 8, 256, 3},
    {"eval 1x1024", 0, 1, 1024, 2},
    {"eval 1x4096", 0, 1, 4096, 1},
};
#define N_CFGS ((int)(sizeof cfgs / sizeof *cfgs))

/* What one side measured. */
struct side {
    int ok;             /* 1 when every round measured */
    int n, cap;         /* timed steps over all rounds, capacity of t */
    double *t;          /* (n,) step times in seconds, every round pooled */
    double med, lo, hi; /* median, fastest, slowest step (after side_finish) */
    double tok_s;       /* tokens per step / median step time */
    char note[160];     /* why not measured, when !ok */
};

/* One model with everything a training step touches. */
struct mbench {
    struct lx_model m;
    struct lx_spec spec;
    struct lx_acts a;
    struct lx_train_cfg tc;     /* optimizer settings (AdamW as lx_train) */
    struct lx_optim opt;        /* gradient and AdamW state (training only) */
    int *tok, *tgt;             /* (N_BATCHES, B, T) */
    long step;                  /* steps taken */
    double sink;                /* sum of losses: keeps the work observable */
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double bench_seconds(void)
{
    const char *s = getenv("LENX_BENCH_SECONDS");
    double v = s ? atof(s) : 0.0;
    return v > 0.0 ? v : 8.0;
}

static const struct lx_arch bench_arch = {
    .mode = LX_MODEL_CAUSAL, .layers = 4, .d_model = 256, .heads = 4, .d_head = 64,
    .d_mlp = 1024, .mlp = LX_MLP_GELU, .vocab = 256, .norm_eps = 1e-5, .init_std = 0.02,
};

/* ---- lenx side ------------------------------------------------------------------ */

static int mbench_init(struct mbench *mb, const struct bench_cfg *c)
{
    memset(mb, 0, sizeof *mb);
    const struct lx_arch *ar = &bench_arch;
    lx_model_init(&mb->m, ar, 1);
    struct lx_facts f = {.d_head = (int)ar->d_head, .train_len = c->T, .n_heads = (int)ar->heads,
                         .length = c->T, .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL};
    lx_spec_init(&mb->spec, &f);
    mb->spec.positions = "rope";
    mb->spec.rotary.n_pairs = (int)ar->d_head / 2;
    mb->spec.rotary.layout = LX_ROPE_HALF;
    for (int k = 0; k < mb->spec.rotary.n_pairs; k++)
        mb->spec.rotary.inv_freq[k] = pow(10000.0, -2.0 * k / (double)ar->d_head);
    struct lx_error err;
    if (lx_acts_alloc(&mb->a, ar, c->B, c->T, c->train, &err) < 0) {
        fprintf(stderr, "bench: %s\n", err.msg);
        lx_model_release(&mb->m);
        return -1;
    }
    long n = (long)N_BATCHES * c->B * c->T;
    mb->tok = lx_xmalloc(sizeof(int) * (size_t)n);
    mb->tgt = lx_xmalloc(sizeof(int) * (size_t)n);
    struct lx_rng r;
    lx_rng_init(&r, 7, 0, LX_RNG_DATA);
    for (long w = 0; w < n / c->T; w++) {          /* window w: stream s[0..T], tok = s[0..T-1], tgt = s[1..T] */
        int prev = (int)(lx_rng_u32(&r) % 256u);
        for (int t = 0; t < c->T; t++) {
            mb->tok[w * c->T + t] = prev;
            prev = (int)(lx_rng_u32(&r) % 256u);
            mb->tgt[w * c->T + t] = prev;
        }
    }
    if (!c->train)
        return 0;
    lx_optim_init(&mb->opt, &mb->m);
    mb->tc = (struct lx_train_cfg){.length = c->T, .batch = c->B, .steps = 1000000, .lr = 3e-4, .min_lr = 0.1,
                                   .warmup = 0, .weight_decay = 0.1, .beta1 = 0.9, .beta2 = 0.99, .clip = 1.0};
    return 0;
}

static void mbench_release(struct mbench *mb)
{
    lx_optim_release(&mb->opt);
    free(mb->tok), free(mb->tgt);
    lx_acts_release(&mb->a);
    lx_model_release(&mb->m);
}

/* One step of lx_train's loop body (batch filling aside): zero the gradient,
** forward, backward, clip, AdamW with decoupled decay on matrices. */
static void train_step(struct mbench *mb)
{
    long off = (mb->step % N_BATCHES) * mb->a.B * mb->a.T;
    lx_optim_zero_grad(&mb->opt);
    double loss = lx_model_forward(&mb->m, &mb->spec, mb->tok + off, mb->tgt + off, &mb->a);
    lx_model_backward(&mb->m, &mb->spec, mb->tok + off, mb->tgt + off, &mb->a, &mb->opt.g);
    lx_optim_step(&mb->opt, &mb->m, &mb->tc, mb->step);
    mb->sink += loss;
    mb->step++;
}

static void eval_step(struct mbench *mb)
{
    long off = (mb->step % N_BATCHES) * mb->a.B * mb->a.T;
    mb->sink += lx_model_forward(&mb->m, &mb->spec, mb->tok + off, mb->tgt + off, &mb->a);
    mb->step++;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void side_add(struct side *sd, double dt)
{
    if (sd->n == sd->cap) {
        sd->cap = sd->cap ? 2 * sd->cap : 64;
        sd->t = realloc(sd->t, sizeof(double) * (size_t)sd->cap);
        LX_ASSERT(sd->t);
    }
    sd->t[sd->n++] = dt;
}

static void side_finish(struct side *sd, long tokens)
{
    if (!sd->ok || !sd->n)
        return;
    double *t = sd->t;
    int n = sd->n;
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    sd->med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    sd->lo = t[0];
    sd->hi = t[n - 1];
    sd->tok_s = (double)tokens / sd->med;
}

/* One round of lenx: steps of an initialised model until `seconds` passed
** (at least `min_steps`), their times into sd. */
static void lenx_round(struct mbench *mb, int train, double seconds, int min_steps, struct side *sd)
{
    void (*step)(struct mbench *) = train ? train_step : eval_step;
    int n = 0;
    for (double t_start = now(); n < min_steps || now() - t_start < seconds; n++) {
        double t0 = now();
        step(mb);
        side_add(sd, now() - t0);
    }
}

/* ---- PyTorch side ------------------------------------------------------------ */

static int torch_available(void)
{
    return system(PYTHON " -c 'import torch' >/dev/null 2>&1") == 0;
}

/* A running bench_torch.py --serve: we write its stdin, read its stdout. */
struct torch_proc {
    pid_t pid;          /* child, or 0 */
    FILE *to, *from;    /* pipe ends */
};

/* Start bench_torch.py for one configuration and read up to its "ready": its
** "info" lines are echoed when `verbose`, its OpenBLAS core is checked against
** lenx's, a "skip" or an early end leaves sd->ok 0 with the reason. */
static int torch_start(struct torch_proc *tp, const struct bench_cfg *c, int threads, const char *core,
                       int verbose, struct side *sd)
{
    int in[2], out[2];
    memset(tp, 0, sizeof *tp);
    if (pipe(in) < 0 || pipe(out) < 0) {
        snprintf(sd->note, sizeof sd->note, "pipe() failed");
        return sd->ok = 0, -1;
    }
    char script[512], batch[16], length[16], thr[16], warm[16];
    snprintf(script, sizeof script, "%s/tests/bench_torch.py", LX_SOURCE_DIR);
    snprintf(batch, sizeof batch, "%d", c->B);
    snprintf(length, sizeof length, "%d", c->T);
    snprintf(thr, sizeof thr, "%d", threads);
    snprintf(warm, sizeof warm, "%d", c->warmup);
    fflush(stdout);
    tp->pid = fork();
    if (tp->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(out[1], 2);
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        execl(PYTHON, PYTHON, script, "--serve", "--mode", c->train ? "train" : "eval", "--batch", batch,
              "--length", length, "--threads", thr, "--warmup", warm, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    tp->to = fdopen(in[1], "w");
    tp->from = fdopen(out[0], "r");
    if (tp->pid < 0 || !tp->to || !tp->from) {
        snprintf(sd->note, sizeof sd->note, "cannot start %s", PYTHON);
        return sd->ok = 0, -1;
    }
    char line[1024];
    while (fgets(line, sizeof line, tp->from)) {
        line[strcspn(line, "\n")] = 0;
        if (!strcmp(line, "ready"))
            return 0;
        if (!strncmp(line, "info ", 5)) {
            const char *k = strstr(line, ": core ");
            if (k && strncmp(k + 7, core, strlen(core)))
                printf("  WARNING: torch's OpenBLAS core differs from lenx's (%s): %s\n", core, line + 5);
            if (verbose)
                printf("  torch: %s\n", line + 5);
            continue;
        }
        if (!strncmp(line, "skip ", 5))
            snprintf(sd->note, sizeof sd->note, "%.150s", line + 5);
        printf("  torch: %s\n", line);     /* skips, warnings, tracebacks */
    }
    if (!sd->note[0])
        snprintf(sd->note, sizeof sd->note, "bench_torch.py ended before it was ready");
    return sd->ok = 0, -1;
}

/* One round of PyTorch: "run <seconds>", then its "step <s>" lines up to "done". */
static void torch_round(struct torch_proc *tp, double seconds, struct side *sd)
{
    char line[1024];
    double dt;
    fprintf(tp->to, "run %g\n", seconds);
    fflush(tp->to);
    while (fgets(line, sizeof line, tp->from)) {
        if (!strncmp(line, "done", 4))
            return;
        if (sscanf(line, "step %lf", &dt) == 1)
            side_add(sd, dt);
        else
            printf("  torch: %s", line);
    }
    sd->ok = 0;
    snprintf(sd->note, sizeof sd->note, "bench_torch.py ended in the middle of a round");
}

static void torch_stop(struct torch_proc *tp)
{
    if (tp->to) {
        fputs("quit\n", tp->to);
        fclose(tp->to);
    }
    if (tp->from)
        fclose(tp->from);
    if (tp->pid > 0)
        waitpid(tp->pid, NULL, 0);
    memset(tp, 0, sizeof *tp);
}

/* ---- the table ---------------------------------------------------------------- */

void lx_bench_cpu(char *out, size_t n)
{
    snprintf(out, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            const char *v = strchr(line, ':') + 1;
            v += *v == ' ';
            snprintf(out, n, "%.*s", (int)strcspn(v, "\n"), v);
            break;
        }
    if (f)
        fclose(f);
}

/* Fraction of the machine's CPU time others used over `sec` seconds while
** this process sleeps: near 0 on a quiet machine. */
double lx_bench_busy(double sec)
{
    unsigned long long v[2][8] = {{0}};
    for (int k = 0; k < 2; k++) {
        FILE *f = fopen("/proc/stat", "r");
        if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[k][0], &v[k][1], &v[k][2], &v[k][3],
                         &v[k][4], &v[k][5], &v[k][6], &v[k][7]) != 8) {
            if (f)
                fclose(f);
            return -1.0;
        }
        fclose(f);
        if (k == 0)
            nanosleep(&(struct timespec){.tv_sec = (time_t)sec, .tv_nsec = (long)(1e9 * (sec - (double)(time_t)sec))},
                      NULL);
    }
    double total = 0.0, idle = (double)(v[1][3] - v[0][3]) + (double)(v[1][4] - v[0][4]);
    for (int i = 0; i < 8; i++)
        total += (double)(v[1][i] - v[0][i]);
    return total > 0.0 ? 1.0 - idle / total : -1.0;
}

/* What runs underneath, printed above the table. */
static void print_setup(int threads, int rounds, double seconds, const char *blas, double busy)
{
    char cpu[128];
    lx_bench_cpu(cpu, sizeof cpu);
    const char *ct = getenv("OPENBLAS_CORETYPE"), *wp = getenv("OMP_WAIT_POLICY");
    printf("\nlenx vs PyTorch: causal model, 4 layers, d_model 256, 4 heads x 64, GELU MLP 1024, vocab 256, rope\n");
    printf("  machine: %s, %d OpenMP threads; OPENBLAS_CORETYPE=%s (both sides)\n", cpu, threads,
           ct ? ct : "(unset)");
    printf("  lenx:  OpenBLAS %s, BLAS threads = OpenMP threads = %d%s\n", blas, threads,
           lx_blas_is_openmp() ? "" : "  WARNING: not the OpenMP build");
    printf("  OMP_WAIT_POLICY=%s; CPU used by other processes before: %.0f%%%s\n", wp ? wp : "(unset)",
           100.0 * busy, busy > 0.1 ? "  (expect noise)" : "");
    printf("  timing: after warm-up, lenx and torch take turns in %d rounds of >= %g s each (>= 3 steps in all);\n"
           "          tok/s = tokens per step / median step time over all rounds\n", rounds, seconds / rounds);
}

/* One configuration on both sides, taking turns; fills lx and th. */
static void bench_config(const struct bench_cfg *c, int have_torch, int threads, const char *core, int verbose,
                         int rounds, double seconds, struct side *lx, struct side *th)
{
    lx->ok = 1;
    th->ok = have_torch;
    if (!have_torch)
        snprintf(th->note, sizeof th->note, "torch not available");
    struct torch_proc tp = {0};
    if (th->ok)
        torch_start(&tp, c, threads, core, verbose, th);
    struct mbench mb;
    if (mbench_init(&mb, c) < 0) {
        lx->ok = 0;
        snprintf(lx->note, sizeof lx->note, "activations do not fit");
    }
    for (int k = 0; lx->ok && k < c->warmup; k++)
        (c->train ? train_step : eval_step)(&mb);
    for (int r = 0; r < rounds; r++) {              /* take turns: a busy spell hits both */
        if (lx->ok)
            lenx_round(&mb, c->train, seconds / rounds, 1, lx);
        if (th->ok)
            torch_round(&tp, seconds / rounds, th);
    }
    while ((lx->ok && lx->n < 3) || (th->ok && th->n < 3)) {   /* fewer than 3 rounds */
        if (lx->ok && lx->n < 3)
            lenx_round(&mb, c->train, 0.0, 1, lx);
        if (th->ok && th->n < 3)
            torch_round(&tp, 0.0, th);
    }
    if (lx->ok) {
        if (!isfinite(mb.sink)) {
            lx->ok = 0;
            snprintf(lx->note, sizeof lx->note, "loss not finite");
        }
        mbench_release(&mb);
    }
    torch_stop(&tp);
    long tokens = (long)c->B * c->T;
    side_finish(lx, tokens);
    side_finish(th, tokens);
    const struct side *sides[2] = {lx, th};
    for (int k = 0; k < 2; k++)
        if (sides[k]->ok)
            printf("  %-12s %-5s: %3d steps, median %.4f s (fastest %.4f, slowest %.4f)\n", c->name,
                   k ? "torch" : "lenx", sides[k]->n, sides[k]->med, sides[k]->lo, sides[k]->hi);
    fflush(stdout);
}

static void print_table(const int *ran, const struct side *lx, const struct side *th, int have_torch)
{
    printf("\n| %-12s | %12s | %12s | %11s |\n", "config", "lenx tok/s", "torch tok/s", "lenx/torch");
    printf("|--------------|--------------|--------------|-------------|\n");
    for (int i = 0; i < N_CFGS; i++) {
        if (!ran[i])
            continue;
        char l[32] = "-", t[32] = "-", r[32] = "-";
        if (lx[i].ok)
            snprintf(l, sizeof l, "%.0f", lx[i].tok_s);
        if (th[i].ok)
            snprintf(t, sizeof t, "%.0f", th[i].tok_s);
        if (lx[i].ok && th[i].ok)
            snprintf(r, sizeof r, "%.2fx", lx[i].tok_s / th[i].tok_s);
        printf("| %-12s | %12s | %12s | %11s |\n", cfgs[i].name, l, t, r);
    }
    for (int i = 0; i < N_CFGS; i++) {
        if (ran[i] && !lx[i].ok)
            printf("  %s: lenx not measured: %s\n", cfgs[i].name, lx[i].note);
        if (ran[i] && !th[i].ok && have_torch)
            printf("  %s: torch not measured: %s\n", cfgs[i].name, th[i].note);
    }
}

int lx_bench_model(void)
{
    signal(SIGPIPE, SIG_IGN);           /* a PyTorch child that died shows up as EOF, not as our death */
    int threads = omp_get_max_threads();
    double seconds = bench_seconds();
    const char *rs = getenv("LENX_BENCH_ROUNDS");
    int rounds = rs && atoi(rs) > 0 ? atoi(rs) : 4;
    char blas[128], core[64] = "?";
    lx_blas_describe(blas, sizeof blas);
    sscanf(blas, "core=%63s", core);
    double busy = lx_bench_busy(1.0);
    print_setup(threads, rounds, seconds, blas, busy);
    const char *only = getenv("LENX_BENCH_ONLY"), *want_torch = getenv("LENX_BENCH_TORCH");
    int no_torch = want_torch && !strcmp(want_torch, "0"), have_torch = !no_torch && torch_available();
    if (no_torch)
        printf("  torch: skipped (LENX_BENCH_TORCH=0)\n");
    else if (!have_torch)
        printf("  torch: skipped: `" PYTHON " -c \"import torch\"` failed (Debian: apt-get install python3-torch)\n");

    struct side lx[N_CFGS] = {{0}}, th[N_CFGS] = {{0}};
    int ran[N_CFGS] = {0}, n_ran = 0;
    for (int i = 0; i < N_CFGS; i++)
        if (!only || strstr(cfgs[i].name, only)) {
            ran[i] = 1;
            bench_config(&cfgs[i], have_torch, threads, core, !n_ran++, rounds, seconds, &lx[i], &th[i]);
        }
    print_table(ran, lx, th, have_torch);
    double busy2 = lx_bench_busy(1.0);
    printf("  CPU used by other processes after: %.0f%%\n", 100.0 * busy2);
    if (busy > 0.1 || busy2 > 0.1)
        printf("  NOTE: other processes were running; rerun on a quiet machine for numbers to quote\n");
    for (int i = 0; i < N_CFGS; i++)
        free(lx[i].t), free(th[i].t);
    return 0;
}
