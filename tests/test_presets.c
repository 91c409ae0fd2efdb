/*
** tests/test_presets.c - protocol presets on peers' own test cases
** (tasks/preset.h): `lenx show task … --protocol P --data F --instance K
** --text` prints the file's `prompt` byte for byte for every K (LongChat's
** lines and topics files in ../shared/peers, read there and never copied, and
** a file of tricky bytes made here); malformed files name their line; a
** longchat cell on stories260K stores, for every test case, the continuation a
** full-pass greedy reference generates from the same prompt tokens, scored by
** LongChat's rule. Which task rows a preset reads: test_preset_rows.c.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/kernels/numerics.h"
#include "harness/core/json.h"
#include "harness/core/result.h"
#include "harness/engine/formats/checkpoint.h"
#include "harness/engine/model/decoding.h"
#include "harness/engine/tokenizers/tokenizer.h"
#include "tasks/preset.h"
#include "tasks/protocols.h"
#include "tasks/scorers.h"
#include "tasks/task.h"
#include "tests/shell.h"
#include "tests/stack.h"
#include "tests/tokfile.h"

static char out[1 << 16];

static void setup(void)
{
    shell_setup("presets");
    (void)exists;
    cr_assert_not_null(getenv("LENX_ROOT"), "LENX_ROOT must name the checkout (make test sets it)");
}

static int have_peers(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/../shared/peers/longchat/300_lines.jsonl", getenv("LENX_ROOT"));
    FILE *f = fopen(path, "r");
    return f ? fclose(f), 1 : 0;
}

/* The whole file at path (malloc'd, *n bytes). */
static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    char *b = NULL;
    size_t cap = 0, k;
    *n = 0;
    do {
        b = realloc(b, cap += 1 << 16);
        k = fread(b + *n, 1, cap - *n, f);
        *n += k;
    } while (k > 0);
    fclose(f);
    return b;
}

/* What LongChat appends to a case's prompt on its base-model path
** (longeval/utils.py, the mosaicml/mpt-7b-storywriter branches): for lines
** f'Line <{test_case["random_idx"][0]}>: <REGISTER_CONTENT> is', for topics
** '\n ASSISTANT: The first topic is'; nothing under protocol longchat. */
static void peer_suffix(const char *task, const char *protocol, struct lx_json *doc, char *suf, size_t n)
{
    suf[0] = '\0';
    if (strcmp(protocol, "longchat_base") != 0)
        return;
    if (strcmp(task, "topic") == 0) {
        snprintf(suf, n, "\n ASSISTANT: The first topic is");
        return;
    }
    const struct lx_jv *idx = lx_json_at(lx_json_member(lx_json_root(doc), "random_idx"), 0);
    struct lx_error err;
    const char *s;
    size_t len;
    int64_t x;
    if (lx_json_type(idx) == LX_JSON_STRING) {
        cr_assert_eq(lx_json_str(doc, idx, &s, &len, &err), LX_OK);
        snprintf(suf, n, "Line <%.*s>: <REGISTER_CONTENT> is", (int)len, s);
    } else {
        cr_assert_eq(lx_json_int(doc, idx, &x, &err), LX_OK, "%s", err.msg);
        snprintf(suf, n, "Line <%lld>: <REGISTER_CONTENT> is", (long long)x);
    }
}

/* For every line of the JSON Lines file at path: `show task TASK --text` of
** that instance under the protocol equals the line's "prompt" byte for byte,
** followed by what the protocol appends (peer_suffix). Returns the cases. */
static long expect_prompts_of(const char *task, const char *protocol, const char *path)
{
    size_t n;
    char *text = slurp(path, &n), *p = text, *end = text + n;
    long k = 0;
    for (; p < end; k++) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        struct lx_json *doc;
        struct lx_error err;
        cr_assert_eq(lx_json_parse(&doc, p, len, path, &err), LX_OK, "%s", err.msg);
        const char *want;
        size_t n_want;
        char suf[256];
        cr_assert_eq(lx_json_str(doc, lx_json_member(lx_json_root(doc), "prompt"), &want, &n_want, &err), LX_OK);
        peer_suffix(task, protocol, doc, suf, sizeof suf);
        cr_assert_eq(sh(out, sizeof out, "$L show task %s --protocol %s --data '%s' --instance %ld --text > "
                        "got.txt", task, protocol, path, k), 0, "%s", out);
        size_t n_got, n_suf = strlen(suf);
        char got_path[256];
        snprintf(got_path, sizeof got_path, "%s/got.txt", dir);
        char *got = slurp(got_path, &n_got);
        cr_expect(n_got == n_want + n_suf && memcmp(got, want, n_want) == 0 && memcmp(got + n_want, suf, n_suf) == 0,
                  "%s %s instance %ld: %zu bytes printed, the file's prompt and the suffix have %zu", task, protocol,
                  k, n_got, n_want + n_suf);
        free(got);
        lx_json_free(doc);
        p += len + 1;
    }
    free(text);
    return k;
}

static long expect_prompts(const char *task, const char *path)
{
    return expect_prompts_of(task, "longchat", path);
}

Test(presets, longchat_lines_and_topics_print_the_files_prompts, .init = setup, .fini = teardown, .timeout = 120)
{
    if (!have_peers())
        cr_skip_test("../shared/peers is not beside the checkout");
    char path[4096];
    snprintf(path, sizeof path, "%s/../shared/peers/longchat/300_lines.jsonl", getenv("LENX_ROOT"));
    cr_expect_eq(expect_prompts("line", path), 50);
    snprintf(path, sizeof path, "%s/../shared/peers/longchat/1_topics.jsonl", getenv("LENX_ROOT"));
    cr_expect_eq(expect_prompts("topic", path), 50);
    cr_expect_eq(sh(out, sizeof out, "$L show task line --protocol longchat --data '%s' --instance 50 --text", path),
                 2, "a topics file has no expected_number; and there is no instance 50: %s", out);
}

/* Another file of the same format: escapes, a 0 byte, CR LF, UTF-8, trailing spaces. */
Test(presets, tricky_bytes_pass_through, .init = setup, .fini = teardown)
{
    write_file("t.jsonl",
               "{\"expected_number\": 7, \"prompt\": \"a\\u0000b\\r\\n\\u00e9\\u4e2d\\t \\\"q\\\" \\\\ end  \"}\n"
               "{\"expected_number\": 12, \"prompt\": \"\", \"token_size\": 3}\n"
               "{\"expected_number\": 3, \"prompt\": \"line x: REGISTER_CONTENT is <3>\\n\\ud83d\\ude00\"}\n");
    char path[256];
    snprintf(path, sizeof path, "%s/t.jsonl", dir);
    cr_expect_eq(expect_prompts("line", path), 3);
    cr_assert_eq(sh(out, sizeof out, "$L show task line --protocol longchat --data t.jsonl --instance 2"), 0, "%s", out);
    cr_expect(strstr(out, "gold \"3\"") != NULL, "%s", out);
}

Test(presets, malformed_data_names_the_line, .init = setup, .fini = teardown)
{
    write_file("bad.jsonl", "{\"expected_number\": 7, \"prompt\": \"x\"}\n{\"prompt\": \"y\"}\n");
    cr_expect_eq(sh(out, sizeof out, "$L show task line --protocol longchat --data bad.jsonl --instance 0"), 2, "%s", out);
    cr_expect(strstr(out, "bad.jsonl:2: ") && strstr(out, "expected_number"), "%s", out);
    write_file("bad2.jsonl", "{\"topics\": [], \"prompt\": \"y\"}\n");
    cr_expect_eq(sh(out, sizeof out, "$L show task topic --protocol longchat --data bad2.jsonl --text"), 2, "%s", out);
    cr_expect(strstr(out, "bad2.jsonl:1: ") && strstr(out, "topics"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task line --protocol longchat --data missing.jsonl --text"), 3, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task line --protocol longchat --text"), 2, "no data: %s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task line --protocol lonchat --data bad.jsonl --text"), 2, "%s", out);
    cr_expect(strstr(out, "did you mean 'longchat'"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task line data=bad.jsonl --length 400"), 2, "data without a preset: %s",
                 out);
}

/* stories260K, its tok512 and its stack compiled at length 512. */
struct stories {
    struct lx_model m;
    struct lx_ckpt_info info;
    struct lx_tokenizer *tk;
    struct tstack s;
};

static void load_stories(struct stories *st)
{
    struct lx_error err = {""};
    char path[4096];
    memset(st, 0, sizeof *st);
    snprintf(path, sizeof path, "%s/../shared/models/stories260K/stories260K.bin", getenv("LENX_ROOT"));
    cr_assert_eq(lx_model_load(&st->m, path, &st->info, &err), LX_OK, "%s", err.msg);
    snprintf(path, sizeof path, "%s/../shared/models/stories260K/tok512.bin", getenv("LENX_ROOT"));
    cr_assert_eq(lx_tokenizer_open(&st->tk, path, &err), LX_OK, "%s", err.msg);
    struct lx_facts fa = tfacts((int)st->m.arch.d_head, 512, (int)st->m.arch.heads, 512);
    tstack_make(&st->s, st->info.stack, &fa);
}

static void free_stories(struct stories *st)
{
    tstack_free(&st->s);
    lx_tokenizer_free(st->tk);
    lx_ckpt_info_release(&st->info);
    lx_model_release(&st->m);
}

/* A run of protocol longchat on stories260K: every stored output is the
** continuation lx_generate's full-pass reference greedy-decodes from [BOS] +
** the prompt read as `lenx generate` reads it (100 tokens, cut at the first
** special token), its score LongChat's last-integer rule, and prompt_tokens
** the measured mean. Both sides in portable numerics: the run decodes through
** the KV cache and the reference by full passes, products of other shapes
** that in fast numerics could part on a near tie on some kernel set. */
Test(presets, longchat_cell_generates_apart_from_the_gold, .init = setup, .fini = teardown, .timeout = 300)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    lx_numerics_set(LX_NUMERICS_PORTABLE);
    static const char *const prompts[] = {"Once upon a time, there was a", "Tom had 3 cats. One day", "Lily"};
    static const char *const golds[] = {"2", "3", "4"};
    char data[1024] = "";
    for (int i = 0; i < 3; i++)
        snprintf(data + strlen(data), sizeof data - strlen(data), "{\"expected_number\": %s, \"prompt\": \"%s\"}\n",
                 golds[i], prompts[i]);
    write_file("cases.jsonl", data);
    write_file("s.yaml", "name: lc\nseed: 1\nmodels:\n  s:\n    checkpoint: STORIES\nmethods:\n"
                         "  - [{rope: {layout: interleaved}}]\ntasks:\n"
                         "  - line: {protocol: longchat, data: DATA}\nlengths: [512]\n");
    cr_assert_eq(sh(out, sizeof out, "sed -i \"s|STORIES|$R/../shared/models/stories260K/stories260K.bin|; "
                    "s|DATA|$D/cases.jsonl|\" s.yaml && $L run s.yaml --db r.db --quiet --no-table --keep-prompts --portable"), 0,
                 "%s", out);
    struct lx_error err = {""};
    struct stories st;
    load_stories(&st);
    struct lx_tokenizer *tk = st.tk;
    const struct lx_scorer *last = lx_scorer_find("last_int");
    double tokens = 0.0;
    for (int i = 0; i < 3; i++) {
        struct lx_ids v = {0};
        lx_ids_push(&v, lx_tok_begin(tk));
        cr_assert_eq(lx_tokenizer_encode(tk, prompts[i], strlen(prompts[i]), 0, &v, &err), LX_OK, "%s", err.msg);
        int ids[256], gen[100];
        int32_t gen32[100];
        for (long t = 0; t < v.n; t++)
            ids[t] = v.id[t];
        tokens += (double)v.n;
        cr_assert_eq(lx_generate(&st.m, &st.s.spec, ids, v.n, 100, gen, LX_DECODE_FULL, &err), LX_OK, "%s", err.msg);
        for (int t = 0; t < 100; t++)
            gen32[t] = gen[t];
        char text[4096];
        int stop;
        long n = lx_tok_decode(tk, gen32, 100, text, &stop);
        char got[8192], q[160];
        snprintf(q, sizeof q, "select hex(text) || ' ' || score from outputs where sample = %d", i);
        sql_text(got, sizeof got, "r.db", q);
        char want[8192] = "";
        for (long b = 0; b < n; b++)
            snprintf(want + 2 * b, 3, "%02X", (unsigned char)text[b]);
        const char *gs[1] = {golds[i]};
        size_t gl[1] = {strlen(golds[i])};
        struct lx_golds g = {.n = 1, .s = gs, .len = gl};
        int null;
        double sc = last->score(text, (size_t)n, &g, &null);
        snprintf(want + 2 * n, 32, " %d", sc == 1.0 ? 1 : null ? -1 : 0);
        cr_expect_str_eq(got, want, "case %d: the stored output and score differ from the reference", i);
        snprintf(q, sizeof q, "select prompt from outputs where sample = %d", i);
        sql_text(got, sizeof got, "r.db", q);
        cr_expect_str_eq(got, prompts[i], "case %d: --keep-prompts stores the file's prompt", i);
        lx_ids_free(&v);
    }
    cr_expect_eq(sql_long("r.db", "select count(*) from outputs"), 3);
    char q[256], got[64];
    snprintf(q, sizeof q, "select value from metrics where name = 'prompt_tokens'");
    sql_text(got, sizeof got, "r.db", q);
    cr_expect_float_eq(strtod(got, NULL), tokens / 3.0, 1e-12, "%s", got);
    free_stories(&st);
}

/* lost in the middle's qa.prompt filled as its get_qa_prompt fills it, from a
** plain file and from the same file gzipped; expected text written by hand. */
Test(presets, litm_prompt_plain_and_gzip, .init = setup, .fini = teardown)
{
    write_file("q.jsonl", "{\"question\": \"who wrote {it}?\", \"answers\": [\"A. Author\", \"Author\"], \"ctxs\": ["
                          "{\"title\": \"T1\", \"text\": \"x  y\", \"isgold\": false}, "
                          "{\"title\": \"Gold\", \"text\": \"by A. Author.\\n\", \"isgold\": true}]}\n");
    static const char want[] =
        "Write a high-quality answer for the given question using only the provided search results (some of which "
        "might be irrelevant).\n\nDocument [1](Title: T1) x  y\nDocument [2](Title: Gold) by A. Author.\n\n\n"
        "Question: who wrote {it}?\nAnswer:";
    for (int gz = 0; gz < 2; gz++) {
        cr_assert_eq(sh(out, sizeof out, "%s$L show task mdqa --protocol litm --data q.jsonl%s --instance 0 --text",
                        gz ? "gzip -kf q.jsonl && " : "", gz ? ".gz" : ""), 0, "%s", out);
        cr_expect_str_eq(out, want, "%s", gz ? "from .gz" : "plain");
    }
    cr_assert_eq(sh(out, sizeof out, "$L show task mdqa --protocol litm --data q.jsonl.gz"), 0, "%s", out);
    cr_expect(strstr(out, "gold \"A. Author\"") != NULL, "%s", out);
    cr_assert_eq(sh(NULL, 0, "head -c 40 q.jsonl.gz > cut.jsonl.gz"), 0);
    cr_expect_eq(sh(out, sizeof out, "$L show task mdqa --protocol litm --data cut.jsonl.gz --text"), 3, "%s", out);
    cr_expect(strstr(out, "cut.jsonl.gz") != NULL, "%s", out);
    write_file("noans.jsonl", "{\"question\": \"q\", \"answers\": [], \"ctxs\": [{\"title\": \"t\", \"text\": \"x\"}]}\n");
    cr_expect_eq(sh(out, sizeof out, "$L show task mdqa --protocol litm --data noans.jsonl --text"), 2, "%s", out);
    cr_expect(strstr(out, "noans.jsonl:1: ") != NULL, "%s", out);
    /* Another peer's file (LongChat's lines: no question) is named, not read past the missing member. */
    write_file("lines.jsonl", "{\"expected_number\": 7, \"prompt\": \"x\"}\n");
    cr_expect_eq(sh(out, sizeof out, "$L show task mdqa --protocol litm --data lines.jsonl --text"), 2, "%s", out);
    cr_expect(strstr(out, "lines.jsonl:1: ") && strstr(out, "question"), "%s", out);
}

/* The oracle file lost in the middle ships: 2,655 questions, read gzipped. */
Test(presets, litm_oracle_file, .init = setup, .fini = teardown)
{
    if (!have_peers())
        cr_skip_test("../shared/peers is not beside the checkout");
    const char *f = "$R/../shared/peers/lost-in-the-middle/nq-open-oracle.jsonl.gz";
    cr_assert_eq(sh(out, sizeof out, "$L show task mdqa --protocol litm --data %s --instance 0 --text", f), 0, "%s", out);
    static const char head[] = "Write a high-quality answer for the given question using only the provided search "
                               "results (some of which might be irrelevant).\n\nDocument [1](Title: List of Nobel "
                               "laureates in Physics) The first Nobel Prize in Physics was awarded in 1901 to Wilhelm "
                               "Conrad R\xc3\xb6ntgen, of Germany";
    static const char tail[] = "\n\nQuestion: who got the first nobel prize in physics\nAnswer:";
    cr_expect(strncmp(out, head, strlen(head)) == 0, "%s", out);
    cr_expect(strlen(out) > strlen(tail) && strcmp(out + strlen(out) - strlen(tail), tail) == 0, "%s", out);
    cr_expect(strstr(out, "Document [2]") == NULL, "the oracle setting has one document: %s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task mdqa --protocol litm --data %s --instance 2654 --text", f), 0);
    cr_expect_eq(sh(out, sizeof out, "$L show task mdqa --protocol litm --data %s --instance 2655 --text", f), 2);
    cr_expect(strstr(out, "0 to 2654") != NULL, "%s", out);
}

/* The numeric gold `show task` prints for a preset's instance k at length L. */
static long shown_gold(const char *task, const char *protocol, long L, int k)
{
    cr_assert_eq(sh(out, sizeof out, "$L show task %s --protocol %s --length %ld --instance %d | "
                    "sed -n 's/.*gold \"\\([0-9]*\\)\"/\\1/p'", task, protocol, L, k), 0, "%s", out);
    return strtol(out, NULL, 10);
}

/* landmark's generate_prompt, checked piece by piece on the printed text:
** "\n".join([description, filler[:p], info line, filler[:n - p], question])
** with filler = " ".join([garbage] * 2000), 0 <= p <= n, key in [1, 50000]. */
Test(presets, landmark_prompt_is_the_peers_rule, .init = setup, .fini = teardown, .timeout = 60)
{
    static const char desc[] = "There is an important info hidden inside a lot of irrelevant text. Find it and "
                               "memorize them. I will quiz you about the important information there.";
    static const char garbage[] = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back "
                                  "again.";
    static const char question[] = "What is the pass key? The pass key is";
    static char filler[8000];
    for (size_t i = 0; i + 1 < sizeof filler; i++)
        filler[i] = i % sizeof garbage == sizeof garbage - 1 ? ' ' : garbage[i % sizeof garbage];
    static const long lengths[] = {1, 100, 1000, 7000};
    long split_sum = 0;
    for (int li = 0; li < 4; li++)
        for (int k = 0; k < 5; k++) {
            long n = lengths[li];
            long key = shown_gold("passkey", "landmark", n, k);
            cr_expect(key >= 1 && key <= 50000, "key %ld", key);
            char info[128];
            snprintf(info, sizeof info, "\nThe pass key is %ld. Remember it. %ld is the pass key.\n", key, key);
            cr_assert_eq(sh(out, sizeof out, "$L show task passkey --protocol landmark --length %ld --instance %d "
                            "--text", n, k), 0, "%s", out);
            size_t len = strlen(out), fixed = strlen(desc) + strlen(info) + strlen(question) + 2;
            cr_assert_eq(len, fixed + (size_t)n, "n %ld case %d: %zu bytes, the rule gives %zu", n, k, len,
                         fixed + (size_t)n);
            char *at = strstr(out, info);
            cr_assert_not_null(at, "%s", out);
            long p = (long)(at - out) - (long)strlen(desc) - 1;
            cr_expect(p >= 0 && p <= n, "prefix %ld", p);
            cr_expect(strncmp(out, desc, strlen(desc)) == 0 && out[strlen(desc)] == '\n');
            cr_expect(memcmp(out + strlen(desc) + 1, filler, (size_t)p) == 0, "n %ld case %d: prefix", n, k);
            cr_expect(memcmp(at + strlen(info), filler, (size_t)(n - p)) == 0, "n %ld case %d: suffix", n, k);
            cr_expect_str_eq(at + strlen(info) + (n - p), "\nWhat is the pass key? The pass key is");
            split_sum += p;
        }
    cr_expect_gt(split_sum, 0, "the needle is not always at the start");
}

/* Sweep `name`: the task row `task` (HAY: tests/haystack) on stories260K with interleaved RoPE at each of
** `lengths` (a YAML list), stored in r.db. */
static void run_stories(const char *name, const char *task, const char *lengths)
{
    char yaml[512];
    snprintf(yaml, sizeof yaml, "name: %s\nseed: 1\nmodels:\n  s:\n    checkpoint: STORIES\nmethods:\n"
             "  - [{rope: {layout: interleaved}}]\ntasks:\n  - %s\nlengths: %s\n", name, task, lengths);
    write_file("s.yaml", yaml);
    cr_assert_eq(sh(out, sizeof out, "sed -i -e \"s|STORIES|$R/../shared/models/stories260K/stories260K.bin|\" "
                    "-e \"s|HAY|$R/tests/haystack|\" s.yaml && $L run s.yaml --db r.db --quiet --no-table"), 0, "%s",
                 out);
}

/* One metric of the cell at length L in r.db. */
static double cell_metric(long L, const char *name)
{
    char q[256], got[64];
    snprintf(q, sizeof q, "select m.value from metrics m join runs r on r.id = m.run_id where r.length = %ld and "
             "m.name = '%s'", L, name);
    sql_text(got, sizeof got, "r.db", q);
    cr_assert(got[0], "no %s at length %ld", name, L);
    return strtod(got, NULL);
}

/* configs/peers/landmark-stories260K.yaml's protocol at two short lengths on
** stories260K: 50 cases a cell, 10 new tokens, and prompt_tokens = the mean
** token count of the printed prompts as the peer counts them
** (len(tokenizer.encode(prompt)), BOS included: `lenx tokenize`). */
/* configs/peers/landmark-stories260K.yaml at `lengths`, run into r.db with `flags`. */
static void run_landmark(const char *lengths, const char *flags)
{
    cr_assert_eq(sh(out, sizeof out, "sed 's|^lengths:.*|lengths: [%s]|; s|checkpoint: .*|checkpoint: '\"$R\"'"
                    "/../shared/models/stories260K/stories260K.bin|' $R/configs/peers/landmark-stories260K.yaml "
                    "> s.yaml && $L run s.yaml --db r.db --quiet --no-table %s", lengths, flags), 0, "%s", out);
}

Test(presets, landmark_sweep_counts_tokens_as_the_peer, .init = setup, .fini = teardown, .timeout = 600)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    run_landmark("100, 300", "");
    static const long lengths[] = {100, 300};
    for (int i = 0; i < 2; i++) {
        char q[256];
        cr_assert_eq(sh(out, sizeof out, "for k in $(seq 0 49); do $L show task passkey --protocol landmark --length "
                        "%ld --instance $k --text > p.txt && $L tokenize --tokenizer "
                        "$R/../shared/models/stories260K/tok512.bin --text p.txt; done | "
                        "awk -F, '{n += NF} END {printf \"%%.10g\", n / NR}'", lengths[i]), 0, "%s", out);
        double want = strtod(out, NULL);
        double stored = cell_metric(lengths[i], "prompt_tokens");
        cr_expect_float_eq(stored, want, 1e-9, "length %ld: stored %.10g, the peer's count %g", lengths[i], stored,
                           want);
        snprintf(q, sizeof q, "select count(*) from outputs o join runs r on r.id = o.run_id where r.length = %ld",
                 lengths[i]);
        cr_expect_eq(sql_long("r.db", q), 50);
    }
    cr_expect_eq(sql_long("r.db", "select count(*) from metrics where name = 'max_new_tokens' and value = 10"), 2);
}

/* --keep-prompts under a preset stores each test case's own prompt: landmark
** makes 50 cases, more than the task's default 20 samples, and case k's
** prompt holds its gold key (cases 20 to 49 once stored case k mod 20's). */
Test(presets, kept_prompts_are_each_cases_own, .init = setup, .fini = teardown, .timeout = 300)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    run_landmark("100", "--keep-prompts");
    cr_expect_eq(sql_long("r.db", "select count(*) from outputs where prompt is not null"), 50);
    cr_expect_eq(sql_long("r.db", "select count(*) from outputs where instr(prompt, 'The pass key is ' || gold || "
                          "'. Remember it. ' || gold || ' is the pass key.') = 0"), 0);
    cr_assert_eq(sh(out, sizeof out, "$L show task passkey --protocol landmark --length 100 --instance 37 --text "
                    "> p.txt"), 0, "%s", out);
    cr_expect_eq(sql_long("r.db", "select count(*) from outputs where sample = 37 and prompt = readfile('p.txt')"), 1,
                 "case 37: the stored prompt is not `show task`'s");
}

/* The stop rules: EOS has ended the decode; a newline and a stop string cut
** the text before them, whichever comes first. */
Test(presets, stop_rules_cut_the_output)
{
    struct lx_protocol p = {.stop_newline = 0};
    cr_expect_eq(lx_preset_cut(&p, "ab\ncd", 5), 5);
    p.stop_newline = 1;
    cr_expect_eq(lx_preset_cut(&p, "ab\ncd", 5), 2);
    cr_expect_eq(lx_preset_cut(&p, "\nab", 3), 0);
    p.stop_text = "</s>";
    cr_expect_eq(lx_preset_cut(&p, "42</s>\n", 7), 2);
    cr_expect_eq(lx_preset_cut(&p, "4\n2</s>", 7), 1);
    p.stop_newline = 0;
    cr_expect_eq(lx_preset_cut(&p, "4\n2</s", 6), 6, "a stop string cut short is no stop");
    cr_expect_eq(lx_preset_cut(&p, "a\0b</s>", 7), 3, "a 0 byte is a byte");
}

/* --text for today's instances: the prompt section of `show task` without
** its <bos>, byte for byte (the answer is not fed as a prompt). */
Test(presets, text_of_a_lenx_instance, .init = setup, .fini = teardown)
{
    char full[1 << 15];
    cr_assert_eq(sh(full, sizeof full, "$L show task passkey --length 300 --instance 2"), 0, "%s", full);
    cr_assert_eq(sh(out, sizeof out, "$L show task passkey --length 300 --instance 2 --text"), 0, "%s", out);
    const char *a = strstr(full, "--- prompt\n<bos>"), *b = strstr(full, "\n--- answer\n");
    cr_assert(a && b, "%s", full);
    a += strlen("--- prompt\n<bos>");
    cr_expect_eq(strlen(out), (size_t)(b - a), "%s", out);
    cr_expect(strncmp(out, a, (size_t)(b - a)) == 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task passkey --text"), 2, "today's instances need --length: %s", out);
}

/* RULER's niah_single_1, in byte tokens (show): the template and its answer
** prefix around a noise haystack, one needle line holding the gold (never
** the last line), and as many haystack lines as keep text + 128 tokens to
** generate within the length: one line more would not fit. */
Test(presets, ruler_prompt_fills_the_length_less_the_budget, .init = setup, .fini = teardown, .timeout = 60)
{
    static const char head[] = "A special magic number is hidden within the following text. Make sure to memorize "
                               "it. I will quiz you about the number afterwards.\n";
    static const char line[] = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back "
                               "again.";
    static const long lengths[] = {700, 1000, 4096};
    for (int li = 0; li < 3; li++)
        for (int k = 0; k < 4; k++) {
            long L = lengths[li];
            long value = shown_gold("needle", "ruler", L, k);
            cr_expect(value >= 1000000 && value <= 9999999, "%ld", value);
            cr_assert_eq(sh(out, sizeof out, "$L show task needle --protocol ruler --length %ld --instance %d --text",
                            L, k), 0, "%s", out);
            size_t n = strlen(out);
            cr_expect(n + 128 <= (size_t)L && n + strlen(line) + 1 + 128 > (size_t)L, "L %ld: %zu bytes", L, n);
            cr_expect(strncmp(out, head, strlen(head)) == 0, "%s", out);
            char *q = strstr(out, "\nWhat is the special magic number for ");
            cr_assert_not_null(q, "%s", out);
            char key[64];
            cr_assert_eq(sscanf(q, "\nWhat is the special magic number for %63s", key), 1);
            char tail[512], needle[160];
            snprintf(tail, sizeof tail, "\nWhat is the special magic number for %s mentioned in the provided text? The "
                     "special magic number for %s mentioned in the provided text is", key, key);
            cr_expect_str_eq(q, tail);
            snprintf(needle, sizeof needle, "One of the special magic numbers for %s is: %ld.", key, value);
            long needles = 0, lines = 0;
            for (char *p = out + strlen(head); p < q;) {
                char *e = strchr(p, '\n');
                size_t len = (size_t)(e - p);
                int is_needle = len == strlen(needle) && strncmp(p, needle, len) == 0;
                needles += is_needle;
                lines += !is_needle;
                cr_expect(is_needle || (len == strlen(line) && strncmp(p, line, len) == 0), "%.*s", (int)len, p);
                cr_expect(!is_needle || e + 1 < q, "the needle is not the last line");
                p = e + 1;
            }
            cr_expect_eq(needles, 1);
            cr_expect_geq(lines, 1);
        }
}

/* The same rule in the model's tokens (stories260K), from the stored counts:
** the longest prompt's text (BOS not counted, as RULER's text_to_tokens) +
** 128 fits 1024, and the shortest would not fit another haystack line. */
Test(presets, ruler_cell_counts_in_model_tokens, .init = setup, .fini = teardown, .timeout = 300)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    run_stories("r", "needle: {protocol: ruler, samples: 10}", "[1024]");
    /* a haystack line after a newline, in tok512's tokens (lenx tokenize adds BOS) */
    cr_assert_eq(sh(out, sizeof out, "printf '\\nThe grass is green. The sky is blue. The sun is yellow. Here we go. "
                    "There and back again.' > l.txt && $L tokenize --tokenizer "
                    "$R/../shared/models/stories260K/tok512.bin --text l.txt | awk -F, '{print NF - 1}'"), 0, "%s", out);
    long line = strtol(out, NULL, 10);
    cr_expect(line > 40 && line < 70, "%ld tokens a line", line);
    long most = sql_long("r.db", "select cast(value as int) from metrics where name = 'prompt_tokens_max'"),
         least = sql_long("r.db", "select cast(value as int) from metrics where name = 'prompt_tokens_min'");
    cr_expect_leq(most - 1 + 128, 1024, "the longest prompt overflows: %ld tokens", most);
    cr_expect_gt(least - 1 + 128 + line + 2, 1024, "the shortest prompt had room for another line: %ld", least);
    cr_expect_eq(sql_long("r.db", "select count(*) from outputs"), 10);
    cr_expect_eq(sql_long("r.db", "select cast(value as int) from metrics where name = 'max_new_tokens'"), 128);
}

/* Kamradt's prompt (needlehaystack/providers/Anthropic_prompt.txt with run.py's
** question) and needle (run.py), in byte tokens (show), built here from
** llm_needle_haystack_tester.py's description: the fixture's .txt files
** joined in name order, repeated, cut to L, then to L - 200 - the needle; the
** needle at int(n * d / 100) moved back to just after a '.', d =
** round(100 K / 34) (35 linear depths); at the end for d = 100. */
static const char kam_head[] = "You are a helpful AI bot that answers questions for a user. Keep your response short "
                               "and direct\n\nHuman: <context>\n";
static const char kam_tail[] = "\n</context>\n\nWhat is the best thing to do in San Francisco? Don't give information "
                               "outside the document or repeat your findings\n\nAssistant: Here is the most relevant "
                               "sentence in the context:";
static const char kam_needle[] = "\nThe best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on "
                                 "a sunny day.\n";

Test(presets, kamradt_prompt_is_the_peers_rule, .init = setup, .fini = teardown, .timeout = 120)
{
    static const char *const files[] = {"01_northanger.txt", "02_emma.txt", "10_pride.txt"};
    static const long lengths[] = {600, 2000, 9000};
    static const int ks[] = {0, 1, 5, 17, 20, 33, 34};
    char *hay = NULL;
    size_t nhay = 0;
    for (int i = 0; i < 3; i++) {
        char path[4096];
        size_t n;
        snprintf(path, sizeof path, "%s/tests/haystack/%s", getenv("LENX_ROOT"), files[i]);
        char *b = slurp(path, &n);
        hay = realloc(hay, nhay + n);
        memcpy(hay + nhay, b, n);
        nhay += n;
        free(b);
    }
    const size_t nn = strlen(kam_needle);
    for (int li = 0; li < 3; li++)
        for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++) {
            long L = lengths[li];
            int k = ks[ki], d = (int)(100.0 * k / 34 + 0.5);
            char *ctx = malloc((size_t)L);
            for (long j = 0; j < L; j++)
                ctx[j] = hay[(size_t)j % nhay];
            long n = L - 200 - (long)nn;     /* L + needle > L - 200 always here */
            long at = d == 100 ? n : (long)((double)n * (d / 100.0));
            while (d < 100 && at > 0 && ctx[at - 1] != '.')
                at--;
            size_t cap = strlen(kam_head) + (size_t)L + strlen(kam_tail) + 1, w = 0;
            char *want = malloc(cap);
            w += (size_t)snprintf(want + w, cap - w, "%s%.*s", kam_head, (int)at, ctx);
            w += (size_t)snprintf(want + w, cap - w, "%s%.*s%s", kam_needle, (int)(n - at), ctx + at, kam_tail);
            cr_assert_eq(sh(out, sizeof out, "$L show task needle --protocol kamradt --data $R/tests/haystack "
                            "--length %ld --instance %d --text", L, k), 0, "%s", out);
            cr_expect_str_eq(out, want, "L %ld, instance %d (depth %d%%)", L, k, d);
            /* the rule in tokens: the context (haystack and needle) is L - 200 */
            cr_expect_eq(strlen(out), strlen(kam_head) + (size_t)(L - 200) + strlen(kam_tail), "L %ld", L);
            if (d > 0 && d < 100) {
                const char *p = strstr(out, kam_needle);
                cr_assert_not_null(p);
                cr_expect(p[-1] == '.' || p == out + strlen(kam_head), "the needle follows a full stop or starts the "
                          "context (L %ld, instance %d)", L, k);
            }
            free(ctx), free(want);
        }
    free(hay);
    cr_expect_eq(sh(out, sizeof out, "$L show task needle --protocol kamradt --data $R/tests/haystack --length 600 "
                    "--instance 35 --text"), 2, "35 depths, 0 to 34: %s", out);
}

/* A haystack that is not there, holds no .txt file, or one not UTF-8:
** refused naming the path, with a hint. */
Test(presets, kamradt_haystack_errors, .init = setup, .fini = teardown, .timeout = 60)
{
    static const char show[] = "$L show task needle --protocol kamradt --length 600 --instance 0 --text --data";
    int rc = sh(out, sizeof out, "%s nowhere 2>&1", show);
    cr_expect(rc == 2 || rc == 3, "%d: %s", rc, out);
    cr_expect(strstr(out, "nowhere") && strstr(out, "hint:"), "%s", out);
    rc = sh(out, sizeof out, "mkdir -p empty && touch empty/notes.md && %s empty 2>&1", show);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "empty'") && strstr(out, "no .txt file") && strstr(out, "hint:"), "%s", out);
    rc = sh(out, sizeof out, "mkdir -p blank && touch blank/a.txt && %s blank 2>&1", show);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "blank'") && strstr(out, "only empty"), "%s", out);
    rc = sh(out, sizeof out, "mkdir -p bad && printf 'Fine.' > bad/a.txt && printf 'Caf\\351.' > bad/b.txt && "
            "%s bad 2>&1", show);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "bad/b.txt") && strstr(out, "not UTF-8 at byte 3") && strstr(out, "hint:"), "%s", out);
    rc = sh(out, sizeof out, "$L show task needle --protocol kamradt --length 600 --instance 0 --text 2>&1");
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "data: PATH") && strstr(out, "hint:"), "%s", out);
}

/* The length rule in the model's tokens (stories260K, L 512): every one of the
** 35 prompts is the template's tokens (head and tail counted apart by lenx
** tokenize) + L - 200 for haystack and needle + BOS, within 2 tokens that
** merge across the joins; 300 new tokens each. */
Test(presets, kamradt_cell_counts_in_model_tokens, .init = setup, .fini = teardown, .timeout = 300)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    run_stories("r", "needle: {protocol: kamradt, data: HAY}", "[512]");
    write_file("h.txt", kam_head);
    write_file("t.txt", kam_tail);
    long tpl = 0;
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(sh(out, sizeof out, "$L tokenize --tokenizer $R/../shared/models/stories260K/tok512.bin --text "
                        "%s | awk -F, '{print NF - 1}'", i ? "t.txt" : "h.txt"), 0, "%s", out);
        tpl += strtol(out, NULL, 10);
    }
    cr_expect(tpl > 100 && tpl < 300, "%ld template tokens", tpl);
    long most = sql_long("r.db", "select cast(value as int) from metrics where name = 'prompt_tokens_max'"),
         least = sql_long("r.db", "select cast(value as int) from metrics where name = 'prompt_tokens_min'"),
         want = 1 + tpl + 512 - 200;
    cr_expect(most <= want + 2 && least >= want - 2, "prompts of %ld to %ld tokens; the rule: %ld", least, most, want);
    cr_expect_eq(sql_long("r.db", "select count(*) from outputs"), 35);
    cr_expect_eq(sql_long("r.db", "select cast(value as int) from metrics where name = 'max_new_tokens'"), 300);
}

/* ---- passkey yarn and longlora, line and topic longchat_base ------------------ */

static const char pk_desc[] = "There is an important info hidden inside a lot of irrelevant text. Find it and memorize "
                              "them. I will quiz you about the important information there.";
static const char pk_question[] = "What is the pass key? The pass key is";

/* generate_prompt's text (landmark's, YaRN's and LongLoRA's alike) checked on
** the printed prompt of a case with key `key`: "\n".join([description,
** filler[:p], info line, filler[:n - p], question]), filler = " ".join([garbage]
** * reps); returns n and sets *p. */
static long expect_passkey_text(const char *text, long key, long *p)
{
    static const char garbage[] = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and "
                                  "back again.";
    static char filler[1 << 16];
    for (size_t i = 0; i + 1 < sizeof filler; i++)
        filler[i] = i % sizeof garbage == sizeof garbage - 1 ? ' ' : garbage[i % sizeof garbage];
    char info[128];
    snprintf(info, sizeof info, "\nThe pass key is %ld. Remember it. %ld is the pass key.\n", key, key);
    size_t len = strlen(text), fixed = strlen(pk_desc) + strlen(info) + strlen(pk_question) + 2;
    cr_assert_geq(len, fixed, "%s", text);
    long n = (long)(len - fixed);
    const char *at = strstr(text, info);
    cr_assert_not_null(at, "%s", text);
    *p = (long)(at - text) - (long)strlen(pk_desc) - 1;
    cr_assert(*p >= 0 && *p <= n && n < (long)sizeof filler, "prefix %ld of %ld", *p, n);
    cr_expect(strncmp(text, pk_desc, strlen(pk_desc)) == 0 && text[strlen(pk_desc)] == '\n', "%s", text);
    cr_expect(memcmp(text + strlen(pk_desc) + 1, filler, (size_t)*p) == 0, "the prefix is the filler's start");
    cr_expect(memcmp(at + strlen(info), filler, (size_t)(n - *p)) == 0, "the suffix is the filler's start");
    cr_expect_str_eq(at + strlen(info) + (n - *p), "\nWhat is the pass key? The pass key is");
    return n;
}

static int digits_of(long k)
{
    int d = 1;
    while (k >= 10)
        k /= 10, d++;
    return d;
}

/* YaRN's eval/passkey.py in byte tokens (show, BOS counted): the filler is a
** multiple of 128 characters, the same for every case of a cell, and the step
** before the first whose prompt reaches L tokens; the cell's fitting draw has
** a key of 1 to 5 digits, so for some d in 1..5 the prompt is under L with n
** and reaches it with n + 128. Keys in [1, 50000], the split in [0, n]. */
Test(presets, yarn_prompt_is_the_peers_rule, .init = setup, .fini = teardown, .timeout = 60)
{
    static const long lengths[] = {400, 1000, 5000};
    long splits = 0;
    for (int li = 0; li < 3; li++) {
        long L = lengths[li], n0 = -1;
        for (int k = 0; k < 5; k++) {
            long key = shown_gold("passkey", "yarn", L, k), p;
            cr_expect(key >= 1 && key <= 50000, "key %ld", key);
            cr_assert_eq(sh(out, sizeof out, "$L show task passkey --protocol yarn --length %ld --instance %d --text",
                            L, k), 0, "%s", out);
            long n = expect_passkey_text(out, key, &p);
            cr_expect_eq(n % 128, 0, "L %ld: %ld filler characters", L, n);
            cr_expect(n0 < 0 || n == n0, "L %ld: every case has the cell's filler (%ld, %ld)", L, n0, n);
            n0 = n, splits += p;
            long bare = 1 + (long)strlen(out) - n - 2 * digits_of(key);     /* BOS + the text, no key, no filler */
            int fits = 0;
            for (int d = 1; d <= 5; d++)
                fits |= bare + 2 * d + n < L && L <= bare + 2 * d + n + 128;
            cr_expect(fits, "L %ld: %ld filler characters is not the step under L (%ld tokens without them)", L, n,
                      bare);
        }
    }
    cr_expect_gt(splits, 0, "the key is not always at the start");
    cr_expect_eq(sh(out, sizeof out, "$L show task passkey --protocol yarn --length 200 --instance 0 --text"), 2,
                 "%s", out);
    cr_expect(strstr(out, "without filler") && strstr(out, "hint: use a length over"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task passkey --protocol yarn --data x.jsonl --length 900 --text"), 2,
                 "%s", out);
    cr_expect(strstr(out, "drop data"), "%s", out);
}

/* LongLoRA's passkey_retrivial.py in byte tokens (show): n_garbage =
** int(3.75 * L // 1024 * 1024) filler characters whatever the tokenizer, the
** split in [0, n - 1] and the key in [1, 49999] (numpy's randint excludes the
** upper bound); a length that gives 0 (under 274) or more than the peer's 5000
** sentences is refused with a hint. */
Test(presets, longlora_prompt_is_the_peers_rule, .init = setup, .fini = teardown, .timeout = 60)
{
    static const long lengths[] = {274, 1000, 2000, 8000};
    static const long want[] = {1024, 3072, 7168, 29696};   /* 3.75 L // 1024 * 1024 by hand */
    for (int li = 0; li < 4; li++)
        for (int k = 0; k < 4; k++) {
            long key = shown_gold("passkey", "longlora", lengths[li], k), p;
            cr_expect(key >= 1 && key <= 49999, "key %ld", key);
            cr_assert_eq(sh(out, sizeof out, "$L show task passkey --protocol longlora --length %ld --instance %d "
                            "--text", lengths[li], k), 0, "%s", out);
            cr_expect_eq(expect_passkey_text(out, key, &p), want[li], "L %ld", lengths[li]);
            cr_expect_lt(p, want[li], "the split is below n_garbage");
        }
    cr_expect_eq(sh(out, sizeof out, "$L show task passkey --protocol longlora --length 273 --text"), 2, "%s", out);
    cr_expect(strstr(out, "n_garbage") && strstr(out, "hint: use a length of at least 274"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task passkey --protocol longlora --length 120150 --text"), 2, "%s", out);
    cr_expect(strstr(out, "holds at most 449999") && strstr(out, "hint:"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task passkey --protocol longlora --length 120149 --instance 9 --text | "
                    "wc -c"), 0, "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task passkey --protocol longlora --length 1000 --instance 10 --text"), 2,
                 "10 test cases (num_tests), 0 to 9: %s", out);
}

/* landmark and LongLoRA turn the length into filler characters by arithmetic alone, no tokenizer: a
** length that makes none (LongLoRA: 3.75 · 273 = 1023.75, under one 1024) or more than the peer's
** filler holds (sentences of 89 characters and a space, the last space dropped: LongLoRA's 5000 hold
** 449,999 and 3.75 · 120150 // 1024 · 1024 = 450,560; landmark's 2000 hold 179,999) is refused at its
** place in the sweep file, before a model is trained; the length next to it is planned. */
Test(presets, peer_lengths_are_refused_in_the_sweep_file, .init = setup, .fini = teardown, .timeout = 60)
{
    static const struct {
        const char *protocol, *what;
        long bad, good;
    } c[] = {
        {"longlora", "hint: use a length of at least 274", 273, 274},
        {"longlora", "holds at most 449999", 120150, 120149},
        {"landmark", "holds at most 179999", 180000, 179999},
    };
    for (int i = 0; i < 3; i++)
        for (int good = 0; good < 2; good++) {
            char yaml[1024];
            snprintf(yaml, sizeof yaml, "name: s\nmodels:\n  m:\n    arch: {mode: causal, layers: 1, d_model: 16, "
                     "heads: 1, d_head: 16, d_mlp: 32}\n    train: {length: 64, batch: 2, steps: 2, warmup: 1}\n"
                     "methods: [rope]\ntasks:\n  - passkey: {protocol: %s}\nlengths: [%ld]\n", c[i].protocol,
                     good ? c[i].good : c[i].bad);
            write_file("s.yaml", yaml);
            int rc = sh(out, sizeof out, "$L run s.yaml --dry-run --db x.db");
            if (good) {
                cr_expect_eq(rc, 0, "%s %ld: %s", c[i].protocol, c[i].good, out);
                continue;
            }
            cr_expect_eq(rc, 2, "%s %ld: %s", c[i].protocol, c[i].bad, out);
            cr_expect(strstr(out, "s.yaml:9:11: ") && strstr(out, c[i].what) && strstr(out, "hint:"), "%s", out);
        }
}

/* tok512's count of the text show prints (`show ... --text` appended to
** show_args), BOS included, as `lenx tokenize` counts: len(tokenizer.encode()). */
static long stories_tokens(const char *show_args)
{
    cr_assert_eq(sh(out, sizeof out, "$L show task %s --text > p.txt && $L tokenize --tokenizer "
                    "$R/../shared/models/stories260K/tok512.bin --text p.txt | awk -F, '{print NF}'", show_args), 0,
                 "%s", out);
    return strtol(out, NULL, 10);
}

/* The same rule in stories260K's tokens (the cell fits in the model's
** tokenizer): every prompt is under L give or take the tokens the cases' keys
** and splits move (the fit is one draw of the cell), and 128 more filler
** characters would reach L; 20 cases (--iterations), 10 new tokens. */
Test(presets, yarn_cell_counts_in_model_tokens, .init = setup, .fini = teardown, .timeout = 300)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    run_stories("pk", "passkey: {protocol: yarn}", "[300, 600]");
    static const char garbage[] = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back "
                                  "again. The grass is green. The sky is blue. The sun is yellow.";
    cr_assert_eq(sh(out, sizeof out, "printf '%%.128s' '%s' > step.txt && $L tokenize --tokenizer "
                    "$R/../shared/models/stories260K/tok512.bin --text step.txt | awk -F, '{print NF - 1}'", garbage),
                 0, "%s", out);
    long step = strtol(out, NULL, 10);
    cr_expect(step > 20 && step < 128, "%ld tokens in 128 filler characters", step);
    static const long lengths[] = {300, 600};
    for (int i = 0; i < 2; i++) {
        long L = lengths[i], most = lround(cell_metric(L, "prompt_tokens_max")),
             least = lround(cell_metric(L, "prompt_tokens_min"));
        cr_expect(most < L + 8 && least + step > L - 8, "L %ld: prompts of %ld to %ld tokens, a step %ld", L, least,
                  most, step);
        cr_expect_eq(cell_metric(L, "n_samples"), 20);
        cr_expect_eq(cell_metric(L, "max_new_tokens"), 10);
        cr_expect(cell_metric(L, "acc") >= 0.0 && cell_metric(L, "acc") <= 1.0);
    }
    cr_expect_eq(sql_long("r.db", "select count(*) from outputs"), 40);
}

/* LongLoRA's cell on stories260K: the prompts are the printed ones (the
** filler follows from L alone), prompt_tokens their mean count as the peer's
** input_ids.shape[-1]; the budget of each case the key's own tokens
** (tokenizer(answer).input_ids[:, 1:], `lenx tokenize` of the key less BOS),
** max_new_tokens their mean; 10 cases (num_tests). */
Test(presets, longlora_cell_budget_is_the_keys_tokens, .init = setup, .fini = teardown, .timeout = 300)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    run_stories("pk", "passkey: {protocol: longlora}", "[300, 600]");
    static const long lengths[] = {300, 600};
    for (int i = 0; i < 2; i++) {
        long L = lengths[i];
        double prompt = 0.0, budget = 0.0;
        for (int k = 0; k < 10; k++) {
            char args[128];
            snprintf(args, sizeof args, "passkey --protocol longlora --length %ld --instance %d", L, k);
            prompt += (double)stories_tokens(args);
            long key = shown_gold("passkey", "longlora", L, k);
            cr_assert_eq(sh(out, sizeof out, "printf %ld > k.txt && $L tokenize --tokenizer "
                            "$R/../shared/models/stories260K/tok512.bin --text k.txt | awk -F, '{print NF - 1}'", key),
                         0, "%s", out);
            budget += strtod(out, NULL);
        }
        cr_expect_float_eq(cell_metric(L, "prompt_tokens"), prompt / 10, 1e-9, "L %ld", L);
        cr_expect_float_eq(cell_metric(L, "max_new_tokens"), budget / 10, 1e-9, "L %ld", L);
        cr_expect_geq(budget / 10, 1.0);
        cr_expect_eq(cell_metric(L, "n_samples"), 10);
        cr_expect(cell_metric(L, "acc") >= 0.0 && cell_metric(L, "acc") <= 1.0);
    }
    cr_expect_eq(sql_long("r.db", "select count(*) from outputs"), 20);
}

/* LongChat's base-model path: the file's prompt and the ending its
** mpt-7b-storywriter branch appends, for an integer and a string line index
** (hand-written), for LongChat's own files, and a missing random_idx named
** with its line. */
Test(presets, longchat_base_appends_the_peers_ending, .init = setup, .fini = teardown, .timeout = 120)
{
    write_file("b.jsonl", "{\"random_idx\": [17, 16], \"expected_number\": 5, \"prompt\": \"line 17: REGISTER_CONTENT "
                          "is <5>\\n\"}\n{\"random_idx\": [\"calm-fox\", 0], \"expected_number\": 9, \"prompt\": \"x\"}\n");
    cr_assert_eq(sh(out, sizeof out, "$L show task line --protocol longchat_base --data b.jsonl --instance 0 --text"),
                 0, "%s", out);
    cr_expect_str_eq(out, "line 17: REGISTER_CONTENT is <5>\nLine <17>: <REGISTER_CONTENT> is");
    cr_assert_eq(sh(out, sizeof out, "$L show task line --protocol longchat_base --data b.jsonl --instance 1 --text"),
                 0, "%s", out);
    cr_expect_str_eq(out, "xLine <calm-fox>: <REGISTER_CONTENT> is");
    write_file("t.jsonl", "{\"topics\": [\"jazz\", \"tea\"], \"prompt\": \"T\"}\n");
    cr_assert_eq(sh(out, sizeof out, "$L show task topic --protocol longchat_base --data t.jsonl --text"), 0, "%s", out);
    cr_expect_str_eq(out, "T\n ASSISTANT: The first topic is");
    write_file("nob.jsonl", "{\"expected_number\": 5, \"prompt\": \"p\"}\n");
    cr_expect_eq(sh(out, sizeof out, "$L show task line --protocol longchat_base --data nob.jsonl --text"), 2, "%s",
                 out);
    cr_expect(strstr(out, "nob.jsonl:1: ") && strstr(out, "random_idx"), "%s", out);
    if (!have_peers())
        cr_skip_test("../shared/peers is not beside the checkout");
    char path[4096];
    snprintf(path, sizeof path, "%s/../shared/peers/longchat/300_lines.jsonl", getenv("LENX_ROOT"));
    cr_expect_eq(expect_prompts_of("line", "longchat_base", path), 50);
    snprintf(path, sizeof path, "%s/../shared/peers/longchat/1_topics.jsonl", getenv("LENX_ROOT"));
    cr_expect_eq(expect_prompts_of("topic", "longchat_base", path), 50);
}

/* The outputs of the line cell (seed, length) in db, hex, in sample order. */
static void cell_outputs(char *got, size_t n, const char *db, long seed, long L)
{
    char q[512];
    snprintf(q, sizeof q, "select group_concat(h, ',') from (select hex(o.text) as h from outputs o join runs r on "
             "r.id = o.run_id where r.seed = %ld and r.length = %ld and r.task like 'line%%' order by o.sample)",
             seed, L);
    sql_text(got, n, db, q);
}

/* Sampled as LongChat samples its base model (pipeline(..., max_new_tokens=15,
** do_sample=True): temperature 1, top-k 50): on stories260K the same seed gives
** the same outputs in another sweep of other cells in another order and in a
** shard of the sweep, another seed other outputs; 15 new tokens;
** prompt_tokens is the mean count of the printed prompts, ending included. */
Test(presets, longchat_base_samples_per_seed, .init = setup, .fini = teardown, .timeout = 300)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    write_file("l.jsonl", "{\"random_idx\": [\"calm-fox\", 1], \"expected_number\": 4, \"prompt\": \"line red-cat: "
                          "REGISTER_CONTENT is <7>\\nline calm-fox: REGISTER_CONTENT is <4>\\n\"}\n"
                          "{\"random_idx\": [2, 1], \"expected_number\": 12, \"prompt\": \"Once upon a time\"}\n"
                          "{\"random_idx\": [1, 0], \"expected_number\": 3, \"prompt\": \"Lily had 3 cats.\"}\n");
    write_file("t.jsonl", "{\"topics\": [\"the park\", \"cats\"], \"prompt\": \"USER: I would like to discuss the "
                          "topic of the park.\"}\n");
    static const char yaml[] = "name: b\nseeds: %s\nmodels:\n  s:\n    checkpoint: STORIES\nmethods:\n"
                               "  - [{rope: {layout: interleaved}}]\ntasks:\n%s  - line: {protocol: longchat_base, "
                               "data: l.jsonl}\nlengths: %s\n";
    char y[1024];
    snprintf(y, sizeof y, yaml, "[1, 2]", "  - topic: {protocol: longchat_base, data: t.jsonl}\n", "[256, 512]");
    write_file("a.yaml", y);
    snprintf(y, sizeof y, yaml, "[1]", "", "[512]");
    write_file("b.yaml", y);
    cr_assert_eq(sh(out, sizeof out, "sed -i \"s|STORIES|$R/../shared/models/stories260K/stories260K.bin|\" a.yaml "
                    "b.yaml && $L run a.yaml --db a.db --quiet --no-table && $L run b.yaml --db b.db --quiet "
                    "--no-table"), 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "for k in 0 1; do $L run a.yaml --db s$k.db --shard $k/2 --quiet --no-table || "
                    "exit 1; done"), 0, "%s", out);
    static char s1[8192], s1b[8192], s2[8192], sh0[8192], sh1[8192];
    cell_outputs(s1, sizeof s1, "a.db", 1, 512);
    cell_outputs(s1b, sizeof s1b, "b.db", 1, 512);
    cell_outputs(s2, sizeof s2, "a.db", 2, 512);
    cell_outputs(sh0, sizeof sh0, "s0.db", 1, 512);
    cell_outputs(sh1, sizeof sh1, "s1.db", 1, 512);
    cr_expect(strlen(s1) > 2, "%s", s1);
    cr_expect_str_eq(s1, s1b, "seed 1 in two sweeps");
    cr_expect(strcmp(s1, sh0[0] ? sh0 : sh1) == 0 && (!sh0[0] || !sh1[0]), "seed 1 in one of two shards");
    cr_expect_str_neq(s1, s2, "seeds 1 and 2");
    cr_expect_eq(sql_long("a.db", "select count(*) from outputs"), 3 * 4 + 4);
    cr_expect_eq(sql_long("a.db", "select count(*) from metrics where name = 'max_new_tokens' and value = 15"), 8);
    double want = 0.0;
    for (int k = 0; k < 3; k++) {
        char args[128];
        snprintf(args, sizeof args, "line --protocol longchat_base --data l.jsonl --instance %d", k);
        want += (double)stories_tokens(args);
    }
    char got[64];
    sql_text(got, sizeof got, "b.db", "select value from metrics where name = 'prompt_tokens'");
    cr_expect_float_eq(strtod(got, NULL), want / 3, 1e-9, "%s", got);
    char q[256];
    snprintf(q, sizeof q, "select count(*) from metrics m join runs r on r.id = m.run_id where r.task like 'topic%%' "
             "and m.name = 'prompt_tokens' and m.value = %ld",
             stories_tokens("topic --protocol longchat_base --data t.jsonl --instance 0"));
    cr_expect_eq(sql_long("a.db", q), 4, "every topic cell counts the prompt and its ending");
}

/* LongLoRA's rule, the budget being the gold's own tokens and the score their
** equality with the generated ids, on a preset row like longlora's that reads
** its gold from a file (the topic reader): the gold is the text stories260K
** greedily continues "Once upon a time, there" with (4 tokens), its leading space
** left to the dummy prefix, so its ids are the generated ones and it scores 1;
** the same gold with its last letter changed scores 0. max_new_tokens is the
** mean of the two budgets. */
Test(presets, budget_of_the_gold_scores_on_token_ids, .init = setup, .fini = teardown, .timeout = 120)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    struct lx_error err = {""};
    struct stories st;
    load_stories(&st);
    struct lx_tokenizer *tk = st.tk;
    static const char prompt[] = "Once upon a time, there";
    int *ids = NULL, *gold_ids = NULL, gen[4];
    long np = lx_tok_prompt(tk, prompt, strlen(prompt), &ids, &err);
    cr_assert_gt(np, 1, "%s", err.msg);
    cr_assert_eq(lx_generate(&st.m, &st.s.spec, ids, np, 4, gen, LX_DECODE_FULL, &err), LX_OK, "%s", err.msg);
    int32_t gen32[4] = {gen[0], gen[1], gen[2], gen[3]};
    char text[256], bad[256];
    int stop;
    long n = lx_tok_decode(tk, gen32, 4, text, &stop);
    cr_assert(n > 2 && text[0] == ' ' && strspn(text, " abcdefghijklmnopqrstuvwxyz") == (size_t)n, "'%s'", text);
    long ng = lx_tok_prompt(tk, text + 1, (size_t)(n - 1), &gold_ids, &err);
    cr_assert_eq(ng, 5, "the gold reads back as [begin] + 4 ids: %ld", ng);
    for (int k = 0; k < 4; k++)
        cr_assert_eq(gold_ids[k + 1], gen[k], "the premise: the gold's id %d is the generated one", k);
    snprintf(bad, sizeof bad, "%s", text + 1);
    bad[n - 2] = bad[n - 2] == 'q' ? 'x' : 'q';
    char data[1024], path[512];
    snprintf(data, sizeof data, "{\"topics\": [\"%s\"], \"prompt\": \"%s\"}\n{\"topics\": [\"%s\"], \"prompt\": "
             "\"%s\"}\n", text + 1, prompt, bad, prompt);
    write_file("g.jsonl", data);
    snprintf(path, sizeof path, "%s/g.jsonl", dir);
    struct lx_protocol p = {.task = "topic", .name = "gold_ids", .scorer = "token_exact",
                            .read = lx_peer_longchat_topics, .budget_gold = 1};
    struct lx_task_ctx ctx = {.spec = &st.s.spec, .length = 512, .data_key = 7, .model = &st.m, .tok = tk};
    struct lx_result r = {0};
    cr_assert_eq(lx_preset_run(&ctx, &p, path, 1, &r, &err), LX_OK, "%s", err.msg);
    cr_assert_eq(r.n_outputs, 2);
    cr_expect_eq(r.outputs[0].score, 1, "'%s' for gold '%s'", r.outputs[0].text, text + 1);
    cr_expect_eq(r.outputs[1].score, 0, "'%s' for gold '%s'", r.outputs[1].text, bad);
    free(gold_ids);
    ng = lx_tok_prompt(tk, bad, strlen(bad), &gold_ids, &err);
    cr_expect_float_eq(lx_result_find(&r, "max_new_tokens")->value, (4.0 + (double)(ng - 1)) / 2.0, 1e-12);
    cr_expect_float_eq(lx_result_find(&r, "acc")->value, 0.5, 1e-12);
    lx_result_release(&r);
    free(ids), free(gold_ids);
    free_stories(&st);
}
