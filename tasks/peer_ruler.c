/*
** tasks/peer_ruler.c - RULER's needle-in-a-haystack test cases (Hsieh et al.
** 2024, "RULER: What's the real context size of your long-context language
** models?", arXiv 2404.06654), made as its scripts/data/synthetic/niah.py
** makes them for the eight niah tasks of scripts/synthetic.yaml (peer.h,
** docs/tasks.md#needle-ruler, docs/tasks.md#needle-ruler-essays,
** docs/tasks.md#needle-ruler-multi-needle-tasks):
**
**   niah_single_1     noise haystack (one filler line a unit), number values
**   niah_single_2     essay haystack (one word a unit), number values
**   niah_single_3     essay haystack, UUID values
**   niah_multikey_1   essay haystack, four keys' needles, one asked
**   niah_multikey_2   needle haystack (every line another key's needle), numbers
**   niah_multikey_3   needle haystack, UUID keys and values
**   niah_multivalue   essay haystack, one key with four values, all asked
**   niah_multiquery   essay haystack, four keys, all asked
**
** Needles "One of the special magic {numbers|uuids} for KEY is: VALUE.",
** niah.py's template (its singular replacements when one value is asked)
** with its answer prefix, and as many haystack units as keep the prompt's
** tokens + 128 within the length (a bisection, as niah.py's). The essay
** haystack follows niah.py: every run of white space one space, split into
** words at the spaces, the first n words (repeated while the essays are
** shorter) joined by spaces and stripped, split into sentences, the needles
** put between sentences at int(sentences * depth / 100) for distinct depths
** of its 40 rounded linspace points, the pieces joined by spaces. A line
** haystack's needles go before distinct lines, joined by newlines.
*/
#include "tasks/peer.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/core/rng.h"
#include "harness/engine/tokenizers/tokenizer.h"

#define RULER_BUDGET 128        /* constants.py: tokens_to_generate */
#define RULER_DEPTHS 40         /* niah.py: np.linspace(0, 100, num=40) rounded */
#define RULER_MAX_K 4           /* keys (num_needle_k) at most */
#define RULER_MAX_NEEDLES 4     /* needles (keys × values) at most */
#define RULER_MAX_SAMPLE 8      /* values one random.sample draws at most */
#define VT_HOPS 4               /* synthetic.yaml vt: num_hops (num_chains 1) */
#define VT_BUDGET 30            /* constants.py: variable_tracking's tokens_to_generate */
#define VT_EXAMPLE 500          /* variable_tracking.py main(): the example's max_seq_length */
#define FWE_BUDGET 50           /* constants.py: freq_words_extraction's tokens_to_generate */
#define FWE_WORDLEN 6           /* freq_words_extraction.py: coded_wordlen */
#define FWE_ZETA2 1.6449340668482264    /* scipy.special.zeta(2.0), pi^2 / 6 */
#define CWE_BUDGET 120          /* constants.py: common_words_extraction's tokens_to_generate */
#define CWE_COMMON 10           /* synthetic.yaml cwe: num_cw */

enum ruler_hay { RULER_NOISE, RULER_ESSAY, RULER_NEEDLE };      /* type_haystack */
enum ruler_type { RULER_NUMBERS, RULER_WORDS, RULER_UUIDS };    /* type_needle_k, type_needle_v */

/* A row of scripts/synthetic.yaml. */
struct ruler_variant {
    const char *task;   /* RULER's name */
    int hay;            /* enum ruler_hay */
    int type_k, type_v; /* enum ruler_type */
    int k, v, q;        /* num_needle_k (at least q: niah.py raises it), num_needle_v, num_needle_q */
};

static const struct ruler_variant niah_single_1 = {"niah_single_1", RULER_NOISE, RULER_WORDS, RULER_NUMBERS, 1, 1, 1},
    niah_single_2 = {"niah_single_2", RULER_ESSAY, RULER_WORDS, RULER_NUMBERS, 1, 1, 1},
    niah_single_3 = {"niah_single_3", RULER_ESSAY, RULER_WORDS, RULER_UUIDS, 1, 1, 1},
    niah_multikey_1 = {"niah_multikey_1", RULER_ESSAY, RULER_WORDS, RULER_NUMBERS, 4, 1, 1},
    niah_multikey_2 = {"niah_multikey_2", RULER_NEEDLE, RULER_WORDS, RULER_NUMBERS, 1, 1, 1},
    niah_multikey_3 = {"niah_multikey_3", RULER_NEEDLE, RULER_UUIDS, RULER_UUIDS, 1, 1, 1},
    niah_multivalue = {"niah_multivalue", RULER_ESSAY, RULER_WORDS, RULER_NUMBERS, 1, 4, 1},
    niah_multiquery = {"niah_multiquery", RULER_ESSAY, RULER_WORDS, RULER_NUMBERS, 4, 1, 4};

/* One test case's draws. */
struct ruler_draw {
    char key[RULER_MAX_K][48];                  /* an adjective-noun word or a UUID */
    char value[RULER_MAX_K][RULER_MAX_NEEDLES][40];     /* 7 digits, a word or a version-4 UUID */
    char needle[RULER_MAX_NEEDLES][160];        /* the needles in the order niah.py places them */
    int owner[RULER_MAX_NEEDLES];               /* the key of needle i */
    double place[RULER_MAX_NEEDLES];            /* u in [0, 1): where each goes (random.sample) */
    int query[RULER_MAX_K];                     /* the keys asked, in the question's order */
    uint64_t cell;                              /* the cell's key and the case: the needle */
    long sample;                                /* haystack's other keys come from them */
};

static const char *const ruler_types[] = {"numbers", "words", "uuids"};

/* A draw of type t (niah.py's generate_random) into s. */
static void ruler_random(int t, struct lx_rng *r, char *s, size_t cap)
{
    static const char *const adj[] = {"able", "bold", "brave", "calm", "dark", "eager", "fair", "glad", "grand",
                                      "happy", "keen", "kind", "loud", "mild", "neat", "odd", "pale", "proud",
                                      "quick", "quiet", "rare", "shy", "tidy", "wild"};
    static const char *const noun[] = {"ant", "bear", "bird", "boat", "cake", "cat", "cloud", "crow", "deer", "door",
                                       "fish", "fox", "frog", "goat", "hill", "kite", "lake", "lamp", "lion", "moon",
                                       "owl", "pear", "rose", "swan"};
    if (t == RULER_WORDS) {     /* the noun drawn first, as lenx always drew it */
        int n = (int)(lx_rng_uniform(r) * 24);
        snprintf(s, cap, "%s-%s", adj[(int)(lx_rng_uniform(r) * 24)], noun[n]);
    } else if (t == RULER_UUIDS) {      /* str(uuid.UUID(int=random.getrandbits(128), version=4)) */
        unsigned char b[16];
        for (int i = 0; i < 4; i++) {
            uint32_t w = lx_rng_u32(r);
            for (int j = 0; j < 4; j++)
                b[4 * i + j] = (unsigned char)(w >> (24 - 8 * j));
        }
        b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);     /* the version */
        b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);     /* the RFC 4122 variant */
        size_t at = 0;
        for (int i = 0; i < 16 && at < cap; i++)
            at += (size_t)snprintf(s + at, cap - at, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", b[i]);
    } else {    /* random.randint(10**6, 10**7 - 1) */
        snprintf(s, cap, "%ld", 1000000 + (long)(lx_rng_uniform(r) * 9000000));
    }
}

/* A key of type t unlike d's first n keys: lenx's 576 words repeat where
** RULER's (wonderwords' adjective × noun) hardly do, so a repeat draws again. */
static void ruler_key(int t, struct lx_rng *r, const struct ruler_draw *d, int n, char *s)
{
    for (int again = 1; again;) {
        ruler_random(t, r, s, 48);
        again = 0;
        for (int i = 0; i < n; i++)
            again |= strcmp(s, d->key[i]) == 0;
    }
}

/* m distinct values of [0, n) as random.sample(range(n), m) draws them, from
** the uniforms u: the t-th is the floor(u[t] (n - t))-th value not yet taken. */
static void ruler_sample(const double *u, int m, long n, long *out)
{
    long taken[RULER_MAX_SAMPLE];       /* ascending */
    for (int t = 0; t < m; t++) {
        long x = (long)(u[t] * (double)(n - t)), i = 0;
        for (; i < t && taken[i] <= x; i++)
            x++;
        memmove(taken + i + 1, taken + i, sizeof *taken * (size_t)(t - i));
        taken[i] = out[t] = x;
    }
}

/* v[0, n) in ascending order (n is a few places). */
static void sort_places(long *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            long t = v[j];
            v[j] = v[j - 1], v[j - 1] = t;
        }
}

/* Philox on (key, sample): the keys, each with its values, then the places,
** then the keys asked. One needle's draws come in this order, so that
** niah_single_1's cases are those it always had. The needles are shuffled by
** draws of the cell alone, as niah.py's random.Random(seed).shuffle is the
** same permutation for every case. */
static void ruler_draw(const struct ruler_variant *v, uint64_t key, long sample, struct ruler_draw *d)
{
    struct lx_rng r;
    int m = v->k * v->v;
    lx_rng_init(&r, key ^ 0x72756c65726e6961ULL, (uint32_t)sample, LX_RNG_DATA);
    for (int i = 0; i < v->k; i++) {
        ruler_key(v->type_k, &r, d, i, d->key[i]);
        for (int j = 0; j < v->v; j++) {
            ruler_random(v->type_v, &r, d->value[i][j], sizeof d->value[i][j]);
            d->owner[i * v->v + j] = i;
            snprintf(d->needle[i * v->v + j], sizeof d->needle[0], "One of the special magic %s for %s is: %s.",
                     ruler_types[v->type_v], d->key[i], d->value[i][j]);
        }
    }
    for (int t = 0; t < m; t++)
        d->place[t] = lx_rng_uniform(&r);
    double u[RULER_MAX_K] = {0};
    long asked[RULER_MAX_K] = {0};
    for (int t = 0; t < v->q && v->k > 1; t++)
        u[t] = lx_rng_uniform(&r);
    if (v->k > 1)
        ruler_sample(u, v->q, v->k, asked);
    for (int t = 0; t < v->q; t++)
        d->query[t] = v->k > 1 ? (int)asked[t] : 0;
    struct lx_rng s;
    lx_rng_init(&s, key ^ 0x73687566666c6521ULL, 0, LX_RNG_DATA);
    for (int i = m - 1; i > 0; i--) {   /* Fisher-Yates */
        int j = (int)(lx_rng_uniform(&s) * (i + 1)), o = d->owner[i];
        char tmp[sizeof d->needle[0]];
        memcpy(tmp, d->needle[i], sizeof tmp), memcpy(d->needle[i], d->needle[j], sizeof tmp);
        memcpy(d->needle[j], tmp, sizeof tmp);
        d->owner[i] = d->owner[j], d->owner[j] = o;
    }
    d->cell = key;
    d->sample = sample;
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

/* RULER's essays at path into out. */
static int essays_read(const char *path, struct lx_buf *out, struct lx_error *err)
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

/* RULER's template around the context: head (tail = 0), or the question with
** its answer prefix (tail = 1); niah.py's singular replacements ('Some' to
** 'A', 'are all' and 'are' to 'is', the type's 's' dropped) when one value is
** asked; the keys asked joined as "a, b, and c". */
static void ruler_frame(struct lx_buf *b, const struct ruler_variant *v, const struct ruler_draw *d, int tail)
{
    int one = v->q * v->v == 1;
    char type[16];
    snprintf(type, sizeof type, "%.*s", (int)strlen(ruler_types[v->type_v]) - one, ruler_types[v->type_v]);
    if (!tail) {
        lx_buf_printf(b, "%s special magic %s %s hidden within the following text. Make sure to memorize it. I will "
                      "quiz you about the %s afterwards.\n", one ? "A" : "Some", type, one ? "is" : "are", type);
        return;
    }
    struct lx_buf q = {0};
    for (int t = 0; t < v->q; t++)
        lx_buf_printf(&q, "%s%s", t == 0 ? "" : t + 1 < v->q ? ", " : ", and ", d->key[d->query[t]]);
    lx_buf_printf(b, "\nWhat %s the special magic %s for %s mentioned in the provided text? The special magic %s "
                  "for %s mentioned in the provided text %s", one ? "is" : "are all", type, lx_buf_str(&q), type,
                  lx_buf_str(&q), one ? "is" : "are");
    lx_buf_free(&q);
}

/* The line context: n haystack lines (the noise sentence, or another key's
** needle each), the needles before distinct lines (random.sample(range(n),
** m), the first needle before the last of them as niah.py's reversed insert),
** every line ended by a newline but the last. */
static void line_context(struct lx_buf *b, const struct ruler_variant *v, const struct ruler_draw *d, long n)
{
    int m = v->k * v->v;
    long at[RULER_MAX_NEEDLES];
    ruler_sample(d->place, m, n, at);
    sort_places(at, m);     /* needle t goes before the t-th largest place: needle m-1-j before at[j] */
    struct lx_rng r;
    lx_rng_init(&r, d->cell ^ 0x6e6565646c657321ULL, (uint32_t)d->sample, LX_RNG_DATA);
    char key[48], value[40];
    for (long i = 0, j = 0; i < n; i++) {
        if (j < m && at[j] == i)
            lx_buf_printf(b, "%s\n", d->needle[m - 1 - j++]);
        if (v->hay == RULER_NOISE) {
            lx_buf_puts(b, "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.");
        } else {
            ruler_key(v->type_k, &r, d, v->k, key);
            ruler_random(v->type_v, &r, value, sizeof value);
            lx_buf_printf(b, "One of the special magic %s for %s is: %s.", ruler_types[v->type_v], key, value);
        }
        if (i + 1 < n)
            lx_buf_puts(b, "\n");
    }
}

/* The essay context of n words; scratch holds the joined words. Needle t goes
** before sentence int(sentences * depth_t / 100), depth_t the t-th smallest of
** the drawn depths; *depth (percent) is needle `asked`'s. */
static void essay_context(struct lx_buf *b, const struct ruler_variant *v, const struct essay *e,
                          const struct ruler_draw *d, long n, struct lx_buf *scratch, int asked, int *depth)
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
    long ns = lx_peer_sentences(t + a, z - a, span), grid[RULER_MAX_NEEDLES];
    int m = v->k * v->v;
    ruler_sample(d->place, m, RULER_DEPTHS, grid);
    sort_places(grid, m);   /* sorted: the positions are */
    long from = 0;
    for (int p = 0; p <= m; p++) {  /* " ".join([sents[0:at_0], needle_0, sents[at_0:at_1], ..., sents[at_m-1:]]) */
        int pct = p < m ? (int)lround(100.0 * (double)grid[p] / (RULER_DEPTHS - 1)) : 100;
        long to = p < m ? (long)((double)ns * ((double)pct / 100.0)) : ns;
        if (p)
            lx_buf_putn(b, " ", 1);
        for (long i = from; i < to; i++)
            lx_buf_printf(b, "%s%.*s", i > from ? " " : "", (int)(span[i][1] - span[i][0]), t + a + span[i][0]);
        if (p < m)
            lx_buf_printf(b, " %s", d->needle[p]);
        if (p == asked)
            *depth = pct;
        from = to;
    }
    free(span);
}

/* The needle of the one value asked (-1 when several are). */
static int asked_needle(const struct ruler_variant *v, const struct ruler_draw *d)
{
    for (int t = 0; v->q * v->v == 1 && t < v->k * v->v; t++)
        if (d->owner[t] == d->query[0])
            return t;
    return -1;
}

/* The prompt with n haystack units; *depth as essay_context's. */
static void ruler_prompt(struct lx_buf *b, const struct ruler_variant *v, const struct ruler_draw *d,
                         const struct essay *e, long n, struct lx_buf *scratch, int *depth)
{
    lx_buf_reset(b);
    ruler_frame(b, v, d, 0);
    if (v->hay == RULER_ESSAY)
        essay_context(b, v, e, d, n, scratch, asked_needle(v, d), depth);
    else
        line_context(b, v, d, n);
    ruler_frame(b, v, d, 1);
}

static void essay_free(void *v)
{
    struct essay *e = v;
    lx_buf_free(&e->text);
    free(e->word), free(e);
}

static int essay_load(const char *path, void **out, struct lx_error *err)
{
    struct essay *e = lx_xcalloc(1, sizeof *e);
    int rc = essays_read(path, &e->text, err);
    if (rc < 0) {
        essay_free(e);
        return rc;
    }
    essay_words(e, LONG_MAX);
    *out = e;
    return LX_OK;
}

int lx_peer_ruler_essays(const char *path, struct lx_error *err)
{
    const void *e;
    return lx_peer_memo(path, essay_load, essay_free, &e, err);
}

/* The essays of data as words (read once a process, lx_peer_memo). */
static int ruler_essay(const struct ruler_variant *v, const char *data, const struct essay **out,
                       struct lx_error *err)
{
    const void *m = NULL;
    int rc = lx_peer_memo(data, essay_load, essay_free, &m, err);
    if (rc < 0)
        return rc;
    const struct essay *e = *out = m;
    for (long i = 0; i < e->n; i++)
        if (e->word[i][1] > e->word[i][0])
            return LX_OK;
    return lx_err(err, LX_EINVAL, "ruler %s: the essays in '%s' hold only white space\n  hint: data: names RULER's "
                  "PaulGrahamEssays.json or a directory of .txt files (docs/tasks.md#needle-ruler-essays)", v->task,
                  data);
}

/* What a niah prompt is built from. */
struct ruler_case {
    const struct ruler_variant *v;
    const struct ruler_draw *d;
    const struct essay *e;
    struct lx_buf *scratch;
    int depth;
};

static void ruler_build_niah(void *ctx, long n, struct lx_buf *b)
{
    struct ruler_case *c = ctx;
    ruler_prompt(b, c->v, c->d, c->e, n, c->scratch, &c->depth);
}

static int ruler_make(const struct ruler_variant *v, const char *data, long length, uint64_t key, long sample,
                      const struct lx_tokenizer *tk, struct lx_peer_case *out, struct lx_error *err)
{
    struct ruler_draw d;
    const struct essay *e = NULL;
    struct lx_buf scratch = {0};
    ruler_draw(v, key, sample, &d);
    int rc = v->hay == RULER_ESSAY ? ruler_essay(v, data, &e, err) : LX_OK;
    long least = v->hay == RULER_ESSAY ? 1 : v->k * v->v;   /* random.sample(range(n), m) needs m lines */
    struct ruler_case c = {v, &d, e, &scratch, -1};
    long best = 0;
    if (rc == LX_OK)
        rc = lx_peer_fit_units(ruler_build_niah, &c, v->hay == RULER_ESSAY ? 0 : least, length, length,
                               RULER_BUDGET, tk, &best, err);
    if (rc == LX_OK && best < least)
        rc = lx_err(err, LX_EINVAL, "ruler %s: length %ld leaves no room for %s haystack %s beside the needle%s, the "
                    "question and the %d tokens to generate\n  hint: use a longer length", v->task, length,
                    least > 1 ? "as many" : "one", v->hay == RULER_ESSAY ? "word" : least > 1 ? "lines" : "line",
                    v->k * v->v > 1 ? "s" : "", RULER_BUDGET);
    if (rc == LX_OK) {
        ruler_prompt(&out->prompt, v, &d, e, best, &scratch, &c.depth);
        out->depth = c.depth >= 0 ? c.depth / 100.0 : NAN;
        for (int t = 0; t < v->q; t++)      /* answers: the values of the keys asked, in order */
            for (int j = 0; j < v->v; j++)
                lx_peer_add_gold(out, d.value[d.query[t]][j], strlen(d.value[d.query[t]][j]));
    }
    lx_buf_free(&scratch);
    return rc;
}

#define RULER_MAKER(fn, variant)                                                                                    \
    LX_PEER_MAKER(fn)                                                                                               \
    {                                                                                                               \
        return ruler_make(&variant, data, length, key, sample, tk, out, err);                                       \
    }

RULER_MAKER(lx_peer_ruler_niah, niah_single_1)
RULER_MAKER(lx_peer_ruler_niah_single_2, niah_single_2)
RULER_MAKER(lx_peer_ruler_niah_single_3, niah_single_3)
RULER_MAKER(lx_peer_ruler_niah_multikey_1, niah_multikey_1)
RULER_MAKER(lx_peer_ruler_niah_multikey_2, niah_multikey_2)
RULER_MAKER(lx_peer_ruler_niah_multikey_3, niah_multikey_3)
RULER_MAKER(lx_peer_ruler_niah_multivalue, niah_multivalue)
RULER_MAKER(lx_peer_ruler_niah_multiquery, niah_multiquery)

/* ---- variable tracking (vt: scripts/data/synthetic/variable_tracking.py) ---- */

static const char VT_NOISE[] =
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";

/* One chain of VT_HOPS hops: its variables (distinct, `letters` upper-case
** letters each: random.choices(ascii_uppercase, k)), the value (randint(10000,
** 99999), numpy's: 99999 excluded) and where its lines go. */
struct vt_chain {
    char var[VT_HOPS + 1][8];
    char value[16];
    double place[VT_HOPS + 1];
};

static void vt_draw(struct lx_rng *r, int letters, struct vt_chain *c)
{
    for (int i = 0; i <= VT_HOPS; i++)
        for (int again = 1; again;) {
            for (int j = 0; j < letters; j++)
                c->var[i][j] = (char)('A' + (int)(lx_rng_uniform(r) * 26));
            c->var[i][letters] = 0;
            again = 0;
            for (int k = 0; k < i; k++)
                again |= strcmp(c->var[i], c->var[k]) == 0;
        }
    snprintf(c->value, sizeof c->value, "%d", 10000 + (int)(lx_rng_uniform(r) * 89999));
    for (int i = 0; i <= VT_HOPS; i++)
        c->place[i] = lx_rng_uniform(r);
}

/* The task's template and answer prefix around n noise lines with the chain's
** lines before distinct ones, in order ("VAR B = VAR A " keeps its space). */
static void vt_prompt(struct lx_buf *b, const struct vt_chain *c, long n)
{
    long at[VT_HOPS + 1];
    ruler_sample(c->place, VT_HOPS + 1, n, at);
    sort_places(at, VT_HOPS + 1);     /* the chain goes in order */
    lx_buf_puts(b, "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n");
    for (long i = 0, j = 0; i < n; i++) {
        if (j <= VT_HOPS && at[j] == i) {
            if (j == 0)
                lx_buf_printf(b, "VAR %s = %s\n", c->var[0], c->value);
            else
                lx_buf_printf(b, "VAR %s = VAR %s \n", c->var[j], c->var[j - 1]);
            j++;
        }
        lx_buf_printf(b, "%s%s", VT_NOISE, i + 1 < n ? "\n" : "");
    }
    lx_buf_printf(b, "\nQuestion: Find all variables that are assigned the value %s in the text above. Answer: "
                  "According to the chain(s) of variable assignment in the text above, %d variables are assigned "
                  "the value %s, they are: ", c->value, VT_HOPS + 1, c->value);
}

/* A case: its in-context example (the first VT_EXAMPLE tokens' worth, its
** answer after it), then its own chain. */
struct vt_case {
    struct vt_chain own, example;
    const char *head;       /* NULL: building the example; else the example, prepended */
};

static void vt_build(void *ctx, long n, struct lx_buf *b)
{
    const struct vt_case *c = ctx;
    lx_buf_reset(b);
    if (c->head)
        lx_buf_printf(b, "%s\n", c->head);
    vt_prompt(b, c->head ? &c->own : &c->example, n);
}

LX_PEER_MAKER(lx_peer_ruler_vt)
{
    (void)data;
    struct vt_case c = {.head = NULL};
    struct lx_rng r;
    lx_rng_init(&r, key ^ 0x7661727472616b21ULL, (uint32_t)sample, LX_RNG_DATA);
    vt_draw(&r, 5, &c.own);
    vt_draw(&r, 3, &c.example);
    struct lx_buf head = {0};
    long n = 0;
    int rc = lx_peer_fit_units(vt_build, &c, VT_HOPS + 1, VT_EXAMPLE, VT_EXAMPLE, 0, tk, &n, err);
    if (rc == LX_OK) {
        n = n < VT_HOPS + 1 ? VT_HOPS + 1 : n;  /* niah.py's fallback, `incremental`, where none fits (bytes) */
        vt_build(&c, n, &head);     /* the example and its answer: input + " " + " ".join(outputs) + "\n" */
        for (int i = 0; i <= VT_HOPS; i++)
            lx_buf_printf(&head, " %s", c.example.var[i]);
        lx_buf_puts(&head, "\n");
        c.head = lx_buf_str(&head);
        rc = lx_peer_fit_units(vt_build, &c, VT_HOPS + 1, length, length, VT_BUDGET, tk, &n, err);
    }
    if (rc == LX_OK && n < VT_HOPS + 1)
        rc = lx_err(err, LX_EINVAL, "ruler vt: length %ld leaves no room for the example, the chain's %d lines "
                    "among as many noise lines, the question and the %d tokens to generate\n  hint: use a longer "
                    "length", length, VT_HOPS + 1, VT_BUDGET);
    if (rc == LX_OK) {
        vt_build(&c, n, &out->prompt);
        for (int i = 0; i <= VT_HOPS; i++)
            lx_peer_add_gold(out, c.own.var[i], strlen(c.own.var[i]));
    }
    lx_buf_free(&head);
    return rc;
}

/* ---- frequent words extraction (fwe: scripts/data/synthetic/freq_words_extraction.py) ---- */

/* A case: the coded vocabulary (V words of six lower-case letters, distinct,
** the first replaced by "..."), and the order the drawn words are shuffled in. */
struct fwe_case {
    char (*vocab)[FWE_WORDLEN + 1];
    long v;
    uint64_t cell;          /* the shuffle's key: the cell alone, as niah.py's seeded shuffle */
    long *words;            /* scratch: the drawn words, as vocabulary indices */
};

/* Times word k (1-based) is drawn of n: int(n k^-alpha / zeta(alpha)), alpha 2
** (numpy's float64 in its order). */
static long fwe_count(long n, long k)
{
    return (long)((double)n * pow((double)k, -2.0) / FWE_ZETA2);
}

/* The prompt of n words: every word its count, shuffled, joined by spaces,
** in the template. */
static void fwe_build(void *ctx, long n, struct lx_buf *b)
{
    struct fwe_case *c = ctx;
    long total = 0;
    for (long k = 1; k <= c->v; k++)
        total += fwe_count(n, k);
    c->words = lx_xrealloc(c->words, sizeof *c->words * (size_t)(total + 1));
    long at = 0;
    for (long k = 1; k <= c->v; k++)
        for (long i = fwe_count(n, k); i > 0; i--)
            c->words[at++] = k - 1;
    struct lx_rng r;
    lx_rng_init(&r, c->cell ^ 0x6677655f73687566ULL, (uint32_t)total, LX_RNG_DATA);
    lx_peer_shuffle(&r, c->words, total);
    lx_buf_reset(b);
    lx_buf_puts(b, "Read the following coded text and track the frequency of each coded word. Find the three most "
                "frequently appeared coded words. ");
    for (long i = 0; i < total; i++)
        lx_buf_printf(b, "%s%s", i ? " " : "", c->vocab[c->words[i]]);
    lx_buf_puts(b, "\nQuestion: Do not provide any explanation. Please ignore the dots '....'. What are the three most "
                "frequently appeared words in the above coded text? Answer: According to the coded text above, the "
                "three most frequently appeared words are:");
}

LX_PEER_MAKER(lx_peer_ruler_fwe)
{
    (void)data;
    struct fwe_case c = {.v = (length - FWE_BUDGET) / 50, .cell = key};
    if (c.v < 4)
        return lx_err(err, LX_EINVAL, "ruler fwe: length %ld makes a vocabulary of %ld coded words ((L - %d) / 50); "
                      "the answer needs 4\n  hint: use a length of at least 250", length, c.v < 0 ? 0 : c.v,
                      FWE_BUDGET);
    c.vocab = lx_xmalloc(sizeof *c.vocab * (size_t)c.v);
    struct lx_rng r;
    lx_rng_init(&r, key ^ 0x6677655f766f6361ULL, (uint32_t)sample, LX_RNG_DATA);
    for (long i = 0; i < c.v; i++)      /* random.choices(ascii_lowercase, k=6), distinct */
        for (int again = 1; again;) {
            for (int j = 0; j < FWE_WORDLEN; j++)
                c.vocab[i][j] = (char)('a' + (int)(lx_rng_uniform(&r) * 26));
            c.vocab[i][FWE_WORDLEN] = 0;
            again = 0;
            for (long k = 0; k < i; k++)
                again |= memcmp(c.vocab[i], c.vocab[k], FWE_WORDLEN) == 0;
        }
    memcpy(c.vocab[0], "...", 4);       /* the top rank is noise */
    long n = 0;
    int rc = lx_peer_fit_units(fwe_build, &c, 0, length, length, FWE_BUDGET, tk, &n, err);
    if (rc == LX_OK && (n < 0 || fwe_count(n, 4) < 1))
        rc = lx_err(err, LX_EINVAL, "ruler fwe: length %ld leaves room for %ld coded words beside the template and the "
                    "%d tokens to generate, too few for the fourth most frequent to appear\n  hint: use a longer "
                    "length", length, n < 0 ? 0 : n, FWE_BUDGET);
    if (rc == LX_OK) {
        fwe_build(&c, n, &out->prompt);
        for (int k = 1; k < 4; k++)     /* vocab[1:4] */
            lx_peer_add_gold(out, c.vocab[k], strlen(c.vocab[k]));
    }
    free(c.vocab), free(c.words);
    return rc;
}

/* ---- common words extraction (cwe: scripts/data/synthetic/common_words_extraction.py) ---- */

/* A word list's words: its lines, trimmed, the empty ones dropped, sorted and
** unique (sorted(list(set(words)))). */
struct cwe_words {
    struct lx_buf text;     /* the file, the words NUL-ended in place */
    char **w;
    long n;
};

static void cwe_split(struct cwe_words *l)
{
    char *s = l->text.s;
    for (size_t at = 0, cap = 0; s && at < l->text.len;) {
        size_t end = at;
        while (end < l->text.len && s[end] != '\n')
            end++;
        size_t a = at, z = end;
        while (a < z && strchr(" \t\r\f\v", s[a]))
            a++;
        while (z > a && strchr(" \t\r\f\v", s[z - 1]))
            z--;
        s[z] = 0;
        if (z > a) {
            if ((size_t)l->n == cap)
                l->w = lx_xrealloc(l->w, sizeof *l->w * (cap = cap ? 2 * cap : 1024));
            l->w[l->n++] = s + a;
        }
        at = end + 1;
    }
    if (l->n)
        qsort(l->w, (size_t)l->n, sizeof *l->w, lx_cmp_str);
    long u = 0;
    for (long i = 0; i < l->n; i++)
        if (u == 0 || strcmp(l->w[i], l->w[u - 1]) != 0)
            l->w[u++] = l->w[i];
    l->n = u;
}

static void words_free(void *v)
{
    struct cwe_words *l = v;
    lx_buf_free(&l->text);
    free(l->w), free(l);
}

/* The word list at path, split, sorted and deduped (lx_peer_memo's load). */
static int words_load(const char *path, void **out, struct lx_error *err)
{
    unsigned char *b = NULL;
    long len = 0;
    int rc = lx_read_file(path, &b, &len, 0, err);
    for (long at = 0, k; rc == LX_OK && at < len; at += k)
        if ((k = lx_utf8_len(b + at, (size_t)(len - at))) == 0)
            rc = lx_err(err, LX_EINVAL, "%s: not UTF-8 at byte %ld\n  hint: the word list is read as UTF-8 text, one "
                        "word a line", path, at);
    struct cwe_words *l = lx_xcalloc(1, sizeof *l);
    if (rc == LX_OK) {
        lx_buf_putn(&l->text, (const char *)b, (size_t)len);
        cwe_split(l);
        if (l->n <= CWE_COMMON)
            rc = lx_err(err, LX_EINVAL, "%s holds %ld distinct words; cwe needs more than %d\n  hint: data: names a "
                        "word list, one word a line (docs/tasks.md#needle-ruler_cwe)", path, l->n, CWE_COMMON);
    }
    free(b);
    if (rc < 0)
        words_free(l);
    else
        *out = l;
    return rc;
}

static int words_of(const char *path, const struct cwe_words **l, struct lx_error *err)
{
    const void *v = NULL;
    int rc = lx_peer_memo(path, words_load, words_free, &v, err);
    *l = v;
    return rc;
}

int lx_peer_ruler_words(const char *path, struct lx_error *err)
{
    const struct cwe_words *l;
    return words_of(path, &l, err);
}

/* A case: the words in the case's order (the first n its sample), the
** repetitions (RULER: 30 and 3 from 4,096 tokens up, 6 and 1 below, its
** example 10 and 3 of 40 words, or 3 and 1 of 20) and the shuffles' key. */
struct cwe_case {
    const struct cwe_words *l;
    long *order;            /* (n,) indices into l->w */
    long fc, fu;            /* repetitions of a common and an uncommon word */
    long example_words, example_fc, example_fu;
    uint64_t cell;
    long *items;            /* scratch */
};

/* The numbered list of the first n words of order: the first CWE_COMMON fc
** times each, the rest fu times, shuffled ("1. w 2. w ..."). */
static void cwe_list(struct cwe_case *c, const long *order, long n, long fc, long fu, struct lx_buf *b)
{
    long total = CWE_COMMON * fc + (n - CWE_COMMON) * fu, at = 0;
    c->items = lx_xrealloc(c->items, sizeof *c->items * (size_t)(total + 1));
    for (long r = 0; r < fc; r++)       /* common * fc + uncommon * fu */
        for (long i = 0; i < CWE_COMMON; i++)
            c->items[at++] = order[i];
    for (long r = 0; r < fu; r++)
        for (long i = CWE_COMMON; i < n; i++)
            c->items[at++] = order[i];
    struct lx_rng r;
    lx_rng_init(&r, c->cell ^ 0x6377655f73687566ULL, (uint32_t)total, LX_RNG_DATA);
    lx_peer_shuffle(&r, c->items, total);
    for (long i = 0; i < total; i++)
        lx_buf_printf(b, "%s%ld. %s", i ? " " : "", i + 1, c->l->w[c->items[i]]);
}

/* The template around a list; with answer, the example's answer after it. */
static void cwe_frame(struct cwe_case *c, const long *order, long n, long fc, long fu, int answer, struct lx_buf *b)
{
    lx_buf_puts(b, "Below is a numbered list of words. In these words, some appear more often than others. Memorize "
                "the ones that appear most often.\n");
    cwe_list(c, order, n, fc, fu, b);
    lx_buf_printf(b, "\nQuestion: What are the %d most common words in the above list? Answer: The top %d words that "
                  "appear most often in the list are:", CWE_COMMON, CWE_COMMON);
    for (long i = 0; answer && i < CWE_COMMON; i++)
        lx_buf_printf(b, " %ld. %s", i + 1, c->l->w[order[i]]);
}

/* The example (its own words: the last of the case's order), a newline, the
** case (the first n). */
static void cwe_build(void *ctx, long n, struct lx_buf *b)
{
    struct cwe_case *c = ctx;
    lx_buf_reset(b);
    cwe_frame(c, c->order + c->l->n - c->example_words, c->example_words, c->example_fc, c->example_fu, 1, b);
    lx_buf_puts(b, "\n");
    cwe_frame(c, c->order, n, c->fc, c->fu, 0, b);
}

LX_PEER_MAKER(lx_peer_ruler_cwe)
{
    const struct cwe_words *lp = NULL;
    int rc = words_of(data, &lp, err);
    if (rc < 0)
        return rc;
    const struct cwe_words l = *lp;
    int big = length >= 4096;      /* args.max_seq_length < 4096: the smaller repetitions */
    struct cwe_case c = {.l = &l, .fc = big ? 30 : 6, .fu = big ? 3 : 1, .example_words = big ? 40 : 20,
                         .example_fc = big ? 10 : 3, .example_fu = big ? 3 : 1, .cell = key};
    long most = l.n - c.example_words;  /* the case's words and the example's, apart */
    c.order = lx_xmalloc(sizeof *c.order * (size_t)(l.n > 0 ? l.n : 1));
    for (long i = 0; i < l.n; i++)
        c.order[i] = i;
    struct lx_rng r;        /* random.sample(words, n): a partial Fisher-Yates of the case */
    lx_rng_init(&r, key ^ 0x6377655f776f7264ULL, (uint32_t)sample, LX_RNG_DATA);
    for (long i = 0; i < l.n - 1; i++) {
        long j = i + (long)(lx_rng_uniform(&r) * (double)(l.n - i)), t = c.order[i];
        c.order[i] = c.order[j], c.order[j] = t;
    }
    long n = 0;
    if (most <= CWE_COMMON)
        rc = lx_err(err, LX_EINVAL, "ruler cwe: '%s' holds %ld distinct words; the example takes %ld and the case "
                    "needs more than %d\n  hint: name a longer word list", data, l.n, c.example_words, CWE_COMMON);
    if (rc == LX_OK)
        rc = lx_peer_fit_units(cwe_build, &c, CWE_COMMON + 1, most < length ? most : length, length, CWE_BUDGET,
                               tk, &n, err);
    if (rc == LX_OK && n == most && most < length)
        rc = lx_err(err, LX_EINVAL, "ruler cwe: the %ld words of '%s' beside the example's all fit length %ld, with "
                    "room to spare\n  hint: name a longer word list (RULER falls back to its english_words.json)",
                    most, data, length);
    if (rc == LX_OK && n <= CWE_COMMON)
        rc = lx_err(err, LX_EINVAL, "ruler cwe: length %ld leaves no room for the example, %d common words %ld times "
                    "and one more, and the %d tokens to generate\n  hint: use a longer length", length, CWE_COMMON,
                    c.fc, CWE_BUDGET);
    if (rc == LX_OK) {
        cwe_build(&c, n, &out->prompt);
        for (int i = 0; i < CWE_COMMON; i++)
            lx_peer_add_gold(out, l.w[c.order[i]], strlen(l.w[c.order[i]]));
    }
    free(c.order), free(c.items);
    return rc;
}
