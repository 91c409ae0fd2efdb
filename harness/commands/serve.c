/*
** harness/commands/serve.c - `lenx serve`: any model lenx loads, under any method
** stack, behind an OpenAI-compatible HTTP API (harness/backends/serve.c for the
** answers, harness/backends/httpd.c for HTTP; docs/servers.md). One model per
** process; requests are answered in turn on the main thread.
*/
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness/backends/httpd.h"
#include "harness/backends/local.h"
#include "harness/backends/serve.h"
#include "harness/cli.h"
#include "harness/core/mapguard.h"
#include "harness/core/version.h"
#include "harness/engine/formats/checkpoint.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/wprod.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "harness/sweep/plan.h"
#include "results/store.h"

static const struct lx_opt serve_opts[] = {
    {"model", 1, "model: checkpoint, llama2.c .bin, Hugging Face directory, or a model name / key prefix in the store"},
    {"tokenizer", 1, "tokenizer.bin, tokenizer.json or a directory (default: the one beside the model, else bytes)"},
    {"method", 1, "evaluation-time stack to serve, as YAML: yarn, [ntk, logn], {window: {size: 256}}"},
    {"length", 1, "the length the stack is compiled for, its automatic scales (default: the model's training length)"},
    {"name", 1, "the model id clients send and /v1/models lists (default: the model file's name)"},
    {"host", 1, "address to listen on (default 127.0.0.1: this machine only; 0.0.0.0: every interface)"},
    {"port", 1, "port (default 8000; 0 = a free one, printed)"},
    {"port-file", 1, "write the port to this file once listening (for scripts and tests)"},
    {"max-len", 1, "longest prompt + max_tokens (default: what the memory plan holds, at most 131072)"},
    {"max-body", 1, "bytes of a request body (default 4194304)"},
    {"max-connections", 1, "connections open at once (default 256)"},
    {"max-queue", 1, "requests waiting for the model before a 503 (default 64)"},
    {"timeout", 1, "seconds a request may wait and run before a 503 (default 600)"},
    {"crash-after", 1, "exit at once, unanswered, on completion request N+1: a server dying mid-sweep, for tests"},
    {"db", 1, "store to look model names up in (default " LX_DEFAULT_DB ")"},
    LX_NUMERICS_OPTS,
};

static const char serve_usage[] =
    "usage: lenx serve --model NAME_OR_PATH [--tokenizer PATH] [--method STACK] [--length L] [--name ID]\n"
    "                  [--host ADDR] [--port P] [--port-file F] [--max-len N] [--max-body BYTES]\n"
    "                  [--max-connections N] [--max-queue N] [--timeout S] [--crash-after N] [--db FILE]\n"
    "                  [--portable | --numerics fast|portable|bf16] [--kv-cache fp32|bf16|f16]\n"
    "                  [--activations fp32|llamacpp]\n\n"
    "Serve a model under a method stack over HTTP, in the shape of OpenAI's completions API:\n"
    "POST /v1/completions (prompt as text or token ids, max_tokens, temperature, top_k, seed, stop,\n"
    "logprobs, echo), GET /v1/models, POST /tokenize, POST /detokenize, GET /tokenizer_info,\n"
    "GET /health. Any harness that speaks the API (lm-evaluation-harness's local-completions, a lenx\n"
    "sweep's server: model) then evaluates its tasks under lenx's methods (docs/servers.md).\n"
    "Stops on SIGINT or SIGTERM.";

static volatile sig_atomic_t stop_asked;

static void on_signal(int sig)
{
    (void)sig;
    stop_asked = 1;
}

struct serve_cfg {
    const char *model, *tokenizer, *method, *name, *host, *port_file, *db;
    long length, port, max_len, crash_after;
    struct lx_httpd_limits lim;
};

static long crash_after;    /* --crash-after: completions answered before the process dies (0 = never) */

static int handle(void *ctx, const char *method, const char *path, const char *type, const char *body, size_t n,
                  struct lx_buf *out, const struct lx_httpd_stream *st)
{
    struct lx_serve *sv = ctx;
    if (crash_after > 0 && (long)sv->n_served >= crash_after && strstr(path, "completions"))
        _exit(70);      /* as a killed server: the request and every connection dropped unanswered */
    return lx_serve_handle(ctx, method, path, type, body, n, out, st);
}

/* What one request of T tokens holds at most: a scoring pass (losses, its
** top tokens a block of rows at a time: lm.c) or a generation's prompt pass
** (its last row's logits) and KV cache (decoding.c; a window's sinks and
** ring under the served stack's spec). */
static double request_bytes(const struct lx_model *m, const struct lx_spec *spec, long T)
{
    double held = lx_model_held_bytes(m);
    int bf16 = lx_numerics_get() == LX_NUMERICS_BF16;
    double score = lx_eval_bytes(&m->arch, spec, held, bf16, 1, (int)T, LX_RUN_LOSS),
           gen = lx_eval_bytes(&m->arch, spec, held, bf16, 1, (int)T, LX_RUN_KVCACHE | LX_RUN_ANSWER);
    return score > gen ? score : gen;
}

/* The longest sequence one request holds in the memory there is (a quarter
** kept back), at most cap. */
static long plan_max_len(const struct lx_model *m, const struct lx_spec *spec, long cap)
{
    double avail = lx_mem_available() * 0.75;
    long lo = 1, hi = cap;
    if (request_bytes(m, spec, hi) <= avail)
        return hi;
    while (lo + 1 < hi) {
        long mid = lo + (hi - lo) / 2;
        if (request_bytes(m, spec, mid) <= avail)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static const char *base_name(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    const char *s = path + n;
    while (s > path && s[-1] != '/')
        s--;
    return s;
}

/* What /v1/models says of the model under "lenx": the served stack, the
** length it was compiled for, the model's hashes, the numerics and the build;
** the stack as resolved at L (its automatic scales set) into canon. */
static void describe(struct lx_buf *b, struct lx_buf *canon, const struct lx_stack *st, const struct lx_spec *spec,
                     const struct lx_ckpt_info *info, const struct lx_tokenizer *tk, const char *path, long L)
{
    struct lx_buf sjson = {0};
    char blas[256];
    lx_stack_resolved(st, spec, canon, &sjson);
    lx_products_describe(blas, sizeof blas);
    lx_buf_puts(b, "{\"methods\":");
    lx_buf_json_str(b, lx_buf_str(canon));
    lx_buf_printf(b, ",\"methods_json\":%s,\"length\":%ld,\"train_len\":%ld,\"model_path\":",
                  sjson.s ? sjson.s : "null", L, info->train_len);
    lx_buf_json_str(b, path);
    lx_buf_printf(b, ",\"model_key\":\"%s\",\"weights_sha256\":\"%s\",\"tokenizer_sha256\":\"%s\","
                  "\"numerics\":\"%s\",\"kv_cache\":\"%s\",\"activations\":\"%s\",\"version\":\"%s\",\"commit\":\"%s\","
                  "\"blas\":",
                  info->model_key, info->weights_sha256, lx_tok_or_byte(tk)->hash,
                  lx_numerics_name(lx_numerics_get()), lx_kv_name(lx_kv_get()),
                  lx_acts_llamacpp_get() ? "llamacpp" : "fp32", LX_VERSION,
                  lx_build_commit());
    lx_buf_json_str(b, blas);
    lx_buf_puts(b, "}");
    lx_buf_free(&sjson);
}

static int serve_run(const struct serve_cfg *o, struct lx_error *err)
{
    char *path = NULL, name[256];
    struct lx_model m = {0};
    struct lx_ckpt_info info = {0};
    struct lx_tokenizer *tk = NULL;
    struct lx_doc d1 = {0}, d2 = {0};
    struct lx_stack st = {0};
    struct lx_httpd *h = NULL;
    int rc = lx_local_find(o->model, o->db, &path, err);
    if (rc == LX_OK)
        rc = lx_local_load(path, o->tokenizer, &m, &info, &tk, err);
    if (rc == LX_OK)
        rc = lx_local_check_finite(&m, &info, path, err);
    if (rc == LX_OK && m.arch.mode != LX_MODEL_CAUSAL)
        rc = lx_err(err, LX_EINVAL, "%s is a masked-LM (mlm) model; lenx serve needs a causal one", path);
    if (rc == LX_OK)
        rc = lx_local_stack(&st, info.stack, o->method ? o->method : info.eval_stack, &d1, &d2, err);
    long L = o->length > 0 ? o->length : info.train_len;
    struct lx_spec spec;
    if (rc == LX_OK)
        rc = lx_local_compile(&st, &m, &info, L, &spec, err);
    long max_len = rc == LX_OK ? plan_max_len(&m, &spec, o->max_len > 0 ? o->max_len : 131072) : 0;
    if (rc == LX_OK && o->max_len > 0 && max_len < o->max_len)
        rc = lx_err(err, LX_ENOMEM, "--max-len %ld does not fit: one request of that many tokens (a pass and its "
                    "KV cache) needs %.2f GB, and %.2f GB are available\n  hint: --max-len %ld", o->max_len,
                    request_bytes(&m, &spec, o->max_len) / 1e9, lx_mem_available() / 1e9, max_len);
    struct lx_lm lm;
    struct lx_buf infos = {0}, canon = {0};
    if (rc == LX_OK) {
        lx_lm_local(&lm, &m, &spec);
        snprintf(name, sizeof name, "%s", o->name ? o->name : base_name(path));
        describe(&infos, &canon, &st, &spec, &info, tk, path, L);
    }
    struct lx_serve sv = {.lm = &lm, .tok = lx_tok_or_byte(tk), .name = name, .lim = {m.arch.vocab, max_len},
                          .length = L, .info = infos.s, .created = (long)time(NULL)};
    if (rc == LX_OK)
        rc = lx_httpd_start(&h, o->host, (int)o->port, &o->lim, handle, &sv, err);
    FILE *pf = rc == LX_OK && o->port_file ? fopen(o->port_file, "w") : NULL;
    int bad = rc == LX_OK && o->port_file && (!pf || fprintf(pf, "%d\n", lx_httpd_port(h)) < 0), e = errno;
    if (pf && fclose(pf) != 0 && !bad)     /* closed either way: a failed write left it open */
        bad = 1, e = errno;
    if (bad)
        rc = lx_err(err, LX_EIO, "--port-file %s cannot be written: %s\n  hint: does its folder exist, and is it "
                    "writable?", o->port_file, strerror(e));
    crash_after = o->crash_after;
    if (rc == LX_OK) {
        struct sigaction sa = {.sa_handler = on_signal};
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);   /* a client gone mid-answer is that connection's error, not ours */
        lx_term_printf(stderr, "lenx: serving '%s' (%s, methods %s, length %ld, at most %ld tokens a sequence) on "
                       "http://%s:%d/v1\n", name, path, lx_buf_str(&canon), L, max_len, o->host, lx_httpd_port(h));
        fflush(stderr);
        lx_httpd_serve(h, &stop_asked);
        fprintf(stderr, "lenx: stopped after %lu completions\n", sv.n_served);
    }
    lx_httpd_stop(h);
    lx_buf_free(&infos);
    lx_buf_free(&canon);
    lx_stack_release(&st);
    lx_doc_release(&d1);
    lx_doc_release(&d2);
    lx_tokenizer_free(tk);
    lx_ckpt_info_release(&info);
    lx_model_release(&m);
    free(path);
    return rc;
}

int lx_cmd_serve(int argc, char **argv)
{
    struct lx_args a;
    struct lx_error err;
    int rc = lx_cli_args(&a, serve_opts, LX_N_OPTS(serve_opts), serve_usage, argc, argv);
    if (rc >= 0)
        return rc;
#define GET(k) lx_args_value(&a, k)
    struct serve_cfg o = {.model = GET("model"), .tokenizer = GET("tokenizer"), .method = GET("method"),
                          .name = GET("name"), .host = GET("host") ? GET("host") : "127.0.0.1",
                          .port_file = GET("port-file"), .db = GET("db") ? GET("db") : LX_DEFAULT_DB, .port = 8000,
                          .lim = {.max_body = 4L << 20, .max_connections = 256, .max_queue = 64, .idle_timeout = 60,
                                  .request_timeout = 600}};
    if (a.n_pos)
        return lx_cli_misuse(&a, "serve", NULL);
    if (!o.model) {
        fprintf(stderr, "lenx: error: serve needs --model\n  hint: %s\n", serve_usage);
        return 2;
    }
    long body = o.lim.max_body, conns = o.lim.max_connections, queue = o.lim.max_queue, timeout = 600;
    if ((GET("length") && (rc = lx_args_long(GET("length"), "length", 1, 1L << 20, &o.length, &err)) < 0) ||
        (GET("port") && (rc = lx_args_long(GET("port"), "port", 0, 65535, &o.port, &err)) < 0) ||
        (GET("max-len") && (rc = lx_args_long(GET("max-len"), "max-len", 2, 1L << 20, &o.max_len, &err)) < 0) ||
        (GET("max-body") && (rc = lx_args_long(GET("max-body"), "max-body", 1024, 1L << 30, &body, &err)) < 0) ||
        (GET("max-connections") &&
         (rc = lx_args_long(GET("max-connections"), "max-connections", 1, 4096, &conns, &err)) < 0) ||
        (GET("max-queue") && (rc = lx_args_long(GET("max-queue"), "max-queue", 1, 100000, &queue, &err)) < 0) ||
        (GET("timeout") && (rc = lx_args_long(GET("timeout"), "timeout", 1, 86400 * 7, &timeout, &err)) < 0) ||
        (GET("crash-after") && (rc = lx_args_long(GET("crash-after"), "crash-after", 1, LONG_MAX, &o.crash_after,
                                                  &err)) < 0))
        return lx_cli_fail(&err, rc);
#undef GET
    o.lim.max_body = body, o.lim.max_connections = (int)conns, o.lim.max_queue = (int)queue;
    o.lim.request_timeout = (double)timeout;
    if ((rc = lx_cli_numerics(&a, &err)) < 0)
        return lx_cli_fail(&err, rc);
    rc = serve_run(&o, &err);
    return rc < 0 ? lx_cli_fail(&err, rc) : 0;
}
