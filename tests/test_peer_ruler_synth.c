/*
** tests/test_peer_ruler_synth.c - RULER's variable tracking, frequent- and
** common-words extraction as needle presets (tasks/peer_ruler.c: ruler_vt,
** ruler_fwe, ruler_cwe): each case read back from `show --text` and checked
** against the peer script's rule rebuilt here (the chain and its example,
** the counts by Zipf rank, the common and uncommon repetitions), the fit in a
** model's tokens, and a sweep on stories260K scored with ruler_all.
*/
#define _POSIX_C_SOURCE 200809L
#define _GNU_SOURCE     /* strcasestr */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/tokenizers/tokenizer.h"
#include "tasks/peer.h"
#include "tests/ruler_fixture.h"
#include "tests/tokfile.h"

static const char VT_HEAD[] =
                      "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n",
                  VT_LINE[] = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back "
                              "again.";

/* One block of a vt prompt at s: the head, noise lines with the chain's five
** lines each before one of them and in order ("VAR A = V", then "VAR B = VAR
** A " with its space), the question for V; vars (letters letters each,
** distinct) and the noise lines out; returns where the question's end is. */
static const char *vt_block(const char *s, int letters, char vars[5][8], char *value, long *noise)
{
    cr_assert(strncmp(s, VT_HEAD, strlen(VT_HEAD)) == 0, "%.120s", s);
    s += strlen(VT_HEAD);
    int chain = 0;
    *noise = 0;
    for (;;) {
        if (strncmp(s, "Question: ", 10) == 0)
            break;
        const char *nl = strchr(s, '\n');
        cr_assert_not_null(nl, "%.120s", s);
        char line[256], want[64];
        snprintf(line, sizeof line, "%.*s", (int)(nl - s), s);
        if (strcmp(line, VT_LINE) == 0) {
            (*noise)++;
        } else {
            cr_assert_lt(chain, 5, "a sixth chain line: '%s'", line);
            cr_assert(strncmp(line, "VAR ", 4) == 0 && strspn(line + 4, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") ==
                      (size_t)letters, "'%s'", line);
            snprintf(vars[chain], 8, "%.*s", letters, line + 4);
            for (int j = 0; j < chain; j++)
                cr_expect_str_neq(vars[chain], vars[j]);
            if (chain == 0) {
                snprintf(value, 8, "%s", line + 4 + letters + 3);
                cr_expect(strlen(value) == 5 && strspn(value, "0123456789") == 5 && value[0] != '0' &&
                          strcmp(value, "99999") != 0, "value '%s'", value);
                snprintf(want, sizeof want, "VAR %s = %s", vars[0], value);
            } else {
                snprintf(want, sizeof want, "VAR %s = VAR %s ", vars[chain], vars[chain - 1]);
            }
            cr_expect_str_eq(line, want);
            cr_expect(strncmp(nl + 1, VT_LINE, strlen(VT_LINE)) == 0, "a chain line goes before a noise line");
            chain++;
        }
        s = nl + 1;
    }
    cr_assert_eq(chain, 5);
    char q[512];
    snprintf(q, sizeof q, "Question: Find all variables that are assigned the value %s in the text above. Answer: "
             "According to the chain(s) of variable assignment in the text above, 5 variables are assigned the value "
             "%s, they are: ", value, value);
    cr_assert(strncmp(s, q, strlen(q)) == 0, "%.300s", s);
    return s + strlen(q);
}

/* In byte tokens: the example (3-letter variables; its 500 tokens cannot
** hold a chain among five noise lines, so the fewest, five, as niah.py falls
** back to its step) with its answer, a newline, then the case: 5-letter
** variables, the prompt + 30 within L and no room for another noise line;
** the golds the chain's variables in order. */
Test(peer_ruler, vt_cases_are_the_peers_rule, .init = setup, .fini = teardown, .timeout = 120)
{
    static const long lengths[] = {2200, 4000, 9000};
    static char text[1 << 16];
    char ex[5][8], vars[5][8], value[8], ex_value[8], gold[64], want[64];
    int values = 0;
    for (int li = 0; li < 3; li++)
        for (int k = 0; k < 4; k++) {
            long L = lengths[li], noise, ex_noise;
            double depth;
            shown_case("ruler_vt", "''", L, k, gold, sizeof gold, &depth);
            cr_assert_eq(sh(text, sizeof text, "$L show task needle --protocol ruler_vt --length %ld --instance %d "
                            "--text", L, k), 0, "%s", text);
            const char *s = vt_block(text, 3, ex, ex_value, &ex_noise);
            cr_expect_eq(ex_noise, 5, "the example's noise lines");
            snprintf(want, sizeof want, " %s %s %s %s %s\n\n", ex[0], ex[1], ex[2], ex[3], ex[4]);
            cr_assert(strncmp(s, want, strlen(want)) == 0, "the example's answer: '%.60s'", s);
            s = vt_block(s + strlen(want), 5, vars, value, &noise);
            cr_expect_eq(*s, 0, "the prompt ends with the answer prefix");
            long bytes = (long)strlen(text);
            cr_expect_leq(bytes + 30, L, "L %ld instance %d: %ld bytes", L, k, bytes);
            cr_expect_lt(L - 30 - bytes, (long)strlen(VT_LINE) + 1, "L %ld instance %d: room for another line", L, k);
            snprintf(want, sizeof want, "%s, %s, %s, %s, %s", vars[0], vars[1], vars[2], vars[3], vars[4]);
            cr_expect_str_eq(gold, want);
            values += strcmp(value, ex_value) != 0;
        }
    cr_expect_eq(values, 12, "the example's value is its own");
    int rc = sh(out, sizeof out, "$L show task needle --protocol ruler_vt --length 1500 --instance 0");
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "length 1500") && strstr(out, "no room") && strstr(out, "hint:"), "%s", out);
}

/* tk's tokens of s[0, n), BOS not counted (RULER's text_to_tokens). */
static long vt_tokens(const struct lx_tokenizer *tk, const char *s, size_t n)
{
    int *ids = NULL;
    struct lx_error err = {0};
    long k = lx_tok_prompt(tk, s, n, &ids, &err);
    free(ids);
    cr_assert_gt(k, 0, "%s", err.msg);
    return k - 1;
}

/* Does one more noise line, after the head at block, push the text past max
** tokens of tk? (Llama 3's pre-tokenizer splits at line ends: a line's tokens
** add up.) */
static int vt_full(const struct lx_tokenizer *tk, const char *text, size_t n, const char *block, long max)
{
    static char more[1 << 17];
    size_t at = (size_t)(block - text) + strlen(VT_HEAD);
    snprintf(more, sizeof more, "%.*s%s\n%.*s", (int)at, text, VT_LINE, (int)(n - at), text + at);
    return vt_tokens(tk, more, n + strlen(VT_LINE) + 1) > max;
}

/* In Llama 3's tokens (the tokenizer `make test` fetches): the example's
** prompt, up to its answer, within 500 tokens and full (one more noise line
** would pass 500), with more than the five lines it needs in bytes; the whole
** prompt + 30 within L and full. */
Test(peer_ruler, vt_fits_a_tokenizer, .init = setup, .fini = teardown, .timeout = 120)
{
    char path[512];
    snprintf(path, sizeof path, "%s/build/tokenizers/llama3/models/tokenizer.json", getenv("LENX_ROOT"));
    struct lx_tokenizer *tk = NULL;
    struct lx_error err = {0};
    cr_assert_eq(lx_tokenizer_open(&tk, path, &err), 0, "%s (make test fetches it)", err.msg);
    for (int k = 0; k < 3; k++) {
        struct lx_peer_case c = {0};
        long L = 4096 + 1024 * k;
        cr_assert_eq(lx_peer_ruler_vt("", L, 0x5eed + (uint64_t)k, k, tk, &c, &err), 0, "%s", err.msg);
        const char *t = lx_buf_str(&c.prompt), *answer = strstr(t, "they are: ") + 10,
                   *own = strstr(answer, "\n\nMemorize") + 2;
        size_t ex = (size_t)(answer - t);
        long lines = 0;
        for (const char *p = strstr(t, VT_LINE); p && p < answer; p = strstr(p + 1, VT_LINE))
            lines++;
        cr_expect_gt(lines, 5, "the example holds %ld noise lines", lines);
        cr_expect_leq(vt_tokens(tk, t, ex), 500);
        cr_expect(vt_full(tk, t, ex, t, 500), "the example has room for another line");
        cr_expect_leq(vt_tokens(tk, t, c.prompt.len) + 30, L);
        cr_expect(vt_full(tk, t, c.prompt.len, own, L - 30), "L %ld: room for another line", L);
        cr_expect_eq(c.n_golds, 5);
        lx_buf_free(&c.prompt), lx_buf_free(&c.golds);
    }
    lx_tokenizer_free(tk);
}

/* ---- RULER's frequent words extraction (ruler_fwe) ---- */

#define ZETA2 1.6449340668482264

static long fwe_times(long n, long k)
{
    return (long)((double)n * pow((double)k, -2.0) / ZETA2);
}

/* The template's bytes around n words of coded words (n ranks' counts). */
static long fwe_bytes(long n, long v, long head_tail)
{
    long bytes = head_tail - 1;     /* the spaces between words: one fewer than the words */
    for (long k = 1; k <= v; k++)
        bytes += fwe_times(n, k) * ((k == 1 ? 3 : 6) + 1);
    return bytes;
}

/* In byte tokens at three lengths: the template, the coded words (six
** lower-case letters, "..." the most frequent), their counts those of some n
** by rank (int(n k^-2 / zeta(2))) over at most (L - 50) / 50 words, n the
** largest whose prompt + 50 fits L (from the counts, exactly), and the golds
** the three next most frequent words. */
Test(peer_ruler, fwe_cases_are_the_peers_rule, .init = setup, .fini = teardown, .timeout = 120)
{
    static const char head[] = "Read the following coded text and track the frequency of each coded word. Find the "
                               "three most frequently appeared coded words. ",
                      tail[] = "\nQuestion: Do not provide any explanation. Please ignore the dots '....'. What are "
                               "the three most frequently appeared words in the above coded text? Answer: According "
                               "to the coded text above, the three most frequently appeared words are:";
    static const long lengths[] = {600, 2000, 6000};
    static char text[1 << 16];
    char gold[64], golds_seen[12][64];
    int n_seen = 0;
    for (int li = 0; li < 3; li++)
        for (int c = 0; c < 4; c++) {
            long L = lengths[li], v = (L - 50) / 50;
            double depth;
            shown_case("ruler_fwe", "''", L, c, gold, sizeof gold, &depth);
            cr_assert_eq(sh(text, sizeof text, "$L show task needle --protocol ruler_fwe --length %ld --instance %d "
                            "--text", L, c), 0, "%s", text);
            size_t len = strlen(text);
            cr_assert(strncmp(text, head, strlen(head)) == 0 && len > strlen(head) + strlen(tail) &&
                      strcmp(text + len - strlen(tail), tail) == 0, "%.200s", text);
            text[len - strlen(tail)] = 0;
            char word[64][8];
            long count[64] = {0}, nw = 0;
            for (char *w = strtok(text + strlen(head), " "); w; w = strtok(NULL, " ")) {
                cr_assert(strcmp(w, "...") == 0 || (strlen(w) == 6 && strspn(w, "abcdefghijklmnopqrstuvwxyz") == 6),
                          "'%s'", w);
                long i = 0;
                while (i < nw && strcmp(word[i], w) != 0)
                    i++;
                if (i == nw) {
                    cr_assert_lt(nw, 64);
                    snprintf(word[nw++], 8, "%s", w);
                }
                count[i]++;
            }
            cr_assert_leq(nw, v, "L %ld: %ld distinct words of a vocabulary of %ld", L, nw, v);
            for (long i = 0; i < nw; i++)   /* by count, most first (insertion sort of both) */
                for (long j = i; j > 0 && count[j] > count[j - 1]; j--) {
                    long t = count[j];
                    char tw[8];
                    count[j] = count[j - 1], count[j - 1] = t;
                    memcpy(tw, word[j], 8), memcpy(word[j], word[j - 1], 8), memcpy(word[j - 1], tw, 8);
                }
            cr_expect_str_eq(word[0], "...");
            long n = -1;    /* the n whose counts by rank these are */
            for (long m = (long)(ZETA2 * (double)count[0]) - 2; m <= (long)(ZETA2 * (double)(count[0] + 1)) + 2; m++) {
                int same = 1;
                for (long k = 1; k <= 64 && same; k++)
                    same = fwe_times(m, k) == (k <= nw ? count[k - 1] : 0) || (k > v && k > nw);
                n = same && m > n ? m : n;
            }
            cr_assert_geq(n, 0, "L %ld instance %d: no n gives these counts", L, c);
            long ht = (long)(strlen(head) + strlen(tail));
            cr_expect_leq(fwe_bytes(n, v, ht) + 50, L);
            cr_expect_gt(fwe_bytes(n + 1, v, ht) + 50, L, "L %ld instance %d: room for word %ld", L, c, n + 1);
            char g[3][8];     /* the golds: words of rank 2, 3 and 4 by their counts (4 may tie with 5) */
            cr_assert_eq(sscanf(gold, "%7[^,], %7[^,], %7s", g[0], g[1], g[2]), 3, "'%s'", gold);
            for (int r = 0; r < 3; r++) {
                long i = 0;
                while (i < nw && strcmp(word[i], g[r]) != 0)
                    i++;
                cr_expect(i < nw && count[i] == fwe_times(n, r + 2), "L %ld instance %d: gold %d '%s' is not rank %d",
                          L, c, r, g[r], r + 2);
            }
            cr_expect(count[1] > count[2] && count[2] > count[3], "ranks 2-4 stand apart");
            snprintf(golds_seen[n_seen++], 64, "%s", gold);
        }
    for (int i = 1; i < n_seen; i++)
        cr_expect_str_neq(golds_seen[i], golds_seen[i - 1], "each case draws its own words");
    int rc = sh(out, sizeof out, "$L show task needle --protocol ruler_fwe --length 240 --instance 0");
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "length 240") && strstr(out, "hint:"), "%s", out);
    rc = sh(out, sizeof out, "$L show task needle --protocol ruler_fwe --length 300 --instance 0");
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "length 300") && strstr(out, "room for 0 coded words") && strstr(out, "hint:"), "%s", out);
}

/* ---- RULER's common words extraction (ruler_cwe) ---- */

/* A word list of 400 made-up words (two to four syllables), one a line, with
** white space around some and a repeat, into words.txt; returns the longest. */
static long cwe_list_file(void)
{
    static const char *const syl[] = {"ba", "ko", "ri", "mu", "te", "lan", "dor", "si", "ve", "pum"};
    char path[128];
    snprintf(path, sizeof path, "%s/words.txt", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    long longest = 0;
    for (int i = 0; i < 400; i++) {
        char w[32];
        snprintf(w, sizeof w, "%s%s%s%s", syl[i % 10], syl[(i / 10) % 10], syl[(i / 100 + i) % 10],
                 i >= 200 ? "x" : "");
        fprintf(f, i % 7 == 0 ? "  %s\t\n" : "%s\n", w);
        longest = (long)strlen(w) > longest ? (long)strlen(w) : longest;
    }
    fprintf(f, "\nbabababa\n");     /* a repeat of word 0 */
    fclose(f);
    return longest;
}

/* One numbered list at s ("1. w 2. w ..." up to the newline): its words and
** their counts (nw distinct), each in the list file; returns the end. */
static const char *cwe_block(const char *s, char (*word)[32], long *count, long *nw, long *items)
{
    static const char head[] = "Below is a numbered list of words. In these words, some appear more often than others. "
                               "Memorize the ones that appear most often.\n";
    cr_assert(strncmp(s, head, strlen(head)) == 0, "%.100s", s);
    s += strlen(head);
    *nw = *items = 0;
    for (;;) {
        long num;
        char w[32];
        int used = 0;
        if (sscanf(s, "%ld. %31[a-z]%n", &num, w, &used) != 2)
            break;
        cr_assert_eq(num, *items + 1, "numbered in order: %.40s", s);
        (*items)++;
        long i = 0;
        while (i < *nw && strcmp(word[i], w) != 0)
            i++;
        if (i == *nw) {
            cr_assert_lt(*nw, 400);
            snprintf(word[(*nw)++], 32, "%s", w);
            count[i] = 0;
        }
        count[i]++;
        s += used;
        if (*s != ' ')
            break;
        s++;
    }
    static const char q[] = "\nQuestion: What are the 10 most common words in the above list? Answer: The top 10 words "
                            "that appear most often in the list are:";
    cr_assert(strncmp(s, q, strlen(q)) == 0, "%.100s", s);
    return s + strlen(q);
}

/* In byte tokens at 2,500 and 3,900 (6 and 1 repetitions, an example of 20
** words, 3 and 1) and 12,000 (30 and 3, 40 words, 10 and 3): the example's
** list and answer, then the case's: ten words fc times, the rest fu, words
** apart from the example's, all from the list; the golds the ten; the prompt
** + 120 within L, with no room for one more word fu times. */
Test(peer_ruler, cwe_cases_are_the_peers_rule, .init = setup, .fini = teardown, .timeout = 120)
{
    static const long lengths[] = {2500, 3900, 12000};
    static char text[1 << 17];
    static char word[400][32], ex_word[400][32];
    static long count[400], ex_count[400];
    long longest = cwe_list_file();
    for (int li = 0; li < 3; li++)
        for (int k = 0; k < 3; k++) {
            long L = lengths[li], big = L >= 4096, fc = big ? 30 : 6, fu = big ? 3 : 1, nw, items, ex_nw, ex_items;
            char gold[512];
            double depth;
            shown_case("ruler_cwe", "words.txt", L, k, gold, sizeof gold, &depth);
            cr_assert_eq(sh(text, sizeof text, "$L show task needle --protocol ruler_cwe --data words.txt --length %ld "
                            "--instance %d --text", L, k), 0, "%s", text);
            const char *s = cwe_block(text, ex_word, ex_count, &ex_nw, &ex_items);
            cr_expect_eq(ex_nw, big ? 40 : 20);
            for (long i = 0, r = 0; i < ex_nw; i++) {
                cr_expect(ex_count[i] == (big ? 10 : 3) || ex_count[i] == (big ? 3 : 1), "'%s' %ld times", ex_word[i],
                          ex_count[i]);
                if (ex_count[i] == (big ? 10 : 3))
                    r++;
                cr_expect_leq(r, 10);
            }
            for (long a = 1; a <= 10; a++) {    /* " 1. w ... 10. w": the ten repeated most */
                char w[32];
                int used = 0;
                long num = 0;
                cr_assert_eq(sscanf(s, " %ld. %31[a-z]%n", &num, w, &used), 2, "%.60s", s);
                cr_expect_eq(num, a);
                long i = 0;
                while (i < ex_nw && strcmp(ex_word[i], w) != 0)
                    i++;
                cr_expect(i < ex_nw && ex_count[i] == (big ? 10 : 3), "the example's answer '%s'", w);
                s += used;
            }
            cr_assert_eq(*s, '\n');
            const char *end = cwe_block(s + 1, word, count, &nw, &items);
            cr_expect_eq(*end, 0);
            long common = 0;
            for (long i = 0; i < nw; i++) {
                cr_expect(count[i] == fc || count[i] == fu, "'%s' %ld times", word[i], count[i]);
                common += count[i] == fc;
                if (count[i] == fc)
                    cr_expect(strstr(gold, word[i]) != NULL, "gold '%s' lacks '%s'", gold, word[i]);
                for (long j = 0; j < ex_nw; j++)
                    cr_expect_str_neq(word[i], ex_word[j], "the example's words are its own");
            }
            cr_expect_eq(common, 10);
            cr_expect_eq(items, 10 * fc + (nw - 10) * fu);
            long bytes = (long)strlen(text);
            cr_expect_leq(bytes + 120, L);
            cr_expect_lt(L - 120 - bytes, fu * (longest + 8), "L %ld instance %d: room for another word", L, k);
        }
    cr_expect_eq(sh(out, sizeof out, "$L show task needle --protocol ruler_cwe --length 3000 --instance 0"), 2);
    cr_expect(strstr(out, "word list") && strstr(out, "hint:"), "%s", out);
    write_file("few.txt", "a\nb\nc\n");
    cr_expect_eq(sh(out, sizeof out, "$L show task needle --protocol ruler_cwe --data few.txt --length 3000 "
                    "--instance 0"), 2);
    cr_expect(strstr(out, "few.txt") && strstr(out, "3 distinct words") && strstr(out, "hint:"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "$L show task needle --protocol ruler_cwe --data words.txt --length 100000 "
                    "--instance 0"), 2, "a list the length outgrows");
    cr_expect(strstr(out, "words.txt") && strstr(out, "room to spare") && strstr(out, "hint:"), "%s", out);
}

/* On stories260K at 2,048 and 3,072, vt, fwe and cwe: the prompts + the
** budget (30, 50, 120) within L, each output storing its golds (vt's five
** variables, fwe's three words, cwe's ten) and scored 1 only when all are in
** it. */
Test(peer_ruler, synthetic_cells_fit_model_tokens, .init = setup, .fini = teardown, .timeout = 300)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    cwe_list_file();
    run_stories("  - needle: {protocol: ruler_vt, samples: 3}\n  - needle: {protocol: ruler_fwe, samples: 3}\n"
                "  - needle: {protocol: ruler_cwe, data: words.txt, samples: 3}\n", "2048, 3072");
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db \"select count(*) from runs r join metrics m on m.run_id = r.id, "
                    "metrics m2 where m.name = 'prompt_tokens_max' and m.value - 1 + m2.value <= r.length and "
                    "r.status = 'ok' and m2.run_id = r.id and m2.name = 'max_new_tokens'\""), 0, "%s", out);
    cr_expect_eq(atol(out), 6, "%s", out);
    int multi, rows = expect_outputs_scored(&multi);
    cr_expect_eq(rows, 18);
    cr_expect_eq(multi, 18, "five golds (vt), three (fwe) or ten (cwe) an output");
}
