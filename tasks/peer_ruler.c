/*
** tasks/peer_ruler.c - RULER's needle-in-a-haystack test cases (Hsieh et al.
** 2024, "RULER: What's the real context size of your long-context language
** models?", arXiv 2404.06654), made as its scripts/data/synthetic/niah.py
** makes them for three tasks of scripts/synthetic.yaml (peer.h,
** docs/tasks.md#needle-ruler, docs/tasks.md#needle-ruler-essays):
**
**   niah_single_1   noise haystack (one filler line a unit), number values
**   niah_single_2   essay haystack (one word a unit), number values
**   niah_single_3   essay haystack, UUID values
**
** One needle "One of the special magic {numbers|uuids} for KEY is: VALUE.",
** the single-needle template with RULER's singular replacements and its
** answer prefix, and as many haystack units as keep the prompt's tokens + 128
** within the length (a bisection, as niah.py's). The essay haystack follows
** niah.py: every run of white space one space, split into words at the
** spaces, the first n words (repeated while the essays are shorter) joined by
** spaces and stripped, split into sentences, the needle put between sentences
** at int(sentences * depth / 100), depth one of its 40 rounded linspace
** points, the pieces joined by spaces.
**
** To add RULER's other niah variants: a struct ruler_variant, its maker
** here, and a row in tasks/protocols.c.
*/
#include "tasks/peer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/core/rng.h"
#include "harness/engine/tokenizers/tokenizer.h"

#define RULER_BUDGET 128        /* constants.py: tokens_to_generate */
#define RULER_DEPTHS 40         /* niah.py: np.linspace(0, 100, num=40) rounded */

/* A row of scripts/synthetic.yaml. */
struct ruler_variant {
    const char *task;   /* RULER's name */
    int essay;          /* type_haystack: 1 essay, 0 noise */
    int uuid;           /* type_needle_v: 1 uuids, 0 numbers */
};

static const struct ruler_variant niah_single_1 = {"niah_single_1", 0, 0},
                                  niah_single_2 = {"niah_single_2", 1, 0},
                                  niah_single_3 = {"niah_single_3", 1, 1};

/* One test case's draws. */
struct ruler_draw {
    char key[48];       /* type_needle_k words: adjective-noun */
    char value[40];     /* 7 digits, or a version-4 UUID */
    double line;        /* noise: where the needle goes among n lines, u in [0, 1) (random.sample(range(n), 1)) */
    int depth;          /* essay: percent, one of the 40 DEPTHS (random.sample(DEPTHS, 1)) */
    char needle[160];   /* the needle sentence */
};

/* Philox on (key, sample): the key word, the value, then the place. The
** noise draws come first in this order so niah_single_1's cases are those
** it always had. */
static void ruler_draw(const struct ruler_variant *v, uint64_t key, long sample, struct ruler_draw *d)
{
    static const char *const adj[] = {"able", "bold", "brave", "calm", "dark", "eager", "fair", "glad", "grand",
                                      "happy", "keen", "kind", "loud", "mild", "neat", "odd", "pale", "proud",
                                      "quick", "quiet", "rare", "shy", "tidy", "wild"};
    static const char *const noun[] = {"ant", "bear", "bird", "boat", "cake", "cat", "cloud", "crow", "deer", "door",
                                       "fish", "fox", "frog", "goat", "hill", "kite", "lake", "lamp", "lion", "moon",
                                       "owl", "pear", "rose", "swan"};
    struct lx_rng r;
    lx_rng_init(&r, key ^ 0x72756c65726e6961ULL, (uint32_t)sample, LX_RNG_DATA);
    snprintf(d->key, sizeof d->key, "%s-%s", adj[(int)(lx_rng_uniform(&r) * 24)], noun[(int)(lx_rng_uniform(&r) * 24)]);
    if (v->uuid) {      /* str(uuid.UUID(int=random.getrandbits(128), version=4)) */
        unsigned char b[16];
        for (int i = 0; i < 4; i++) {
            uint32_t w = lx_rng_u32(&r);
            for (int j = 0; j < 4; j++)
                b[4 * i + j] = (unsigned char)(w >> (24 - 8 * j));
        }
        b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);     /* the version */
        b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);     /* the RFC 4122 variant */
        char *p = d->value;
        for (int i = 0; i < 16; i++)
            p += sprintf(p, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", b[i]);
    } else {            /* random.randint(10**6, 10**7 - 1) */
        snprintf(d->value, sizeof d->value, "%ld", 1000000 + (long)(lx_rng_uniform(&r) * 9000000));
    }
    double u = lx_rng_uniform(&r);
    d->line = u;
    d->depth = (int)lround(100.0 * (double)(int)(u * RULER_DEPTHS) / (RULER_DEPTHS - 1));
    snprintf(d->needle, sizeof d->needle, "One of the special magic %s for %s is: %s.", v->uuid ? "uuids" : "numbers",
             d->key, d->value);
}

/* The essays as niah.py's haystack: re.sub(r'\s+', " ", essay).split(" "),
** the words pointing into text. */
struct essay {
    struct lx_buf text;     /* the essays' bytes */
    long (*word)[2];        /* (n, 2) start and end of word i in text */
    long n;
};

/* Bytes of the white-space character (Python's str.isspace) at s[0, n), 0 when none. */
static int py_space(const unsigned char *s, size_t n)
{
    if (s[0] == ' ' || (s[0] >= 0x09 && s[0] <= 0x0d) || (s[0] >= 0x1c && s[0] <= 0x1f))
        return 1;
    if (n >= 2 && s[0] == 0xc2 && (s[1] == 0x85 || s[1] == 0xa0))
        return 2;
    if (n < 3)
        return 0;
    unsigned c = (unsigned)(s[0] & 0x0f) << 12 | (unsigned)(s[1] & 0x3f) << 6 | (unsigned)(s[2] & 0x3f);
    int three = (s[0] & 0xf0) == 0xe0;
    return three && (c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
                     c == 0x205f || c == 0x3000) ? 3 : 0;
}

/* e->text's words, at most max of them. */
static void essay_words(struct essay *e, long max)
{
    const unsigned char *s = (const unsigned char *)lx_buf_str(&e->text);
    long n = (long)e->text.len, at = 0, k;
    for (long cap = 0; e->n < max;) {
        long end = at;
        while (end < n && py_space(s + end, (size_t)(n - end)) == 0)
            end++;
        if (e->n == cap)
            e->word = lx_xrealloc(e->word, sizeof *e->word * (size_t)(cap = cap ? 2 * cap : 1024));
        e->word[e->n][0] = at, e->word[e->n++][1] = end;
        if (end == n)
            break;
        for (at = end; at < n && (k = py_space(s + at, (size_t)(n - at))) > 0;)
            at += k;
    }
}

int lx_peer_ruler_essays(const char *path, struct lx_buf *out, struct lx_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return lx_err(err, LX_EIO, "RULER essays '%s': %s\n  hint: data: names RULER's PaulGrahamEssays.json or a "
                      "directory of .txt files (docs/tasks.md#needle-ruler-essays)", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return lx_peer_haystack(path, out, err);
    struct lx_json *doc = NULL;
    const struct lx_jv *v;
    const char *s;
    size_t n = 0;
    int rc = lx_json_load(&doc, path, 0, err);
    if (rc == LX_OK && lx_json_type(lx_json_root(doc)) != LX_JSON_OBJECT)
        rc = lx_json_err(err, doc, lx_json_root(doc), "not a JSON object");
    if (rc == LX_OK && (rc = lx_json_need(doc, lx_json_root(doc), "text", LX_JSON_STRING, &v, err)) == LX_OK &&
        (rc = lx_json_str(doc, v, &s, &n, err)) == LX_OK)
        lx_buf_putn(out, s, n);
    lx_json_free(doc);
    if (rc == LX_OK && n == 0)
        rc = lx_err(err, LX_EINVAL, "%s: its \"text\" is empty", path);
    if (rc < 0 && !strstr(err->msg, "hint:"))
        lx_err(err, rc, "%s\n  hint: data: names RULER's PaulGrahamEssays.json ({\"text\": ...}, written by its "
               "scripts/data/synthetic/json/download_paulgraham_essay.py) or a directory of .txt files "
               "(docs/tasks.md#needle-ruler-essays)", err->msg);
    return rc;
}

/* Is w[0, n) one of Punkt's common English abbreviations (lower-cased)? */
static int is_abbrev(const char *w, long n)
{
    static const char *const abbr[] = {"mr", "mrs", "ms", "dr", "st", "jr", "sr", "vs", "etc", "prof", "inc", "ltd",
                                       "co", "corp", "no", "vol", "jan", "feb", "mar", "apr", "jun", "jul", "aug",
                                       "sep", "sept", "oct", "nov", "dec", "gen", "col", "capt", "lt", "sgt", "rev",
                                       "hon", "gov", "sen", "rep", "mt", "ft", "approx", "dept", "fig", "cf"};
    char low[8];
    if (n < 1 || n >= (long)sizeof low)
        return 0;
    for (long i = 0; i < n; i++)
        low[i] = (char)(w[i] >= 'A' && w[i] <= 'Z' ? w[i] - 'A' + 'a' : w[i]);
    low[n] = 0;
    for (size_t i = 0; i < sizeof abbr / sizeof *abbr; i++)
        if (strcmp(low, abbr[i]) == 0)
            return 1;
    return 0;
}

static int one_of(const char *set, char c)
{
    return c && strchr(set, c);
}

/* Does the token t[0, n), followed by the token next (its first byte), end a
** sentence? Punkt's rules, less its trained model: a token ending in '.',
** '?' or '!' (closing quotes and brackets may follow) ends one, but for a
** period after a known abbreviation, an initial, a word with inner periods,
** an ellipsis before a lower-case word, or a number before a lower-case word. */
static int ends_sentence(const char *t, long n, char next)
{
    while (n > 0 && one_of("\"')]}", t[n - 1]))
        n--;
    if (n == 0 || !one_of(".?!", t[n - 1]))
        return 0;
    if (t[n - 1] != '.')
        return 1;
    if (n >= 2 && t[n - 2] == '.')     /* an ellipsis: a break before a capital */
        return next >= 'A' && next <= 'Z';
    long a = 0, m = n - 1;              /* the word before the period, its opening marks dropped */
    while (a < m && one_of("\"'([{`", t[a]))
        a++;
    long dash = m;
    while (dash > a && t[dash - 1] != '-')
        dash--;
    int digits = a < m, internal = 0;
    for (long i = a; i < m; i++)
        digits &= (t[i] >= '0' && t[i] <= '9') || t[i] == ',', internal |= t[i] == '.';
    int initial = m - a == 1 && ((t[a] | 0x20) >= 'a' && (t[a] | 0x20) <= 'z');
    if (internal || initial || is_abbrev(t + a, m - a) || is_abbrev(t + dash, m - dash))
        return 0;
    return !(digits && next >= 'a' && next <= 'z');
}

long lx_peer_sentences(const char *s, long n, long (*span)[2])
{
    long ns = 0, start = -1;
    for (long at = 0; at < n;) {
        if (s[at] == ' ') {
            at++;
            continue;
        }
        long end = at;
        while (end < n && s[end] != ' ')
            end++;
        long next = end;
        while (next < n && s[next] == ' ')
            next++;
        if (start < 0)
            start = at;
        if (next == n || ends_sentence(s + at, end - at, s[next])) {
            span[ns][0] = start, span[ns++][1] = end;
            start = -1;
        }
        at = next;
    }
    return ns;
}

/* RULER's single-needle template around context: head, then the caller's
** context, then tail (tail = 1). */
static void ruler_frame(struct lx_buf *b, const struct ruler_variant *v, const struct ruler_draw *d, int tail)
{
    const char *type = v->uuid ? "uuid" : "number";
    if (!tail)
        lx_buf_printf(b, "A special magic %s is hidden within the following text. Make sure to memorize it. I will "
                      "quiz you about the %s afterwards.\n", type, type);
    else
        lx_buf_printf(b, "\nWhat is the special magic %s for %s mentioned in the provided text? The special magic "
                      "%s for %s mentioned in the provided text is", type, d->key, type, d->key);
}

/* The noise context: n filler lines, the needle before line int(u n). */
static void noise_context(struct lx_buf *b, const struct ruler_draw *d, long n)
{
    long at = (long)(d->line * (double)n);
    for (long i = 0; i <= n; i++) {
        if (i == at)
            lx_buf_printf(b, "%s%s", d->needle, i < n ? "\n" : "");
        if (i < n)
            lx_buf_printf(b, "%s%s", "The grass is green. The sky is blue. The sun is yellow. Here we go. There and "
                          "back again.", i + 1 < n ? "\n" : "");
    }
}

/* The essay context of n words; scratch holds the joined words. */
static void essay_context(struct lx_buf *b, const struct essay *e, const struct ruler_draw *d, long n,
                          struct lx_buf *scratch)
{
    lx_buf_reset(scratch);
    for (long i = 0; i < n; i++) {     /* " ".join((haystack * repeats)[:n]) */
        const long *w = e->word[i % e->n];
        if (i)
            lx_buf_putn(scratch, " ", 1);
        lx_buf_putn(scratch, e->text.s + w[0], (size_t)(w[1] - w[0]));
    }
    const char *t = lx_buf_str(scratch);
    long a = 0, z = (long)scratch->len;
    while (a < z && t[a] == ' ')      /* .strip(): only spaces are left */
        a++;
    while (z > a && t[z - 1] == ' ')
        z--;
    long (*span)[2] = lx_xmalloc(sizeof *span * (size_t)((z - a) / 2 + 1));
    long ns = lx_peer_sentences(t + a, z - a, span), at = (long)((double)ns * ((double)d->depth / 100.0));
    for (long i = 0; i <= ns; i++) {    /* " ".join([sents[:at] joined, needle, sents[at:] joined]) */
        if (i == at)
            lx_buf_printf(b, " %s ", d->needle);
        if (i < ns)
            lx_buf_printf(b, "%s%.*s", i && i != at ? " " : "", (int)(span[i][1] - span[i][0]), t + a + span[i][0]);
    }
    free(span);
}

/* The prompt with n haystack units. */
static void ruler_prompt(struct lx_buf *b, const struct ruler_variant *v, const struct ruler_draw *d,
                         const struct essay *e, long n, struct lx_buf *scratch)
{
    lx_buf_reset(b);
    ruler_frame(b, v, d, 0);
    if (v->essay)
        essay_context(b, e, d, n, scratch);
    else
        noise_context(b, d, n);
    ruler_frame(b, v, d, 1);
}

/* tk's tokens of text, BOS not counted; < 0 on text tk refuses. */
static long ruler_tokens(const struct lx_tokenizer *tk, const struct lx_buf *b, struct lx_error *err)
{
    int *ids = NULL;
    long n = lx_tok_prompt(lx_tok_or_byte(tk), lx_buf_str(b), b->len, &ids, err);
    free(ids);
    return n < 0 ? n : n - 1;
}

static int ruler_make(const struct ruler_variant *v, const char *data, long length, uint64_t key, long sample,
                      const struct lx_tokenizer *tk, struct lx_peer_case *out, struct lx_error *err)
{
    struct ruler_draw d;
    struct essay e = {0};
    struct lx_buf scratch = {0};
    ruler_draw(v, key, sample, &d);
    int rc = v->essay ? lx_peer_ruler_essays(data, &e.text, err) : LX_OK;
    if (rc == LX_OK && v->essay) {
        essay_words(&e, length + 1);    /* a word is a token at least: length of them never fit */
        int any = 0;
        for (long i = 0; i < e.n; i++)
            any |= e.word[i][1] > e.word[i][0];
        if (!any)
            rc = lx_err(err, LX_EINVAL, "ruler %s: the essays in '%s' hold only white space\n  hint: data: names "
                        "RULER's PaulGrahamEssays.json or a directory of .txt files (docs/tasks.md#needle-ruler-essays)",
                        v->task, data);
    }
    long lo = 0, hi = length, best = -1;    /* the most units that fit, by bisection */
    while (rc == LX_OK && lo <= hi) {
        long mid = lo + (hi - lo) / 2, t;
        ruler_prompt(&out->prompt, v, &d, &e, mid, &scratch);
        if ((t = ruler_tokens(tk, &out->prompt, err)) < 0)
            rc = (int)t;
        else if (t + RULER_BUDGET <= length)
            best = mid, lo = mid + 1;
        else
            hi = mid - 1;
    }
    if (rc == LX_OK && best < 1)
        rc = lx_err(err, LX_EINVAL, "ruler %s: length %ld leaves no room for one haystack %s beside the needle, the "
                    "question and the %d tokens to generate\n  hint: use a longer length", v->task, length,
                    v->essay ? "word" : "line", RULER_BUDGET);
    if (rc == LX_OK) {
        ruler_prompt(&out->prompt, v, &d, &e, best, &scratch);
        out->depth = v->essay ? d.depth / 100.0 : NAN;
        lx_peer_add_gold(out, d.value, strlen(d.value));
    }
    lx_buf_free(&e.text), lx_buf_free(&scratch);
    free(e.word);
    return rc;
}

int lx_peer_ruler_niah(const char *data, long length, uint64_t key, long sample, const struct lx_tokenizer *tk,
                       struct lx_peer_case *out, struct lx_error *err)
{
    (void)data;     /* a noise haystack */
    return ruler_make(&niah_single_1, "", length, key, sample, tk, out, err);
}

int lx_peer_ruler_niah_single_2(const char *data, long length, uint64_t key, long sample,
                                const struct lx_tokenizer *tk, struct lx_peer_case *out, struct lx_error *err)
{
    return ruler_make(&niah_single_2, data, length, key, sample, tk, out, err);
}

int lx_peer_ruler_niah_single_3(const char *data, long length, uint64_t key, long sample,
                                const struct lx_tokenizer *tk, struct lx_peer_case *out, struct lx_error *err)
{
    return ruler_make(&niah_single_3, data, length, key, sample, tk, out, err);
}
