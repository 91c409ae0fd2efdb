/*
** tests/fuzz/entry.c - the fuzz entry points of lenx's readers (see entry.h); the writers' (slurm
** scripts, the report) are in entry_writers.c.
*/
#define _XOPEN_SOURCE 700     /* POSIX 2008 with realpath and symlink */
#include "tests/fuzz/entry.h"
#include "tests/fuzz/promise.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/backends/local.h"
#include "harness/backends/serve.h"
#include "harness/core/json.h"
#include "harness/engine/formats/checkpoint.h"
#include "harness/core/gguf.h"
#include "harness/core/half.h"
#include "harness/engine/model/model.h"
#include "harness/engine/formats/safetensors.h"
#include "harness/engine/tokenizers/tok_hf.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "harness/sweep/plan.h"
#include "harness/sweep/uses.h"
#include "tasks/peer.h"

int lx_fuzz_feed_config(const uint8_t *data, size_t n, struct lx_error *err)
{
    char *text = lx_xmalloc(n + 1);     /* YAML text is a C string: a NUL byte ends it */
    memcpy(text, data, n);
    text[n] = '\0';
    struct lx_grid g;
    struct lx_plan plan = {0};
    int rc = lx_grid_load_text(&g, text, "fuzz.yaml", err);
    if (rc == LX_OK) {
        rc = lx_plan_build(&plan, &g, err);
        lx_plan_release(&plan);
    }
    lx_grid_release(&g);    /* a failed load keeps what it parsed, as in main() */
    free(text);
    return rc;
}

/* ---- scratch files ---------------------------------------------------------- */

/* This process's scratch directory (made on first use, removed at exit) and
** the files written in it: the input under the name its reader expects. */
static char scratch_dir[4096];
static const char *const scratch_names[] = {"input", "tokenizer.bin", "tokenizer.json", "tokenizer_config.json",
                                            "hf/config.json", "hf/model.safetensors", "ruler.json", "ruler.txt"};

static void scratch_remove(void)
{
    char path[4096 + 64];
    for (size_t k = 0; k < sizeof scratch_names / sizeof *scratch_names; k++) {
        snprintf(path, sizeof path, "%s/%s", scratch_dir, scratch_names[k]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/hf", scratch_dir);
    rmdir(path);
    rmdir(scratch_dir);
}

/* The path of scratch file name (one of scratch_names) into out (4096 + 64 bytes). */
static int scratch_path(const char *name, char *out, struct lx_error *err)
{
    if (!scratch_dir[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(scratch_dir, sizeof scratch_dir, "%s/lenx-fuzz-XXXXXX", dir && *dir ? dir : "/tmp");
        if (!mkdtemp(scratch_dir)) {
            scratch_dir[0] = '\0';
            return lx_err(err, LX_EIO, "cannot make a scratch directory in %s\n  hint: set TMPDIR",
                          dir && *dir ? dir : "/tmp");
        }
        atexit(scratch_remove);
    }
    snprintf(out, 4096 + 64, "%s/%s", scratch_dir, name);
    return LX_OK;
}

/* data[0, n) as the contents of scratch file name; its path into path. */
static int scratch_write(const char *name, const uint8_t *data, size_t n, char *path, struct lx_error *err)
{
    int rc = scratch_path(name, path, err);
    if (rc < 0)
        return rc;
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return lx_err(err, LX_EIO, "cannot write the scratch file %s", path);
    size_t put = n ? fwrite(data, 1, n, fp) : 0;
    int closed = fclose(fp);
    if (put != n || closed != 0)
        return lx_err(err, LX_EIO, "cannot write %zu bytes to the scratch file %s", n, path);
    return LX_OK;
}

/* ---- safetensors -------------------------------------------------------------- */

static char st_path[4096 + 64];     /* the scratch checkpoint */

/* Every tensor of an open file read back at its own shape, one name that is
** not there (the "did you mean" message), and the lenx metadata keys. */
static int read_everything(const struct lx_st_file *f, struct lx_error *err)
{
    int rc = LX_OK;
    for (int k = 0; k < f->n_entries && rc == LX_OK; k++) {
        const struct lx_st_entry *e = &f->entries[k];
        size_t n_val = (e->end - e->begin) / (size_t)lx_st_dtype_size(e->dtype);
        float *out = lx_xmalloc(4 * n_val + 1);    /* within twice the file's size */
        rc = lx_st_read(f, e->name, e->ndim, e->shape, out, err);
        free(out);
    }
    if (rc == LX_OK) {     /* (a file may hold that name, at that shape: then it reads) */
        struct lx_error miss = {{0}};
        long shape[1] = {1};
        float x;
        LX_ASSERT(lx_st_read(f, "lenx.fuzz.absent", 1, shape, &x, &miss) == LX_OK || miss.msg[0]);
    }
    static const char *const keys[] = {"lenx_arch", "lenx_stack", "lenx_train_len", "lenx_model_key"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
        (void)lx_st_meta(f, keys[k]);
    return rc;
}

/* The loaded checkpoint as a sweep's model, its own training stack as the
** method, a task of its mode: models.c reads its header again and the plan
** checks the stack against it. */
static int plan_checkpoint(const char *stack, int mode, struct lx_error *err)
{
    struct lx_buf yaml = {0};
    lx_buf_printf(&yaml, "name: fuzz\nmodels: {c: {checkpoint: '%s'}}\nmethods: [%s]\ntasks: [%s]\n"
                  "lengths: [16]\n", st_path, stack, mode == LX_MODEL_MLM ? "mlm" : "ppl");
    int rc = lx_fuzz_feed_config((const uint8_t *)lx_buf_str(&yaml), yaml.len, err);
    lx_buf_free(&yaml);
    return rc;
}

int lx_fuzz_feed_safetensors(const uint8_t *data, size_t n, struct lx_error *err)
{
    int rc = scratch_write("input", data, n, st_path, err);
    if (rc < 0)
        return rc;
    struct lx_st_file f;
    rc = lx_st_open(&f, st_path, err);
    if (rc == LX_OK)
        rc = read_everything(&f, err);
    lx_st_close(&f);
    if (rc < 0)
        return rc;
    struct lx_model m;
    struct lx_ckpt_info info;
    rc = lx_model_load(&m, st_path, &info, err);
    if (rc < 0)
        return rc;
    int mode = m.arch.mode;
    lx_model_release(&m);
    rc = plan_checkpoint(info.stack, mode, err);
    lx_ckpt_info_release(&info);
    return rc;
}

/* ---- tokenizers --------------------------------------------------------------- */


/* What a tokenizer guarantees for a text (check_text). */
enum {
    TEXT_ANY = 1,       /* encodes any bytes (llama2.c); else exactly the UTF-8 texts */
    TEXT_DECODES = 2,   /* decode(encode(s)) == s (the BOS/EOS the format adds aside) */
    TEXT_PIECES = 4,    /* a segment's pieces (lx_tok_decode) concatenate to s */
};

static int is_utf8(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        int len = lx_utf8_len((const unsigned char *)s + i, n - i);
        if (len == 0)
            return 0;
        i += (size_t)len;
    }
    return 1;
}

/* Whether err is a tokenizer.json's refusal of a text it cannot cut within
** its limits (docs/tokenizers.md#limits): a pattern past pcre2's match or
** heap limit, a text grown past the cap. That is an acceptable outcome for
** any text; cutting the text another way (the rest as one piece, say) is not,
** and the promises below still hold for every text that encodes. */
static int limit_refusal(const struct lx_error *err)
{
    return strstr(err->msg, "failed matching from byte") != NULL || strstr(err->msg, "times the text plus") != NULL;
}

static void check_ids(const struct lx_tokenizer *t, const int32_t *ids, long n, const char *what)
{
    for (long i = 0; i < n; i++)
        PROMISE(ids[i] >= 0 && ids[i] < t->n_vocab, "%s: id %ld at %ld is outside the vocabulary of %ld", what,
                (long)ids[i], i, t->n_vocab);
}

/* s[0, n) encoded whole (with the format's specials) and as a segment, each
** read back: the ids are in the vocabulary, the text is refused only when
** the tokenizer cannot take it (with a message), decoding its ids succeeds,
** the pieces fit lx_tok_decode_cap, and the round trips of `promises` hold. */
static void check_text(const struct lx_tokenizer *t, const char *s, size_t n, unsigned promises)
{
    struct lx_error err = {{0}};
    int takes = (promises & TEXT_ANY) || is_utf8(s, n);
    struct lx_ids ids = {0};
    int rc = lx_tokenizer_encode(t, s, n, LX_ENC_SPECIALS, &ids, &err);
    if (rc == LX_EINVAL && takes && !(promises & TEXT_ANY) && limit_refusal(&err)) {
        lx_ids_free(&ids);   /* a tokenizer.json past its limits on this text (a tokenizer.bin has none) */
        return;
    }
    PROMISE(takes ? rc == LX_OK : rc == LX_EINVAL && err.msg[0], "encode of %zu bytes: rc %d: %s", n, rc, err.msg);
    check_ids(t, ids.id, ids.n, "encode");
    struct lx_buf back = {0};
    rc = lx_tokenizer_decode(t, ids.id, ids.n, &back, &err);
    PROMISE(rc == LX_OK, "decode of its own %ld ids: %s", ids.n, err.msg);
    /* the text's own ids: without the BOS and EOS the format's post-processing added */
    long first = rc == LX_OK && t->add_bos && t->bos >= 0, end = ids.n - (rc == LX_OK && t->add_eos && t->eos >= 0);
    PROMISE(!takes || (end >= first && (!first || ids.id[0] == t->bos) && (end == ids.n || ids.id[end] == t->eos)),
            "encode did not add BOS %d / EOS %d as the format says", t->bos, t->eos);
    if (takes && (promises & TEXT_DECODES)) {
        lx_buf_reset(&back);
        const int32_t *own = ids.id ? ids.id + first : NULL;   /* (NULL when encode gave nothing) */
        PROMISE(lx_tokenizer_decode(t, own, end - first, &back, &err) == LX_OK, "%s", err.msg);
        PROMISE(back.len == n && memcmp(lx_buf_str(&back), s, n) == 0,
                "decode(encode(s)) != s: %zu bytes back for %zu: \"%.*s\"", back.len, n, (int)back.len,
                lx_buf_str(&back));
    }
    lx_buf_free(&back);
    lx_ids_free(&ids);

    int32_t *seg;
    long m = lx_tok_encode(t, s, (long)n, &seg, &err);
    if (m == LX_EINVAL && takes && !(promises & TEXT_ANY) && limit_refusal(&err))
        return;   /* the segment has no dummy prefix: it may pass a limit the whole text did not */
    PROMISE(takes ? m >= 0 : m == LX_EINVAL && err.msg[0], "segment of %zu bytes: %ld: %s", n, m, err.msg);
    if (m < 0)
        return;
    check_ids(t, seg, m, "segment");
    long cap = lx_tok_decode_cap(t, m);
    char *out = lx_xmalloc((size_t)cap);
    int stop;
    long k = lx_tok_decode(t, seg, m, out, &stop);
    PROMISE(k >= 0 && k < cap, "lx_tok_decode wrote %ld bytes into %ld", k, cap);
    if (promises & TEXT_PIECES)
        PROMISE(stop == -1 && k == (long)n && memcmp(out, s, n) == 0,
                "segment pieces != s: %ld bytes back for %zu (stop %d): \"%.*s\"", k, n, stop, (int)k, out);
    free(out);
    free(seg);
}

/* What every tokenizer that opens promises whatever the text: specials in the
** vocabulary, every id (of the first 4096) decodes, ids outside are refused
** with a message, and a piece is at most max_piece bytes. */
static void check_vocab(const struct lx_tokenizer *t)
{
    PROMISE(t->n_vocab > 0, "an empty vocabulary opened");
    const int32_t special[] = {t->bos, t->eos, t->pad, t->mask};
    for (int k = 0; k < 4; k++)
        PROMISE(special[k] >= -1 && special[k] < t->n_vocab, "%s id %d is outside the vocabulary of %ld",
                lx_tok_special_name(t, special[k]), special[k], t->n_vocab);
    long n = t->n_vocab < 4096 ? t->n_vocab : 4096;
    int32_t *ids = lx_xmalloc((size_t)n * sizeof *ids);
    for (long i = 0; i < n; i++) {
        ids[i] = (int32_t)i;
        PROMISE(lx_tok_bytes(t, ids[i]) <= t->max_piece, "id %ld: a piece longer than max_piece %ld", i,
                t->max_piece);
    }
    struct lx_error err = {{0}};
    struct lx_buf text = {0};
    PROMISE(lx_tokenizer_decode(t, ids, n, &text, &err) == LX_OK, "decode of ids 0..%ld: %s", n - 1, err.msg);
    lx_buf_free(&text);
    char *out = lx_xmalloc((size_t)lx_tok_decode_cap(t, n));
    int stop;
    PROMISE(lx_tok_decode(t, ids, n, out, &stop) < lx_tok_decode_cap(t, n), "lx_tok_decode past its cap");
    free(out);
    int32_t outside[2] = {-1, (int32_t)t->n_vocab};
    for (int k = 0; k < 2; k++) {
        err.msg[0] = '\0';
        PROMISE(lx_tokenizer_decode(t, outside + k, 1, &text, &err) == LX_EINVAL && err.msg[0],
                "id %d decoded", outside[k]);
    }
    lx_buf_free(&text);
    free(ids);
}

#define TEXT(s) {s, sizeof s - 1}

/* Texts every opened tokenizer encodes: empty, plain, spaces and controls,
** NUL, several scripts and a combining mark, invalid UTF-8 (an overlong,
** a lone surrogate, a cut sequence), spellings of specials, byte tokens and
** "▁", digits, a long run. */
static const struct fixed_text {
    const char *s;
    size_t n;
} fixed_texts[] = {
    TEXT(""), TEXT("Once upon a time"), TEXT(" two  spaces,\ta tab\nand\r\n "), TEXT("a\0b\0"),
    TEXT("caf\xc3\xa9 e\xcc\x81 \xd0\x9c\xd0\xb8\xd1\x80 \xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x8e\x89"),
    TEXT("\xc0\xaf \xed\xa0\x80 \xff\xfe \xe4\xb8"), TEXT("<s>x</s><unk><0x41>\xe2\x96\x81y <|end|>[X]"),
    TEXT("12345 6.78"), TEXT("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
};

/* The round trips a tokenizer.json's tables guarantee for s (0 when none):
** byte-level BPE, every byte a token, no decoder step but ByteLevel and Fuse,
** splits that keep every piece (Isolated), no Replace normalizer, Unicode
** normalizers that leave s as it is, and no added token in s or at an id the
** model spells differently. Then a segment's pieces are s; without a
** Prepend or a prefix space, decode(encode(s)) == s too. */
static unsigned json_promises(const struct hf_tok *hf, const char *s, size_t n)
{
    int whole = 1;
    if (!hf->bytelevel || hf->dec_bytes || hf->n_repl || hf->strip_start || hf->strip_stop || !is_utf8(s, n))
        return 0;
    for (int c = 0; c < 256; c++) {
        char b = (char)c;
        if (lx_bpe_find(&hf->bpe, &b, 1) < 0)
            return 0;
    }
    for (int k = 0; k < hf->n_split; k++) {
        if (hf->split[k].behavior != HF_ISOLATED)
            return 0;
        whole &= !hf->split[k].prefix_space;
    }
    struct lx_buf norm = {0};
    int same = 1;
    for (int k = 0; k < hf->n_norm && same; k++) {
        whole &= hf->norm[k].kind != HF_PREPEND;
        same = hf->norm[k].kind != HF_REPLACE;
        if (hf->norm[k].kind == HF_UNICODE) {
            lx_buf_reset(&norm);
            lx_buf_putn(&norm, "", 0);
            lx_unicode_normalize(hf->norm[k].form, s, n, &norm);
            same = norm.len == n && memcmp(norm.s, s, n) == 0;
        }
    }
    lx_buf_free(&norm);
    for (int k = 0; k < hf->n_added && same; k++) {
        const struct hf_added *a = &hf->added[k];
        size_t len;
        const char *model = lx_bpe_str(&hf->bpe, a->id, &len);
        same = memchr(a->s, '\0', a->n) == NULL && (len == 0 || (len == a->n && memcmp(model, a->s, len) == 0));
        for (size_t i = 0; same && i + a->n <= n; i++)
            same = memcmp(s + i, a->s, a->n) != 0;
    }
    return !same ? 0 : whole ? TEXT_DECODES | TEXT_PIECES : TEXT_PIECES;
}

/* path opened as a tokenizer; when it opens, every fixed text checked with
** the promises of its kind: `promises` for a tokenizer.bin, json_promises
** for a tokenizer.json. */
static int open_and_check(const char *path, int json, unsigned promises, struct lx_error *err)
{
    struct lx_tokenizer *t;
    int rc = lx_tokenizer_open(&t, path, err);
    if (rc < 0)
        return rc;
    check_vocab(t);
    for (size_t k = 0; k < sizeof fixed_texts / sizeof *fixed_texts; k++) {
        const struct fixed_text *x = &fixed_texts[k];
        check_text(t, x->s, x->n, json ? json_promises(t->impl, x->s, x->n) : promises);
    }
    lx_tokenizer_free(t);
    return LX_OK;
}

int lx_fuzz_feed_tokenizer_bin(const uint8_t *data, size_t n, struct lx_error *err)
{
    char path[4096 + 64];
    int rc = scratch_write("tokenizer.bin", data, n, path, err);
    if (rc < 0)
        return rc;
    /* lx_tokenizer_open reads bytes that start with '{' as a tokenizer.json */
    size_t i = 0;
    while (i < n && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t'))
        i++;
    int json = i < n && data[i] == '{';
    return open_and_check(path, json, TEXT_ANY | TEXT_DECODES | TEXT_PIECES, err);
}

int lx_fuzz_feed_tokenizer_json(const uint8_t *data, size_t n, struct lx_error *err)
{
    const uint8_t *nul = memchr(data, '\0', n);
    size_t n_json = nul ? (size_t)(nul - data) : n;
    char path[4096 + 64], config[4096 + 64];
    int rc = scratch_write("tokenizer.json", data, n_json, path, err);
    if (rc == LX_OK && nul)
        rc = scratch_write("tokenizer_config.json", nul + 1, n - n_json - 1, config, err);
    else if (rc == LX_OK && scratch_path("tokenizer_config.json", config, err) == LX_OK)
        unlink(config);
    return rc < 0 ? rc : open_and_check(path, 1, 0, err);
}

/* ---- one real tokenizer, fuzzed text ---------------------------------------------- */

enum { ENC_TOK512, ENC_TWIN, ENC_TINY, N_ENC };

/* The fixed tokenizers of lx_fuzz_feed_encode, opened on first use (NULL when
** absent), relative to the checkout, where the fuzzer and the test run. */
static struct lx_tokenizer *enc_tok[N_ENC];

static const struct lx_tokenizer *enc_open(int which)
{
    static const char *const paths[N_ENC] = {"../shared/models/stories260K/tok512.bin", "tests/ref/stories260K-hf",
                                            "tests/ref/tok_tiny.json"};
    static int tried[N_ENC];
    if (!tried[which]) {
        struct lx_error err = {{0}};
        tried[which] = 1;
        if (lx_tokenizer_open(&enc_tok[which], paths[which], &err) < 0 && which != ENC_TOK512)
            PROMISE(0, "%s", err.msg);   /* committed files: they must open */
    }
    return enc_tok[which];
}

static int contains(const char *s, size_t n, const char *word)
{
    size_t w = strlen(word);
    for (size_t i = 0; i + w <= n; i++)
        if (memcmp(s + i, word, w) == 0)
            return 1;
    return 0;
}

/* Whether s holds any of the NULL-terminated words. */
static int contains_any(const char *s, size_t n, const char *const *words)
{
    for (; *words; words++)
        if (contains(s, n, *words))
            return 1;
    return 0;
}

int lx_fuzz_feed_encode(const uint8_t *data, size_t n, struct lx_error *err)
{
    if (n == 0)
        return LX_OK;
    int which = data[0] % N_ENC;
    const char *s = (const char *)data + 1;
    const struct lx_tokenizer *t = enc_open(which);
    if (!t)
        return LX_OK;   /* tok512.bin is not beside the checkout */
    n--;
    /* what breaks each round trip: the twin's "▁" (it is its space) and added
    ** tokens (split out of any text); tok_tiny's added tokens */
    static const char *const twin_words[] = {"\xe2\x96\x81", "<s>", "</s>", "<unk>", NULL};
    static const char *const tiny_words[] = {"<|end|>", "[X]", NULL};
    unsigned promises = which == ENC_TOK512 ? TEXT_ANY | TEXT_DECODES | TEXT_PIECES
                        : which == ENC_TWIN ? (contains_any(s, n, twin_words) ? 0 : TEXT_DECODES | TEXT_PIECES)
                                            : (contains_any(s, n, tiny_words) ? 0 : TEXT_PIECES);
    check_text(t, s, n, promises);
    const struct lx_tokenizer *bin = which == ENC_TWIN && promises && is_utf8(s, n) ? enc_open(ENC_TOK512) : NULL;
    if (bin) {   /* the twin gives tok512.bin's ids (tests/ref/llama2c_to_hf.py); it has no regex to refuse with */
        struct lx_ids a = {0}, b = {0};
        PROMISE(lx_tokenizer_encode(t, s, n, LX_ENC_SPECIALS, &a, err) == LX_OK, "%s", err->msg);
        PROMISE(lx_tokenizer_encode(bin, s, n, LX_ENC_SPECIALS, &b, err) == LX_OK, "%s", err->msg);
        long i = 0;
        while (i < a.n && i < b.n && a.id[i] == b.id[i])
            i++;
        PROMISE(i == a.n && i == b.n, "the twin's ids differ from tok512.bin's at %ld (%d, %d)", i,
                i < a.n ? a.id[i] : -1, i < b.n ? b.id[i] : -1);
        lx_ids_free(&a);
        lx_ids_free(&b);
    }
    return LX_OK;
}

/* ---- gguf --------------------------------------------------------------------- */

/* The first blocks of a quantized tensor (at most 1,024 values) dequantized by the lanes and by the
** scalar loops: whatever the bytes, the same bits (half.c, iquant.c), or two NaNs (from a NaN scale:
** which operand's payload a product or sum of two NaNs keeps is the compiler's choice, and clang's
** scalar code, which this target is built with, may order them otherwise than the lanes). */
static void check_dequant(const struct lx_gguf_tensor *t)
{
    int dt = -1;
    for (int d = LX_DT_Q8_0; d < LX_DT_N; d++)
        if (strcmp(lx_dtype_name(d), lx_gguf_ttype_name(t->type)) == 0)
            dt = d;
    if (dt < 0)
        return;
    static float a[1024], b[1024];
    size_t n = t->bytes / lx_dtype_block_bytes(dt) * lx_dtype_block(dt);
    n = n < 1024 ? n / lx_dtype_block(dt) * lx_dtype_block(dt) : 1024 / lx_dtype_block(dt) * lx_dtype_block(dt);
    lx_half_to_f32(a, t->data, dt, n);
    lx_half_to_f32_scalar(b, t->data, dt, n);
    for (size_t i = 0; i < n; i++)
        PROMISE(memcmp(&a[i], &b[i], sizeof(float)) == 0 || (isnan(a[i]) && isnan(b[i])),
                "%s's lanes differ from its scalar loop at value %zu: %g, %g", lx_dtype_name(dt), i, a[i], b[i]);
}

int lx_fuzz_feed_gguf(const uint8_t *data, size_t n, struct lx_error *err)
{
    struct lx_gguf g;
    int rc = lx_gguf_parse(&g, data, n, "fuzz.gguf", err);
    if (rc == LX_OK) {
        volatile unsigned sum = 0;
        for (long k = 0; k < g.n_t; k++) {      /* the data is inside the input: ASan says so */
            PROMISE(g.t[k].bytes > 0 && g.t[k].data >= data && g.t[k].data + g.t[k].bytes <= data + n,
                    "tensor %s is outside the file", g.t[k].name);
            sum += g.t[k].data[0] + g.t[k].data[g.t[k].bytes - 1];
            PROMISE(lx_gguf_tensor(&g, g.t[k].name) == &g.t[k], "tensor %s is not found by name", g.t[k].name);
            check_dequant(&g.t[k]);
        }
        for (long k = 0; k < g.n_kv; k++) {
            int64_t i;
            double f;
            char str[64];
            struct lx_error sub;
            lx_gguf_get_int(&g, g.kv[k].key, 0, &i, &sub);
            lx_gguf_get_num(&g, g.kv[k].key, 0, &f, &sub);
            lx_gguf_get_str(&g, g.kv[k].key, str, sizeof str);
        }
        (void)sum;
        lx_gguf_release(&g);
    }
    PROMISE(rc == LX_OK || err->msg[0], "a refusal without a message");
    char path[4096 + 64];
    struct lx_error sub = {{0}};
    if (scratch_write("input", data, n, path, &sub) < 0)
        return rc;
    struct lx_model m;
    struct lx_ckpt_info info = {0};
    int lrc = n >= 4 && memcmp(data, "GGUF", 4) == 0 ? lx_model_load(&m, path, &info, &sub) : LX_EINVAL;
    if (lrc == LX_OK) {
        lx_model_release(&m);
        lx_ckpt_info_release(&info);
    }
    PROMISE(lrc == LX_OK || n < 4 || memcmp(data, "GGUF", 4) || sub.msg[0], "a model refused without a message");
    return rc;      /* the container's verdict: the model's needs a whole model */
}

/* ---- hf_config: a Hugging Face config.json ----------------------------------------- */

int lx_fuzz_feed_hf_config(const uint8_t *data, size_t n, struct lx_error *err)
{
    char dir[4096 + 64], st[4096 + 64], cfg[4096 + 64], real[PATH_MAX];
    int rc = scratch_path("hf", dir, err);
    if (rc == LX_OK)
        rc = scratch_path("hf/model.safetensors", st, err);
    if (rc < 0)
        return rc;
    mkdir(dir, 0777);
    if (access(st, R_OK) != 0) {    /* the fixed weights: tests/ref/hf-phi3-tiny's, from the checkout */
        if (!realpath("tests/ref/hf-phi3-tiny/model.safetensors", real))
            return LX_OK;
        if (symlink(real, st) != 0)
            return lx_err(err, LX_EIO, "cannot link %s to %s", st, real);
    }
    if ((rc = scratch_write("hf/config.json", data, n, cfg, err)) < 0)
        return rc;
    struct lx_model m;
    struct lx_ckpt_info info = {0};
    rc = lx_model_load(&m, dir, &info, err);
    if (rc == LX_OK) {      /* both stacks compiled as lenx score compiles them, short of L and past it */
        PROMISE(info.stack != NULL, "a model without its native stack");
        struct lx_stack stk = {0};
        struct lx_doc d1 = {0}, d2 = {0};
        rc = lx_local_stack(&stk, info.stack, info.eval_stack, &d1, &d2, err);
        for (int k = 0; rc == LX_OK && k < 2; k++) {
            struct lx_facts f = {.d_head = (int)m.arch.d_head, .train_len = info.train_len,
                                 .n_heads = (int)m.arch.heads, .length = k ? 2 * info.train_len : 1,
                                 .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL};
            struct lx_spec spec;
            rc = lx_stack_compile(&stk, &f, &spec, err);
        }
        lx_stack_release(&stk);
        lx_doc_release(&d1);
        lx_doc_release(&d2);
        lx_ckpt_info_release(&info);
        lx_model_release(&m);
    }
    PROMISE(rc == LX_OK || err->msg[0], "a refusal without a message");
    return rc;
}

/* ---- serve: requests to lenx serve ---------------------------------------------- */

/* The serve target's stream: events appended as written. */
static int collect(void *arg, const char *data, size_t n)
{
    lx_buf_putn(arg, data, n);
    return 0;
}

/* A stream is "data: JSON" events, each ended by a blank line, "data: [DONE]" last. */
static void check_events(const struct lx_buf *ev)
{
    const char *p = ev->s, *end = ev->s + ev->len;
    int done = 0;
    while (p < end) {
        const char *q = strstr(p, "\n\n");
        PROMISE(q && strncmp(p, "data: ", 6) == 0 && !done, "a malformed event at byte %ld", (long)(p - ev->s));
        p += 6;
        done = q - p == 6 && strncmp(p, "[DONE]", 6) == 0;
        struct lx_json *doc;
        struct lx_error sub;
        PROMISE(done || lx_json_parse(&doc, p, (size_t)(q - p), "event", &sub) == LX_OK, "an event is not JSON: %s",
                sub.msg);
        if (!done)
            lx_json_free(doc);
        p = q + 2;
    }
    PROMISE(done, "the stream does not end with [DONE]");
}

int lx_fuzz_feed_serve(const uint8_t *data, size_t n, struct lx_error *err)
{
    static struct lx_model m;
    static struct lx_spec spec;
    static struct lx_lm lm;
    static int ready;
    if (!ready) {   /* one tiny model for every input: 1 layer, d_model 16, the byte vocabulary */
        struct lx_arch a;
        lx_params_defaults(&lx_arch_schema, &a);
        a.layers = 1, a.d_model = 16, a.heads = 2, a.d_head = 8, a.d_mlp = 32, a.vocab = LX_VOCAB;
        struct lx_error sub;
        PROMISE(lx_arch_resolve(&a, &sub) == LX_OK, "the fuzz model's arch: %s", sub.msg);
        lx_model_init(&m, &a, 7);
        static struct lx_doc doc;   /* the stack's parameters live as long as the spec */
        static struct lx_stack st;
        struct lx_facts f = {.d_head = 8, .train_len = 48, .n_heads = 2, .length = 48,
                             .caps = LX_CAP_LOGITS | LX_CAP_ROTARY | LX_CAP_MODEL};
        PROMISE(lx_doc_load_text(&doc, "rope", "stack", &sub) == LX_OK && lx_stack_parse(&st, doc.root, &sub) == LX_OK &&
                lx_stack_compile(&st, &f, &spec, &sub) == LX_OK, "the fuzz model's stack: %s", sub.msg);
        lx_lm_local(&lm, &m, &spec);
        ready = 1;
    }
    if (n < 1)
        return LX_OK;
    static const char *paths[] = {"/v1/completions", "/tokenize", "/detokenize", "/v1/models", "/tokenizer_info",
                                  "/health", "/nowhere"};
    int route = data[0] % 7;
    struct lx_serve sv = {.lm = &lm, .tok = &lx_byte_tokenizer, .name = "fuzz", .lim = {LX_VOCAB, 48},
                          .length = 48, .info = "{}"};
    struct lx_buf out = {0};
    /* the body as the parsers alone see it */
    struct lx_oai_completion r;
    struct lx_oai_err e = {0};
    if (lx_oai_completion_parse(&r, (const char *)data + 1, n - 1, &sv.lim, &e) == LX_OK) {
        for (int i = 0; i < r.n_prompts; i++)
            PROMISE(!r.prompt[i].ids || (r.prompt[i].n + r.max_tokens <= 48), "an accepted prompt is too long");
        lx_oai_completion_release(&r);
    } else {
        PROMISE(e.status >= 400 && e.status < 500 && e.msg[0], "a refusal without a status or message");
    }
    struct lx_buf events = {0};
    struct lx_httpd_stream st = {.put = collect, .arg = &events};
    int kind = (data[0] >> 3) & 7;  /* the body's declared type: mostly none, at times JSON's or another */
    const char *type = kind == 7 ? "text/plain" : kind == 6 ? "application/json; charset=utf-8" : NULL;
    int status = lx_serve_handle(&sv, data[0] & 0x80 ? "GET" : "POST", paths[route], type, (const char *)data + 1,
                                 n - 1, &out, &st);
    PROMISE(status == 200 || status == 400 || status == 404 || status == 405 || status == 415 || status == 500,
            "status %d", status);
    struct lx_json *doc;
    struct lx_error sub;
    if (events.len) {   /* streamed: events of JSON, [DONE] last */
        PROMISE(status == 200 && !out.len, "a streamed answer with status %d or a body too", status);
        check_events(&events);
        lx_buf_free(&events);
        lx_buf_free(&out);
        return LX_OK;
    }
    PROMISE(lx_json_parse(&doc, out.s ? out.s : "", out.len, "answer", &sub) == LX_OK, "the answer is not JSON: %s",
            sub.msg);
    PROMISE(status == 200 || lx_json_member(lx_json_member(lx_json_root(doc), "error"), "message"),
            "an error answer without error.message");
    lx_json_free(doc);
    lx_buf_free(&out);
    (void)err;
    return LX_OK;
}

int lx_fuzz_feed_ruler(const uint8_t *data, size_t n, struct lx_error *err)
{
    static const lx_peer_maker makers[] = {lx_peer_ruler_qa_squad, lx_peer_ruler_qa_hotpotqa, lx_peer_ruler_cwe,
                                           lx_peer_ruler_niah_multikey_1};
    static const char *const names[] = {"ruler.json", "ruler.json", "ruler.txt", "ruler.json"};
    char path[4096 + 64];
    if (n < 1)
        return LX_OK;
    int which = data[0] % 4, rc = scratch_write(names[which], data + 1, n - 1, path, err);
    for (long sample = 0; rc == LX_OK && sample < 2; sample++) {
        struct lx_peer_case c = {.peer_length = -1};
        long length = which == 2 ? 3000 : 1500, budget = which == 2 ? 120 : which < 2 ? 32 : 128;
        rc = makers[which](path, length, 0x5eedULL, sample, NULL, &c, err);
        if (rc == LX_OK) {
            PROMISE(c.n_golds >= 1, "a case without a gold");
            PROMISE((long)c.prompt.len + budget <= length, "a prompt of %zu bytes past the length", c.prompt.len);
        }
        lx_buf_free(&c.prompt), lx_buf_free(&c.golds);
    }
    return rc;
}
