/*
** tests/test_gguf_tok.c - tokenizers into and out of GGUF files
** (harness/engine/tokenizers/tok_gguf.c, tok_hf_gguf.c, gguf_vocab.c;
** docs/tokenizers.md#gguf), against llama.cpp's own llama-tokenize: for lenx's
** byte tokenizer, stories260K's llama2.c tok512.bin and the Llama-2, Llama-3
** and Qwen3 tokenizer.json files, lx_tokenizer_write_gguf writes a
** vocabulary-only GGUF, lx_tokenizer_open reads it back, and its ids on
** tests/ref/gguf/text.txt and edge.txt are llama-tokenize's on the same file
** (tests/ref/gguf/make_tok.sh: tok_llamacpp.tsv, tok_edge.ids). The original
** tokenizer gives them too, but where llama.cpp reads a text otherwise (said
** at known_differences). Files the writer cannot express and GGUF
** vocabularies the reader cannot take are refused naming the file and key.
*/
#define _POSIX_C_SOURCE 200809L
#include "tests/shell.h"
#include "tests/tok_open.h"

#include "harness/core/gguf.h"
#include "harness/core/hash.h"
#include "harness/core/json.h"
#include "harness/engine/tokenizers/tokenizer.h"

static void setup(void)
{
    shell_setup("gguf-tok");
    (void)sql_long;     /* shell.h's; this suite reads no store */
}

/* The tokenizer at the checkout's rel, or skip saying what is missing; "bytes": the byte tokenizer. */
static struct lx_tokenizer *open_or_skip(const char *rel, const char *how)
{
    if (strcmp(rel, "bytes") == 0)
        return lx_tokenizer_bytes_new();
    char path[4096];
    tok_path(path, sizeof path, "%s", rel);
    return tok_open_or_skip(path, how);
}

static char *read_text(const char *rel, long *n)
{
    char path[4096];
    unsigned char *b = NULL;
    struct lx_error err = {{0}};
    tok_path(path, sizeof path, "%s", rel);
    cr_assert_eq(lx_read_file(path, &b, n, 0, &err), LX_OK, "%s", err.msg);
    return (char *)b;
}

/* t's ids of tests/ref/gguf/<text> as llama-tokenize adds specials (BOS for lenx's byte models). */
static struct lx_ids encode(const struct lx_tokenizer *t, const char *text)
{
    char rel[256];
    long n;
    snprintf(rel, sizeof rel, "tests/ref/gguf/%s", text);
    char *s = read_text(rel, &n);
    struct lx_ids ids = {0};
    struct lx_error err = {{0}};
    unsigned flags = LX_ENC_SPECIALS | (t->is_byte ? LX_ENC_BOS : 0);
    cr_assert_eq(lx_tokenizer_encode(t, s, (size_t)n, flags, &ids, &err), LX_OK, "%s: %s", text, err.msg);
    free(s);
    return ids;
}

/* The field'th tab-separated field of the line of ref file rel that begins "a\t[b\t]" (malloc'd). */
static char *ref_field(const char *rel, const char *a, const char *b, int field)
{
    long n;
    char *all = read_text(rel, &n), *save = NULL, want[128];
    snprintf(want, sizeof want, b ? "%s\t%s\t" : "%s\t", a, b);
    char *out = NULL;
    for (char *line = strtok_r(all, "\n", &save); line && !out; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, want, strlen(want)) != 0)
            continue;
        for (int f = 0; f < field && line; f++)
            line = strchr(line, '\t') ? strchr(line, '\t') + 1 : NULL;
        out = line ? strndup(line, strcspn(line, "\t")) : NULL;
    }
    free(all);
    cr_assert_not_null(out, "%s has no line for %s %s", rel, a, b ? b : "");
    return out;
}

/* The ids of a space-separated list. */
static struct lx_ids parse_ids(const char *s)
{
    struct lx_ids out = {0};
    char *end;
    for (long v = strtol(s, &end, 10); end != s; v = strtol(s = end, &end, 10))
        lx_ids_push(&out, (int32_t)v);
    return out;
}

static void ids_sha(const struct lx_ids *ids, char out[65])
{
    lx_sha256_hex_bytes(ids->n ? (const void *)ids->id : "", sizeof(int32_t) * (size_t)ids->n, out);
}

/* ids are llama-tokenize's for name on text: count and hash; on edge.txt every id. */
static void expect_llamacpp(const char *name, const char *text, const struct lx_ids *ids, const char *who)
{
    char *count = ref_field("tests/ref/gguf/tok_llamacpp.tsv", name, text, 2);
    char *sha = ref_field("tests/ref/gguf/tok_llamacpp.tsv", name, text, 3), got[65];
    ids_sha(ids, got);
    cr_expect_eq(ids->n, atol(count), "%s, %s, %s: %ld ids, llama.cpp %s", name, text, who, ids->n, count);
    cr_expect_str_eq(got, sha, "%s, %s, %s: the ids differ from llama.cpp's", name, text, who);
    if (strcmp(text, "edge.txt") == 0) {
        char *list = ref_field("tests/ref/gguf/tok_edge.ids", name, NULL, 1);
        struct lx_ids want = parse_ids(list);
        for (long i = 0; i < ids->n && i < want.n; i++)
            if (want.id[i] != ids->id[i]) {
                cr_expect_eq(ids->id[i], want.id[i], "%s, %s, %s: id %ld", name, text, who, i);
                break;
            }
        lx_ids_free(&want);
        free(list);
    }
    free(count), free(sha);
}

/* Where lenx's reading of the original file and llama.cpp's of the GGUF file
** differ on edge.txt, and why; each at its index in llama.cpp's ids, whose
** n_cpp ids there the original gives as n_lenx others:
**   qwen3   "</s>" is an ordinary token of Qwen3's vocabulary, which llama.cpp
**           makes a control token by its text (src/llama-vocab.cpp: an
**           end-of-generation marker, "control-looking token") and matches in
**           text; the Hugging Face library reads it as text, " </" "s" ">"
**           (tests/ref/tok_qwen3_edge.json, and hf_reads_qwen3_eos_as_text
**           below), as lenx does. lenx's reading of the GGUF file does as
**           llama.cpp does.
**   tok512  llama2.c's run.c matches no special token in text, and reads
**           U+2581 as a character (byte tokens); llama.cpp's SentencePiece
**           matches </s>, <s>, <unk> (the next piece then gets its dummy space)
**           and reads U+2581 as the space it stands for. */
static const struct known {
    const char *name;
    long at, n_cpp;     /* llama.cpp's ids [at, at + n_cpp) ... */
    int32_t cpp[4];
    long n_lenx;        /* ... are these in lenx's reading of the original */
    int32_t lenx[8];
} known_differences[] = {
    {"qwen3", 261, 2, {220, 128247}, 3, {690, 82, 29}},
    {"tok512", 553, 2, {2, 410}, 4, {504, 492, 419, 505}},    /* " </s> then" */
    {"tok512", 558, 2, {1, 410}, 3, {504, 419, 505}},         /* "<s>," */
    {"tok512", 562, 2, {0, 410}, 4, {504, 379, 433, 505}},    /* " <unk>\n" */
    {"tok512", 599, 1, {410}, 3, {229, 153, 132}},            /* " \u2581 alone" */
    {"tok512", 606, 2, {410, 263}, 7, {229, 153, 132, 229, 153, 132, 424}},    /* "\u2581\u2581word" */
    {"tok512", 610, 1, {410}, 3, {229, 153, 132}},            /* "word\u2581" */
};

/* llama.cpp's edge.txt ids for name with the known differences put in (the original's ids). */
static struct lx_ids edge_as_original(const char *name)
{
    char *list = ref_field("tests/ref/gguf/tok_edge.ids", name, NULL, 1);
    struct lx_ids cpp = parse_ids(list), out = {0};
    free(list);
    long i = 0;
    for (size_t k = 0; k < sizeof known_differences / sizeof *known_differences; k++) {
        const struct known *d = &known_differences[k];
        if (strcmp(d->name, name) != 0)
            continue;
        while (i < d->at)
            lx_ids_push(&out, cpp.id[i++]);
        for (long j = 0; j < d->n_cpp; j++)
            cr_assert_eq(cpp.id[i + j], d->cpp[j], "%s: llama.cpp's id %ld is not the known %d", name, i + j,
                         d->cpp[j]);
        for (long j = 0; j < d->n_lenx; j++)
            lx_ids_push(&out, d->lenx[j]);
        i += d->n_cpp;
    }
    while (i < cpp.n)
        lx_ids_push(&out, cpp.id[i++]);
    lx_ids_free(&cpp);
    return out;
}

/* Write t as a vocabulary-only GGUF in the test's directory, read it back. */
static struct lx_tokenizer *via_gguf(const struct lx_tokenizer *t, const char *file)
{
    char path[512];
    struct lx_error err = {{0}};
    snprintf(path, sizeof path, "%s/%s", dir, file);
    cr_assert_eq(lx_tokenizer_write_gguf(t, path, &err), LX_OK, "%s", err.msg);
    struct lx_tokenizer *g = NULL;
    cr_assert_eq(lx_tokenizer_open(&g, path, &err), LX_OK, "%s", err.msg);
    return g;
}

/* The whole check for one tokenizer: the GGUF read back (and that written
** again from it) gives llama.cpp's ids; the original too, but for known_differences. */
static void as_llama_cpp(const char *name, const char *rel, const char *how)
{
    struct lx_tokenizer *t = open_or_skip(rel, how), *g = via_gguf(t, "a.gguf"), *g2 = via_gguf(g, "b.gguf");
    static const char *const texts[] = {"text.txt", "edge.txt"};
    for (int k = 0; k < 2; k++) {
        struct lx_ids a = encode(g, texts[k]), b = encode(g2, texts[k]), o = encode(t, texts[k]);
        expect_llamacpp(name, texts[k], &a, "the GGUF file read back");
        expect_llamacpp(name, texts[k], &b, "the GGUF file written from the GGUF file");
        if (k == 0) {
            expect_llamacpp(name, texts[k], &o, "the original");
        } else {
            struct lx_ids want = edge_as_original(name);
            cr_expect_eq(o.n, want.n, "%s, edge.txt, the original: %ld ids, %ld expected", name, o.n, want.n);
            for (long i = 0; i < o.n && i < want.n; i++)
                if (o.id[i] != want.id[i]) {
                    cr_expect_eq(o.id[i], want.id[i], "%s, edge.txt, the original: id %ld", name, i);
                    break;
                }
            lx_ids_free(&want);
        }
        lx_ids_free(&a), lx_ids_free(&b), lx_ids_free(&o);
    }
    cr_expect_eq(g->bos, t->bos, "%s: BOS", name);
    cr_expect_eq(g->eos, t->eos, "%s: EOS", name);
    cr_expect_eq(g->n_vocab, t->n_vocab, "%s: vocabulary", name);
    lx_tokenizer_free(g2), lx_tokenizer_free(g), lx_tokenizer_free(t);
}

#define FETCHED "make tokenizers fetches it"
#define STORIES "the shared stories260K test data"

Test(gguf_tok, bytes_as_llama_cpp, .init = setup, .fini = teardown)
{
    as_llama_cpp("bytes", "bytes", "");
}

Test(gguf_tok, tok512_as_llama_cpp, .init = setup, .fini = teardown)
{
    as_llama_cpp("tok512", "../shared/models/stories260K/tok512.bin", STORIES);
}

Test(gguf_tok, llama2_as_llama_cpp, .init = setup, .fini = teardown, .timeout = 60)
{
    as_llama_cpp("llama2", "build/tokenizers/llama2/models/tokenizer.json", FETCHED);
}

Test(gguf_tok, llama3_as_llama_cpp, .init = setup, .fini = teardown, .timeout = 60)
{
    as_llama_cpp("llama3", "build/tokenizers/llama3/models/tokenizer.json", FETCHED);
}

Test(gguf_tok, qwen3_as_llama_cpp, .init = setup, .fini = teardown, .timeout = 60)
{
    as_llama_cpp("qwen3", "build/tokenizers/qwen3/models/tokenizer.json", FETCHED);
}

/* The known difference on Qwen3 is the Hugging Face library's reading too: a
** literal "</s>" is text ([690, 82, 29] after a space), not a token. */
Test(gguf_tok, hf_reads_qwen3_eos_as_text)
{
    char path[4096];
    struct lx_json *doc = NULL;
    struct lx_error err = {{0}};
    tok_path(path, sizeof path, "tests/ref/tok_qwen3_edge.json");
    cr_assert_eq(lx_json_load(&doc, path, 0, &err), LX_OK, "%s", err.msg);
    const struct lx_jv *list = lx_json_root(doc), *found = NULL;
    for (long i = 0; i < lx_json_len(list) && !found; i++) {
        const char *s;
        const struct lx_jv *e = lx_json_at(list, i);
        if (lx_json_str(doc, lx_json_member(e, "text"), &s, NULL, &err) == LX_OK && strcmp(s, " <s> spaced </s> ") == 0)
            found = lx_json_member(e, "ids");
    }
    cr_assert_not_null(found);
    static const int64_t want[] = {366, 82, 29, 63828, 690, 82, 29, 220};
    cr_assert_eq(lx_json_len(found), 8);
    for (long i = 0; i < 8; i++) {
        int64_t v;
        cr_assert_eq(lx_json_int(doc, lx_json_at(found, i), &v, &err), LX_OK);
        cr_expect_eq(v, want[i], "id %ld", i);
    }
    lx_json_free(doc);
}

/* ---- refusals ---- */

/* A small 'gpt2' GGUF: tokens a, b, ab, <|x|> (control), merges, pre and token types as asked. */
static void small_gpt2(const char *file, const char *pre, const char *merge2, long n_types)
{
    static const char *const toks[] = {"a", "b", "ab", "<|x|>"};
    static const int32_t types[] = {1, 1, 1, 3};
    const char *merges[] = {"a b", merge2};
    struct lx_gguf_out o;
    struct lx_error err = {{0}};
    char path[512];
    lx_gguf_out_init(&o);
    lx_gguf_put_str(&o, "general.architecture", "llama");
    lx_gguf_put_str(&o, "tokenizer.ggml.model", "gpt2");
    lx_gguf_put_str(&o, "tokenizer.ggml.pre", pre);
    lx_gguf_put_strs(&o, "tokenizer.ggml.tokens", 4, toks, NULL);
    lx_gguf_put_arr(&o, "tokenizer.ggml.token_type", LX_GGUF_I32, (uint64_t)n_types, types);
    lx_gguf_put_strs(&o, "tokenizer.ggml.merges", merge2 ? 2 : 1, merges, NULL);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    cr_assert_eq(lx_gguf_out_write(&o, path, &err), LX_OK, "%s", err.msg);
    lx_gguf_out_free(&o);
}

/* Opening file fails naming it and saying each of says[]. */
static void refused(const char *file, const char *const *says, int n)
{
    char path[512];
    struct lx_tokenizer *t = NULL;
    struct lx_error err = {{0}};
    snprintf(path, sizeof path, "%s/%s", dir, file);
    cr_assert_eq(lx_tokenizer_open(&t, path, &err), LX_EINVAL, "%s: opened", file);
    cr_expect(strstr(err.msg, path), "'%s' does not name the file", err.msg);
    for (int i = 0; i < n; i++)
        cr_expect(strstr(err.msg, says[i]), "'%s' does not say '%s'", err.msg, says[i]);
}

Test(gguf_tok, bad_vocabularies_are_refused_by_key, .init = setup, .fini = teardown)
{
    small_gpt2("ok.gguf", "gpt-2", NULL, 4);
    struct lx_tokenizer *t = NULL;
    struct lx_error err = {{0}};
    char path[512];
    snprintf(path, sizeof path, "%s/ok.gguf", dir);
    cr_assert_eq(lx_tokenizer_open(&t, path, &err), LX_OK, "%s", err.msg);
    struct lx_ids ids = {0};
    cr_assert_eq(lx_tokenizer_encode(t, "ab<|x|>ba", 9, 0, &ids, &err), LX_OK, "%s", err.msg);
    cr_expect(ids.n == 4 && ids.id[0] == 2 && ids.id[1] == 3 && ids.id[2] == 1 && ids.id[3] == 0, "%ld ids", ids.n);
    lx_ids_free(&ids);
    lx_tokenizer_free(t);

    small_gpt2("pre.gguf", "mystery-pre", NULL, 4);
    refused("pre.gguf", (const char *const[]){"tokenizer.ggml.pre", "'mystery-pre'", "hint", "qwen2"}, 4);
    small_gpt2("merge.gguf", "gpt-2", "a zz", 4);
    refused("merge.gguf", (const char *const[]){"tokenizer.ggml.merges[1]", "\"a zz\"", "right part is not in "
                                                "tokenizer.ggml.tokens"}, 3);
    small_gpt2("merged.gguf", "gpt-2", "b a", 4);
    refused("merged.gguf", (const char *const[]){"tokenizer.ggml.merges[1]", "together are not"}, 2);
    small_gpt2("types.gguf", "gpt-2", NULL, 3);
    refused("types.gguf", (const char *const[]){"tokenizer.ggml.token_type", "3 entries", "4 of tokenizer.ggml.tokens"},
            3);
}

/* A tokenizer.json whose pre-tokenizer llama.cpp has no name for, or whose
** added token strips white space: lx_tokenizer_to_gguf says what and why. */
Test(gguf_tok, inexpressible_tokenizers_are_refused, .init = setup, .fini = teardown)
{
    static const char *const split = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, "
                                     "\"merges\": [\"a b\"]}, \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": "
                                     "{\"Regex\": \"\\\\w+|\\\\W\"}, \"behavior\": \"Isolated\"}, \"decoder\": "
                                     "{\"type\": \"ByteLevel\"}}";
    static const char *const strip = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, "
                                     "\"merges\": [\"a b\"]}, \"added_tokens\": [{\"id\": 3, \"content\": \"<m>\", "
                                     "\"special\": true, \"lstrip\": true}], \"pre_tokenizer\": {\"type\": "
                                     "\"ByteLevel\"}}";
    const char *files[] = {"split.json", "strip.json"}, *texts[] = {split, strip};
    const char *says[] = {"\"\\w+|\\W\" is none that lenx can name", "\"<m>\" (id 3) has lstrip"};
    for (int i = 0; i < 2; i++) {
        char path[512];
        struct lx_tokenizer *t = NULL;
        struct lx_error err = {{0}};
        struct lx_gguf_out o;
        write_file(files[i], texts[i]);
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        cr_assert_eq(lx_tokenizer_open(&t, path, &err), LX_OK, "%s", err.msg);
        lx_gguf_out_init(&o);
        cr_expect_eq(lx_tokenizer_to_gguf(t, &o, &err), LX_EINVAL, "%s: written", files[i]);
        cr_expect(strstr(err.msg, path) && strstr(err.msg, says[i]), "'%s' does not say '%s'", err.msg, says[i]);
        lx_gguf_out_free(&o);
        lx_tokenizer_free(t);
    }
}

/* `lenx tokenize --gguf OUT`: without --tokenizer, lenx's byte tokenizer,
** read back as bytes with BOS. */
Test(gguf_tok, the_command_writes_one, .init = setup, .fini = teardown)
{
    char out[4096];
    cr_assert_eq(sh(out, sizeof out, "$L tokenize --gguf b.gguf && printf 'h\\303\\251' > t.txt && "
                    "$L tokenize --tokenizer b.gguf --text t.txt && $L tokenize --tokenizer b.gguf --info"), 0, "%s", out);
    cr_expect(exists("b.gguf"));
    cr_expect(strstr(out, "[256, 104, 195, 169]\n") && strstr(out, "\"kind\": \"bytes\""), "%s", out);
    /* and written again from the file, the same bytes */
    cr_expect_eq(sh(out, sizeof out, "$L tokenize --tokenizer b.gguf --gguf c.gguf && cmp b.gguf c.gguf"), 0, "%s", out);
}

/* An OUT that is not a regular file is written in place: a named pipe stays a pipe and its reader gets
** the file (the old rename over it turned /dev/full into a regular file; not tried here, where the old
** code would do it again); a directory is refused before anything is written. */
Test(gguf_tok, a_pipe_or_device_is_written_in_place, .init = setup, .fini = teardown, .timeout = 30)
{
    char out[4096];
    cr_assert_eq(sh(out, sizeof out, "$L tokenize --gguf b.gguf && mkfifo p && { timeout 10 cat p > got & } && "
                    "$L tokenize --gguf p; rc=$?; wait; test -p p && echo still-a-pipe; exit $rc"), 0, "%s", out);
    cr_expect(strstr(out, "still-a-pipe"), "the pipe was replaced: %s", out);
    cr_expect_eq(sh(out, sizeof out, "cmp got b.gguf"), 0, "the reader got another file: %s", out);
    cr_expect_eq(sh(out, sizeof out, "mkdir d && $L tokenize --gguf d"), 3, "%s", out);
    cr_expect(strstr(out, "d: is a directory, not a file"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "test -z \"$(ls d)\" && ! ls | grep tmp"), 0, "a temporary is left: %s", out);
}
