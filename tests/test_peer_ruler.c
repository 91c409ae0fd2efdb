/*
** tests/test_peer_ruler.c - RULER's essay-haystack needle tests
** (tasks/peer_ruler.c: niah_single_2 and _3 as `protocol:
** ruler_niah_single_2|3` on needle). The prompt is rebuilt here from
** niah.py's description, on a fixture of public-domain Austen sentences
** written by the test (white space of every kind, files joined in name
** order, repeated when short): whitespace runs made one space, split into
** words, the first n joined and stripped, split into sentences, the needle
** between sentences at int(sentences * depth / 100) for a depth of RULER's
** 40, the template around it; n the most words that keep the text's tokens
** + 128 within L. Then the fit in stories260K's tokens, the sentence rule,
** scoring with ruler_all, and the refusals. Then RULER's five multi-needle
** rows (multikey_1/2/3, multivalue, multiquery): each case read back from
** `show --text` and checked against niah.py's rule. vt, fwe and cwe are in
** test_peer_ruler_synth.c.
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

#define RULER_DEPTHS_TEST 40    /* niah.py: np.linspace(0, 100, num=40) */

/* The fixture's words: the files joined, each white-space run (ASCII or
** U+00A0) one space, split at the spaces (empty words at the ends kept). */
static long fixture_words(char ***words)
{
    char text[4096] = "";
    for (int i = 0; i < N_FILES; i++)
        strcat(text, essay_files[i][1]);
    long n = 0;
    *words = NULL;
    for (char *p = text;;) {
        char *e = p;
        while (*e && !strchr(" \t\r\n", *e) && strncmp(e, "\xc2\xa0", 2) != 0)
            e++;
        *words = realloc(*words, sizeof **words * (size_t)(n + 1));
        (*words)[n++] = strndup(p, (size_t)(e - p));
        if (!*e)
            break;
        while (*e && (strchr(" \t\r\n", *e) || strncmp(e, "\xc2\xa0", 2) == 0))
            e += *e == '\xc2' ? 2 : 1;
        p = e;
    }
    return n;
}

static int sentence_end(const char *w, size_t n)
{
    while (n > 0 && strchr("\"')", w[n - 1]))
        n--;
    return n > 0 && strchr(".?!", w[n - 1]);
}

/* The haystack of the first n words (cyclic), joined by spaces and
** stripped, in *t (static storage), and its sentences: sentence k is
** (*t)[at[k], end[k]). Returns their count. */
static long haystack_sentences(char **words, long n_words, long n, char **t, long **at, long **end)
{
    static char text[1 << 16];
    static long tok_at[1 << 13], tok_end[1 << 13], s_at[1 << 13], s_end[1 << 13];
    text[0] = 0;
    for (long i = 0; i < n; i++) {
        if (i)
            strcat(text, " ");
        strcat(text, words[i % n_words]);
    }
    *t = text;     /* strip */
    while (**t == ' ')
        (*t)++;
    size_t len = strlen(*t);
    while (len > 0 && (*t)[len - 1] == ' ')
        (*t)[--len] = 0;
    long nt = 0, ns = 0;    /* tokens between spaces, then sentences of tokens */
    for (long i = 0; i < (long)len;) {
        if ((*t)[i] == ' ') {
            i++;
            continue;
        }
        tok_at[nt] = i;
        while (i < (long)len && (*t)[i] != ' ')
            i++;
        tok_end[nt++] = i;
    }
    for (long k = 0, first = 0; k < nt; k++)
        if (k == nt - 1 || sentence_end(*t + tok_at[k], (size_t)(tok_end[k] - tok_at[k]))) {
            s_at[ns] = tok_at[first], s_end[ns++] = tok_end[k];
            first = k + 1;
        }
    *at = s_at, *end = s_end;
    return ns;
}

/* RULER's prompt with the first n words (cyclic) and the needle at depth d. */
static void expected_prompt(char *buf, size_t cap, char **words, long n_words, long n, int d, int uuid,
                            const char *key, const char *needle)
{
    char *t;
    long *s_at, *s_end, ns = haystack_sentences(words, n_words, n, &t, &s_at, &s_end);
    size_t len = strlen(t);
    long at = (long)((double)ns * (d / 100.0));
    const char *type = uuid ? "uuid" : "number";
    size_t w = (size_t)snprintf(buf, cap, "A special magic %s is hidden within the following text. Make sure to "
                                "memorize it. I will quiz you about the %s afterwards.\n", type, type);
    char *parts[3];     /* " ".join([" ".join(sents[:at]), needle, " ".join(sents[at:])]) */
    for (int p = 0; p < 3; p += 2) {
        parts[p] = calloc(len + 2, 1);
        for (long s = p ? at : 0, e = p ? ns : at, k = s; k < e; k++)
            snprintf(parts[p] + strlen(parts[p]), len + 2 - strlen(parts[p]), "%s%.*s", k > s ? " " : "",
                     (int)(s_end[k] - s_at[k]), t + s_at[k]);
    }
    w += (size_t)snprintf(buf + w, cap - w, "%s %s %s", parts[0], needle, parts[2]);
    snprintf(buf + w, cap - w, "\nWhat is the special magic %s for %s mentioned in the provided text? The special "
             "magic %s for %s mentioned in the provided text is", type, key, type, key);
    free(parts[0]), free(parts[2]);
}


static int is_uuid4(const char *s)
{
    if (strlen(s) != 36)
        return 0;
    for (int i = 0; i < 36; i++)
        if ((i == 8 || i == 13 || i == 18 || i == 23) ? s[i] != '-' : !strchr("0123456789abcdef", s[i]))
            return 0;
    return s[14] == '4' && strchr("89ab", s[19]) != NULL;
}

/* Instance k of the cell (protocol, data, L): the printed text is RULER's
** prompt for the shown depth with n words, where n + 1 words would not fit;
** the value is 7 digits or a version-4 UUID; the depth is on RULER's grid.
** Returns the depth's index in the grid. */
static int expect_case(const char *protocol, const char *data, int uuid, long L, int k, char **words, long n_words)
{
    static char want[1 << 17], next[1 << 17];
    char value[64], key[64], needle[200];
    double depth;
    shown_case(protocol, data, L, k, value, sizeof value, &depth);
    cr_expect(uuid ? is_uuid4(value) : strlen(value) == 7 && value[0] >= '1', "%s", value);
    int d = (int)lround(depth * 100), grid = -1;
    for (int i = 0; i < RULER_DEPTHS_TEST; i++)  /* np.round(np.linspace(0, 100, 40)) */
        grid = (int)lround(100.0 * i / 39) == d ? i : grid;
    cr_assert(grid >= 0 && fabs(depth * 100 - d) < 1e-9, "depth %g is not on RULER's grid", depth);
    cr_assert_eq(sh(out, sizeof out, "$L show task needle --protocol %s --data %s --length %ld --instance %d --text",
                    protocol, data, L, k), 0, "%s", out);
    const char *q = strstr(out, uuid ? "\nWhat is the special magic uuid for " : "\nWhat is the special magic number for ");
    cr_assert_not_null(q, "%s", out);
    cr_assert_eq(sscanf(strstr(q, " for ") + 5, "%63s", key), 1);
    snprintf(needle, sizeof needle, "One of the special magic %s for %s is: %s.", uuid ? "uuids" : "numbers", key,
             value);
    long n = 0;     /* the most words that fit, in byte tokens (BOS not counted) */
    for (;; n++) {
        expected_prompt(next, sizeof next, words, n_words, n + 1, d, uuid, key, needle);
        if (strlen(next) + 128 > (size_t)L)
            break;
    }
    cr_assert_gt(n, 0, "L %ld", L);
    expected_prompt(want, sizeof want, words, n_words, n, d, uuid, key, needle);
    cr_expect_str_eq(out, want, "%s L %ld instance %d (depth %d, %ld words)", protocol, L, k, d, n);
    return grid;
}

static void free_words(char **words, long n)
{
    for (long i = 0; i < n; i++)
        free(words[i]);
    free(words);
}

/* Both variants at three lengths (the last repeating the fixture several
** times), six instances each; the 36 cases draw several of the 40 depths. */
Test(peer_ruler, essay_prompt_is_the_peers_rule, .init = setup, .fini = teardown, .timeout = 120)
{
    static const long lengths[] = {700, 2000, 6000};
    char **words;
    long n_words = fixture_words(&words);
    cr_assert_gt(n_words, 100);
    write_essays("ess");
    int seen[RULER_DEPTHS_TEST] = {0}, distinct = 0;
    for (int uuid = 0; uuid < 2; uuid++)
        for (int li = 0; li < 3; li++)
            for (int k = 0; k < 6; k++)
                seen[expect_case(uuid ? "ruler_niah_single_3" : "ruler_niah_single_2", "ess", uuid, lengths[li], k,
                                 words, n_words)] = 1;
    for (int i = 0; i < RULER_DEPTHS_TEST; i++)
        distinct += seen[i];
    cr_expect_geq(distinct, 8, "36 cases drew only %d of the 40 depths", distinct);
    free_words(words, n_words);
}

/* RULER's own download, PaulGrahamEssays.json ({"text": the files joined}),
** reads as the directory does (the draws differ: data is in the cell's key). */
Test(peer_ruler, essay_json_reads_as_the_directory, .init = setup, .fini = teardown, .timeout = 60)
{
    char **words;
    long n_words = fixture_words(&words);
    write_essays("ess");
    cr_assert_eq(sh(out, sizeof out, "cat ess/*.txt | /usr/bin/python3 -c 'import json, sys; "
                    "json.dump({\"text\": sys.stdin.buffer.read().decode()}, open(\"e.json\", \"w\"))'"), 0,
                 "%s", out);
    for (int k = 0; k < 4; k++)
        expect_case("ruler_niah_single_3", "e.json", 1, 1500, k, words, n_words);
    free_words(words, n_words);
}

/* Punkt's rule on hand-made cases (what nltk's English sent_tokenize splits). */
Test(peer_ruler, sentences_follow_punkt)
{
    static const struct {
        const char *text;
        int n;
        const char *first;  /* the first sentence */
    } cases[] = {
        {"Hello there. How are you? Fine! Thanks.", 4, "Hello there."},
        {"Mr. Smith met Dr. Watson. They talked.", 2, "Mr. Smith met Dr. Watson."},
        {"He said \"Stop.\" Then he left.", 2, "He said \"Stop.\""},
        {"\"Why?\" she asked. Nobody knew.", 3, "\"Why?\""},
        {"It was 5 p.m. on Monday. Next day came.", 2, "It was 5 p.m. on Monday."},
        {"J. R. Tolkien wrote. Yes.", 2, "J. R. Tolkien wrote."},
        {"The year was 1990. It rained.", 2, "The year was 1990."},
        {"See chapter 3. and so on.", 1, "See chapter 3. and so on."},
        {"Wait... what happened? Nothing... Then it rained.", 3, "Wait... what happened?"},
        {"A self-styled gen. of note. He came (late.) Then left", 3, "A self-styled gen. of note."},
        {"no end here", 1, "no end here"},
        {"one.  two", 2, "one."},
        {"", 0, NULL},
    };
    long span[64][2];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *t = cases[i].text;
        long ns = lx_peer_sentences(t, (long)strlen(t), span);
        cr_expect_eq(ns, cases[i].n, "'%s': %ld sentences", t, ns);
        if (ns > 0 && cases[i].first)
            cr_expect(strlen(cases[i].first) == (size_t)(span[0][1] - span[0][0]) &&
                      strncmp(t + span[0][0], cases[i].first, strlen(cases[i].first)) == 0,
                      "'%s': the first sentence is '%.*s'", t, (int)(span[0][1] - span[0][0]), t + span[0][0]);
    }
}


static long longest_word(char **words, long n_words)
{
    long longest = 0;
    for (long i = 0; i < n_words; i++)
        longest = (long)strlen(words[i]) > longest ? (long)strlen(words[i]) : longest;
    return longest;
}

/* On stories260K (tok512) at 512 and 1024: every prompt's tokens (BOS not
** counted) + 128 fit L, and no prompt is shorter than one more word could
** make it (the longest fixture word's bytes + the space, each a token at
** worst, + 4 for the needle's seams, which may merge differently once the
** needle moves a sentence); stored depths on RULER's grid; outputs scored
** with ruler_all (the gold inside the output, case folded). */
Test(peer_ruler, essay_cell_fits_model_tokens, .init = setup, .fini = teardown, .timeout = 300)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    run_stories("  - needle: {protocol: ruler_niah_single_2, data: ess, samples: 4}\n"
                "  - needle: {protocol: ruler_niah_single_3, data: ess, samples: 4}\n", "512, 1024");
    char **words;
    long n_words = fixture_words(&words), longest = longest_word(words, n_words);
    free_words(words, n_words);
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db \"select r.length, max(case when m.name = 'prompt_tokens_max' "
                    "then m.value end), max(case when m.name = 'prompt_tokens_min' then m.value end), max(case when "
                    "m.name = 'max_new_tokens' then m.value end) from runs r join metrics m on m.run_id = r.id group "
                    "by r.id order by r.length\""), 0, "%s", out);
    int cells = 0;
    for (char *p = out; *p; cells++) {
        long L;
        double most, least, budget;
        cr_assert_eq(sscanf(p, "%ld|%lf|%lf|%lf", &L, &most, &least, &budget), 4, "%s", out);
        cr_expect_eq(budget, 128);
        cr_expect_leq((long)most - 1 + 128, L, "L %ld: the longest prompt overflows (%g tokens)", L, most);
        cr_expect_gt((long)least - 1 + 128 + longest + 1 + 4, L, "L %ld: the shortest prompt (%g tokens) had room "
                     "for another word", L, least);
        p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p);
    }
    cr_expect_eq(cells, 4);
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db \"select count(*) from outputs where depth is null\""), 0);
    cr_expect_eq(atol(out), 0, "every output has its depth");
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db \"select distinct round(depth * 100, 6) from outputs\""), 0);
    for (char *p = out; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
        double d = strtod(p, NULL);
        int on = 0;
        for (int i = 0; i < RULER_DEPTHS_TEST; i++)
            on |= fabs(d - (double)lround(100.0 * i / 39)) < 1e-6;
        cr_expect(on, "stored depth %g%% is not on RULER's grid", d);
    }
    int multi, rows = expect_outputs_scored(&multi);
    cr_expect_eq(rows, 16);
    cr_expect_eq(multi, 0, "one gold an output");
}

/* ruler_all through lenx grade with the presets' fields (RULER's prediction
** files: outputs, pred): a UUID found whatever its case, a number missed. */
Test(peer_ruler, essay_presets_grade_with_ruler_all, .init = setup, .fini = teardown)
{
    write_file("p.jsonl", "{\"outputs\": [\"0f8c43a1-96b2-4c1e-8d3b-0a1b2c3d4e5f\"], \"pred\": \" 0F8C43A1-96B2-4C1E-"
                          "8D3B-0A1B2C3D4E5F.\"}\n{\"outputs\": [\"0f8c43a1-96b2-4c1e-8d3b-0a1b2c3d4e5f\"], \"pred\": "
                          "\"0f8c43a1\"}\n");
    cr_assert_eq(sh(out, sizeof out, "$L grade --task needle --protocol ruler_niah_single_3 --predictions p.jsonl"), 0,
                 "%s", out);
    cr_expect(strstr(out, "\"scores\": [1, 0]") && strstr(out, "\"mean\": 0.5"), "%s", out);
    write_file("q.jsonl", "{\"outputs\": [\"4821307\"], \"pred\": \"is 4821307\"}\n");
    cr_assert_eq(sh(out, sizeof out, "$L grade --task needle --protocol ruler_niah_single_2 --predictions q.jsonl"), 0,
                 "%s", out);
    cr_expect(strstr(out, "\"mean\": 1"), "%s", out);
}

/* No data, a path that is not there (exit 3, as an unreadable file), a
** directory without .txt files, essays of white space only, a JSON without
** "text", a length with no room (exit 2): each with the path and a hint. */
Test(peer_ruler, essay_errors, .init = setup, .fini = teardown, .timeout = 60)
{
    static const char show[] = "$L show task needle --protocol ruler_niah_single_2 --instance 0 --text";
    int rc = sh(out, sizeof out, "%s --length 1000", show);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "data: PATH") && strstr(out, "PaulGrahamEssays.json") && strstr(out, "hint:"), "%s", out);
    rc = sh(out, sizeof out, "%s --length 1000 --data nowhere", show);
    cr_expect_eq(rc, 3, "a path that cannot be read, as any file lenx cannot read: %s", out);
    cr_expect(strstr(out, "nowhere") && strstr(out, "PaulGrahamEssays.json") && strstr(out, "hint:"), "%s", out);
    rc = sh(out, sizeof out, "mkdir -p empty && touch empty/notes.md && %s --length 1000 --data empty", show);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "empty'") && strstr(out, "no .txt file") && strstr(out, "hint:"), "%s", out);
    rc = sh(out, sizeof out, "mkdir -p blank && printf ' \\n\\t\\r\\n' > blank/a.txt && %s --length 1000 --data blank",
            show);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "blank") && strstr(out, "only white space") && strstr(out, "hint:"), "%s", out);
    write_file("bad.json", "{\"txt\": \"An essay.\"}");
    rc = sh(out, sizeof out, "%s --length 1000 --data bad.json", show);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "bad.json") && strstr(out, "text") && strstr(out, "hint:"), "%s", out);
    write_essays("ess");
    rc = sh(out, sizeof out, "%s --length 200 --data ess", show);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "length 200") && strstr(out, "no room") && strstr(out, "hint:"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "%s --length 1000 --data ess", show), 0, "%s", out);
}

/* ---- RULER's other niah tasks: multikey_1/2/3, multivalue, multiquery ---- */

/* The needle sentence at s ("One of the special magic TYPE for K is: V.") into
** k and v; its bytes, 0 when s does not start with one. */
static size_t parse_needle(const char *s, const char *type, char *k, char *v)
{
    char head[64];
    snprintf(head, sizeof head, "One of the special magic %s for ", type);
    size_t h = strlen(head);
    const char *is = strncmp(s, head, h) == 0 ? strstr(s + h, " is: ") : NULL, *dot = is ? strchr(is + 5, '.') : NULL;
    if (!dot || is - (s + h) >= 48 || dot - (is + 5) >= 40 || memchr(s, '\n', (size_t)(dot - s)))
        return 0;
    snprintf(k, 48, "%.*s", (int)(is - (s + h)), s + h);
    snprintf(v, 40, "%.*s", (int)(dot - (is + 5)), is + 5);
    return (size_t)(dot + 1 - s);
}

/* An adjective-noun key of lower-case letters, or a version-4 UUID. */
static int key_shape(const char *k, int uuid)
{
    if (uuid)
        return is_uuid4(k);
    const char *dash = strchr(k, '-');
    size_t n = strlen(k);
    return dash && dash > k && (size_t)(dash - k) + 1 < n && strspn(k, "abcdefghijklmnopqrstuvwxyz-") == n &&
           !strchr(dash + 1, '-');
}

static int value_shape(const char *v, int uuid)
{
    return uuid ? is_uuid4(v) : strlen(v) == 7 && strspn(v, "0123456789") == 7 && v[0] != '0';
}

/* The question RULER asks for the keys q (n of them), answer prefix included. */
static void question(char *buf, size_t cap, const char *type, int plural, char q[][48], int n)
{
    char keys[256] = "";
    for (int i = 0; i < n; i++)
        snprintf(keys + strlen(keys), sizeof keys - strlen(keys), "%s%s", i == 0 ? "" : i + 1 < n ? ", " : ", and ",
                 q[i]);
    snprintf(buf, cap, "\nWhat %s the special magic %s%s for %s mentioned in the provided text? The special magic "
             "%s%s for %s mentioned in the provided text %s", plural ? "are all" : "is", type, plural ? "s" : "", keys,
             type, plural ? "s" : "", keys, plural ? "are" : "is");
}

/* The text of instance k, its head checked: RULER's template (plural when
** several values are asked); returns the context's start. */
static const char *case_text(const char *protocol, const char *data, long L, int k, const char *type, int plural)
{
    char head[300];
    cr_assert_eq(sh(out, sizeof out, "$L show task needle --protocol %s --data %s --length %ld --instance %d --text",
                    protocol, data, L, k), 0, "%s", out);
    snprintf(head, sizeof head, "%s special magic %s%s %s hidden within the following text. Make sure to memorize it. "
             "I will quiz you about the %s%s afterwards.\n", plural ? "Some" : "A", type, plural ? "s" : "",
             plural ? "are" : "is", type, plural ? "s" : "");
    cr_assert(strncmp(out, head, strlen(head)) == 0, "%s: %.200s", protocol, out);
    return out + strlen(head);
}

/* The keys of the question ending text (parsed from "for K1, K2, and K3
** mentioned"); checks the whole question; returns their count. */
static int asked_keys(const char *text, const char *type, int plural, char q[][48])
{
    static char want[1024];
    const char *w = NULL;
    for (const char *p = strstr(text, "\nWhat "); p; p = strstr(p + 1, "\nWhat "))
        w = p;
    cr_assert_not_null(w, "no question in %.200s", text);
    const char *f = strstr(w, " for "), *e = f ? strstr(f, " mentioned in the provided text?") : NULL;
    cr_assert(f && e, "%s", w);
    char list[256];
    snprintf(list, sizeof list, "%.*s", (int)(e - f - 5), f + 5);
    int n = 0;
    for (char *tok = strtok(list, ","); tok && n < 4; tok = strtok(NULL, ",")) {
        while (*tok == ' ')
            tok++;
        if (strncmp(tok, "and ", 4) == 0)
            tok += 4;
        snprintf(q[n++], 48, "%s", tok);
    }
    question(want, sizeof want, type, plural, q, n);
    cr_assert_str_eq(w, want);
    return n;
}

/* Instance k of a line-haystack variant (multikey_2, multikey_3) in byte
** tokens: every context line a needle of the right shape, the asked key's
** exactly once with the gold as its value and never last (niah.py inserts it
** before a haystack line), the others' keys never the asked one; the prompt +
** 128 within L, with no room for one more line (the longest a line can be). */
static void expect_line_case(const char *protocol, int uuid, long L, int k, int *distinct_keys)
{
    static char text[1 << 17];
    char gold[64], q[4][48], key[48], value[48];
    double depth;
    shown_case(protocol, "''", L, k, gold, sizeof gold, &depth);
    const char *ctx = case_text(protocol, "''", L, k, uuid ? "uuid" : "number", 0);
    snprintf(text, sizeof text, "%s", out);
    ctx = text + (ctx - out);
    cr_assert_eq(asked_keys(text, uuid ? "uuid" : "number", 0, q), 1);
    const char *end = strstr(ctx, "\nWhat is the special magic ");
    long lines = 0, real = -1, longest = 0;
    char first_key[48] = "";
    *distinct_keys = 0;
    for (const char *p = ctx; p <= end; lines++) {
        size_t n = parse_needle(p, uuid ? "uuids" : "numbers", key, value);
        cr_assert(n > 0 && (p[n] == '\n'), "%s L %ld instance %d line %ld: '%.80s'", protocol, L, k, lines, p);
        cr_expect(key_shape(key, uuid) && value_shape(value, uuid), "%s: key '%s' value '%s'", protocol, key, value);
        if (strcmp(key, q[0]) == 0) {
            cr_expect_eq(real, -1, "%s L %ld instance %d: the asked key twice", protocol, L, k);
            real = lines;
            cr_expect_str_eq(value, gold);
        } else if (strcmp(key, first_key) != 0) {
            *distinct_keys += first_key[0] != 0;
            snprintf(first_key, sizeof first_key, "%s", key);
        }
        longest = (long)n > longest ? (long)n : longest;
        p += n + 1;
    }
    cr_assert_geq(real, 0, "%s L %ld instance %d: the asked key has no needle", protocol, L, k);
    cr_expect_lt(real, lines - 1, "%s: the needle goes before a haystack line, never after the last", protocol);
    long bytes = (long)strlen(text), most = uuid ? longest : (long)strlen("One of the special magic numbers for ") +
                                                           11 + (long)strlen(" is: ") + 7 + 1;
    cr_expect_leq(bytes + 128, L, "%s L %ld instance %d: %ld bytes", protocol, L, k, bytes);
    cr_expect_lt(L - 128 - bytes, most + 1, "%s L %ld instance %d: room for another line (%ld bytes)", protocol, L, k,
                 bytes);
}

Test(peer_ruler, needle_haystacks_are_the_peers_rule, .init = setup, .fini = teardown, .timeout = 120)
{
    static const long lengths[] = {800, 1500, 4000};
    for (int uuid = 0; uuid < 2; uuid++) {
        int varied = 0;
        for (int li = 0; li < 3; li++)
            for (int k = 0; k < 4; k++) {
                int distinct;
                expect_line_case(uuid ? "ruler_niah_multikey_3" : "ruler_niah_multikey_2", uuid, lengths[li], k,
                                 &distinct);
                varied += distinct > 0;
            }
        cr_expect_gt(varied, 8, "the other keys' needles differ from line to line");
    }
}

/* The essay variants: four needles each, pieces of whole sentences between
** them (" ".join([sents[:p1], n1, sents[p1:p2], ..., n4, sents[p4:]])), every
** p = int(sentences * depth / 100) for a depth on RULER's grid; the keys and
** golds as the variant asks; the prompt + 128 within L and no room for another
** word (the longest word + its space, + 1 a needle for the seams that may
** change as the needles move a sentence). */
struct essay_variant {
    const char *protocol;
    int keys;           /* distinct keys among the four needles */
    int asked;          /* keys asked */
};

static void expect_essay_case(const struct essay_variant *ev, long L, int k, char **words, long n_words, long longest,
                              long *first_at)
{
    static char ctx[1 << 17];
    char gold[256], q[4][48], key[4][48], value[4][48];
    double depth;
    int plural = ev->asked > 1 || ev->keys == 1;
    shown_case(ev->protocol, "ess", L, k, gold, sizeof gold, &depth);
    const char *c = case_text(ev->protocol, "ess", L, k, "number", plural);
    long bytes = (long)strlen(out);
    cr_assert_eq(asked_keys(out, "number", plural, q), ev->asked);
    const char *end = strstr(c, plural ? "\nWhat are all the special magic " : "\nWhat is the special magic ");
    snprintf(ctx, sizeof ctx, "%.*s", (int)(end - c), c);
    long off[4], stop[4], m = 0;
    for (const char *p = strstr(ctx, "One of the special"); p; p = strstr(p + 1, "One of the special")) {
        cr_assert_lt(m, 4, "%s: more than four needles", ev->protocol);
        size_t n = parse_needle(p, "numbers", key[m], value[m]);
        cr_assert(n > 0 && p > ctx && p[-1] == ' ' && p[n] == ' ', "%s: '%.100s'", ev->protocol, p);
        off[m] = p - ctx, stop[m++] = p - ctx + (long)n;
    }
    cr_assert_eq(m, 4, "%s L %ld instance %d: %ld needles", ev->protocol, L, k, m);
    static char joined[1 << 16];   /* the pieces between the needles, the non-empty ones joined by spaces */
    long piece[5][2];
    joined[0] = 0;
    for (int t = 0; t <= 4; t++) {
        piece[t][0] = t ? stop[t - 1] + 1 : 0, piece[t][1] = t < 4 ? off[t] - 1 : (long)strlen(ctx);
        cr_assert_leq(piece[t][0], piece[t][1]);
        if (piece[t][1] > piece[t][0])
            snprintf(joined + strlen(joined), sizeof joined - strlen(joined), "%s%.*s", joined[0] ? " " : "",
                     (int)(piece[t][1] - piece[t][0]), ctx + piece[t][0]);
    }
    char *t;
    long *s_at, *s_end, ns = 0, n = 0;
    for (n = 1; n < 100000; n++) {     /* the word count whose sentences, joined, are those pieces */
        ns = haystack_sentences(words, n_words, n, &t, &s_at, &s_end);
        static char h[1 << 16];
        h[0] = 0;
        for (long i = 0; i < ns; i++)
            snprintf(h + strlen(h), sizeof h - strlen(h), "%s%.*s", i ? " " : "", (int)(s_end[i] - s_at[i]),
                     t + s_at[i]);
        if (strcmp(h, joined) == 0 || strlen(h) > strlen(joined) + 64)
            break;
    }
    cr_assert_lt(n, 100000);
    long at = 0;    /* each piece is whole sentences: p_t where needle t goes */
    for (int p = 0; p <= 4; p++) {
        long len = piece[p][1] - piece[p][0], got = 0, from = at;
        for (; got < len && at < ns; at++)
            got += (at > from ? 1 : 0) + (s_end[at] - s_at[at]);
        cr_expect_eq(got, len, "%s L %ld instance %d: piece %d is not whole sentences", ev->protocol, L, k, p);
        if (p < 4) {
            int on = 0;
            for (int i = 0; i < RULER_DEPTHS_TEST; i++)
                on |= (long)((double)ns * ((double)lround(100.0 * i / 39) / 100.0)) == at;
            cr_expect(on, "%s: needle %d after sentence %ld of %ld: no depth of RULER's grid puts it there",
                      ev->protocol, p, at, ns);
            if (p == 0)
                *first_at = at;
        }
        if (ev->asked == 1 && ev->keys == 4 && p < 4 && strcmp(key[p], q[0]) == 0)
            cr_expect_eq((long)((double)ns * depth), at, "%s: the shown depth %g is the asked needle's", ev->protocol,
                         depth);
    }
    cr_expect_eq(at, ns, "%s L %ld instance %d: the pieces end with the haystack", ev->protocol, L, k);
    cr_expect_leq(bytes + 128, L);
    cr_expect_lt(L - 128 - bytes, longest + 1 + 4, "%s L %ld instance %d: room for another word", ev->protocol, L, k);
    char want[256] = "";    /* the golds: each asked key's values, in the question's order */
    int distinct = 0;
    for (int i = 0; i < 4; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= strcmp(key[i], key[j]) == 0;
        distinct += !seen;
    }
    cr_expect_eq(distinct, ev->keys, "%s: %d distinct keys", ev->protocol, distinct);
    for (int a = 0; a < ev->asked; a++)
        for (int i = 0; i < 4; i++)
            if (strcmp(key[i], q[a]) == 0 && (ev->keys == 4 || a == 0))
                snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", want[0] ? ", " : "", value[i]);
    if (ev->keys == 1) {    /* multivalue: the four values in the order drawn, which the text does not show */
        cr_expect_eq(strlen(gold), strlen(want), "%s: gold '%s', values '%s'", ev->protocol, gold, want);
        for (int i = 0; i < 4; i++)
            cr_expect_not_null(strstr(gold, value[i]), "%s: gold '%s' lacks %s", ev->protocol, gold, value[i]);
    } else {
        cr_expect_str_eq(gold, want, "%s L %ld instance %d", ev->protocol, L, k);
    }
}

Test(peer_ruler, essay_needles_are_the_peers_rule, .init = setup, .fini = teardown, .timeout = 300)
{
    static const struct essay_variant variants[] = {
        {"ruler_niah_multikey_1", 4, 1}, {"ruler_niah_multivalue", 1, 1}, {"ruler_niah_multiquery", 4, 4}};
    static const long lengths[] = {900, 2500, 6000};
    char **words;
    long n_words = fixture_words(&words), longest = longest_word(words, n_words);
    write_essays("ess");
    for (int v = 0; v < 3; v++) {
        long firsts[18];
        int distinct = 0;
        for (int li = 0; li < 3; li++)
            for (int k = 0; k < 6; k++) {
                long *f = &firsts[li * 6 + k];
                expect_essay_case(&variants[v], lengths[li], k, words, n_words, longest, f);
                int seen = 0;
                for (long *g = firsts; g < f; g++)
                    seen |= *g == *f;
                distinct += !seen;
            }
        cr_expect_geq(distinct, 4, "%s: the first needle sits at %d places in 18 cases", variants[v].protocol,
                      distinct);
    }
    free_words(words, n_words);
}

/* On stories260K at 512: the prompts fit its tokens (+ 128 within L); an
** output stores every gold asked (multivalue: four values joined by ", ") and
** scores the fraction of them inside it (ruler_all), as recomputed here. */
Test(peer_ruler, multi_cells_store_every_gold, .init = setup, .fini = teardown, .timeout = 300)
{
    if (!tokfile_stories())
        cr_skip_test("stories260K is not beside the checkout");
    run_stories("  - needle: {protocol: ruler_niah_multivalue, data: ess, samples: 3}\n"
                "  - needle: {protocol: ruler_niah_multikey_2, samples: 3}\n", "512");
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db \"select count(*) from runs r join metrics m on m.run_id = r.id "
                    "where m.name = 'prompt_tokens_max' and m.value - 1 + 128 <= 512 and r.status = 'ok'\""), 0, "%s",
                 out);
    cr_expect_eq(atol(out), 2, "both cells ok, every prompt within 512 - 128 tokens: %s", out);
    int multi, rows = expect_outputs_scored(&multi);
    cr_expect_eq(rows, 6);
    cr_expect_eq(multi, 3, "each multivalue output stores its four golds");
    cr_assert_eq(sh(out, sizeof out, "sqlite3 r.db \"select count(*) from runs r join metrics m on m.run_id = r.id "
                    "where m.name = 'acc' and m.value >= 0 and m.value <= 1\""), 0);
    cr_expect_eq(atol(out), 2);
}

/* ruler_all on several golds (RULER's outputs list): the fraction found. */
Test(peer_ruler, multi_presets_grade_the_fraction, .init = setup, .fini = teardown)
{
    write_file("p.jsonl", "{\"outputs\": [\"1111111\", \"2222222\", \"3333333\", \"4444444\"], \"pred\": \" 2222222, "
                          "4444444 and 5555555\"}\n{\"outputs\": [\"1111111\", \"2222222\"], \"pred\": "
                          "\"2222222 1111111\"}\n");
    cr_assert_eq(sh(out, sizeof out, "$L grade --task needle --protocol ruler_niah_multiquery --predictions p.jsonl"),
                 0, "%s", out);
    cr_expect(strstr(out, "\"scores\": [0.5, 1]") && strstr(out, "\"mean\": 0.75"), "%s", out);
}

/* The essay variants need their essays; a line haystack with no room for one
** line says so; both with a hint. */
Test(peer_ruler, multi_errors, .init = setup, .fini = teardown, .timeout = 60)
{
    int rc = sh(out, sizeof out, "$L show task needle --protocol ruler_niah_multiquery --instance 0 --length 2000");
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "data: PATH") && strstr(out, "hint:"), "%s", out);
    /* a word list, not a directory of essays: the message no longer says DIR against its own hint */
    rc = sh(out, sizeof out, "$L show task needle --protocol ruler_cwe --instance 0 --length 2000");
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "from a file or directory: name it with data: PATH\n  hint: a word list") && !strstr(out,
              "DIR"), "%s", out);
    rc = sh(out, sizeof out, "$L show task needle --protocol ruler_niah_multikey_3 --instance 0 --length 500");
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "niah_multikey_3") && strstr(out, "length 500") && strstr(out, "no room") &&
              strstr(out, "hint:"), "%s", out);
    rc = sh(out, sizeof out, "$L show task needle --protocol ruler_niah_multikey_2 --data x --instance 0 --length 900");
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "reads no data") && strstr(out, "hint:"), "%s", out);
}
