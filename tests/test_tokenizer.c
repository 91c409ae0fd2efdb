/*
** tests/test_tokenizer.c - harness/engine/tokenizer.c: the byte tokenizer is
** the identity on bytes; llama2.c's SentencePiece BPE on stories260K's
** tok512.bin gives the ids llama2.c's run.c gives (its expected/encode.json,
** copied here by hand, BOS and the dummy-prefix space as run.c adds them);
** decode(encode(s)) == s on any text; separately encoded segments decode to
** the concatenated text; bad files are refused with the file and offset.
*/
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/corpus.h"
#include "harness/engine/tokenizer.h"
#include "tests/tokfile.h"

static void round_trip(const struct lx_tokenizer *t, const char *s)
{
    int *ids;
    long n = lx_tok_encode(t, s, (long)strlen(s), &ids), bytes = 0;
    char *out = malloc((size_t)lx_tok_decode_cap(t, n));
    int stop;
    long k = lx_tok_decode(t, ids, n, out, &stop);
    for (long i = 0; i < n; i++)
        bytes += lx_tok_bytes(t, ids[i]);
    cr_expect_eq(stop, -1, "no special id in the encoding of '%s'", s);
    cr_expect_eq(k, (long)strlen(s), "'%s': %ld bytes back", s, k);
    cr_expect_str_eq(out, s);
    cr_expect_eq(bytes, (long)strlen(s), "the pieces' bytes add up to the text's");
    free(out);
    free(ids);
}

static const char *const TEXTS[] = {
    "Once upon a time", "  two  spaces", "line one\nline two\n\n", "café naïve — 😀", "12345 + 678 = 13023",
    "The pass key is 48213. Remember it.", "", "\x01\x7f\xff odd bytes", "trailing space ",
};

Test(tokenizer, byte_is_identity)
{
    const struct lx_tokenizer *t = &lx_tokenizer_byte;
    cr_expect_eq(t->n_vocab, LX_VOCAB);
    cr_expect_eq(t->bos, LX_TOK_BOS);
    cr_expect_eq(t->mask, LX_TOK_MASK);
    int *ids;
    long n = lx_tok_encode(t, "a\xff", 2, &ids);
    cr_expect(n == 2 && ids[0] == 'a' && ids[1] == 255, "a byte is its token");
    free(ids);
    for (size_t i = 0; i < sizeof TEXTS / sizeof *TEXTS; i++)
        round_trip(t, TEXTS[i]);
    int with_eos[] = {'o', 'k', LX_TOK_EOS, 'x'}, stop;
    char out[8];
    cr_expect_eq(lx_tok_decode(t, with_eos, 4, out, &stop), 2);
    cr_expect_str_eq(out, "ok");
    cr_expect_str_eq(lx_tok_special_name(t, stop), "eos");
}

/* run.c's encode(text, bos=1, eos=0) from stories260K/expected/encode.json. */
static const struct {
    const char *text;
    int ids[32];
    int n;
} RUNC[] = {
    {"Once upon a time", {1, 403, 407, 261, 378}, 5},
    {"Hello, world!", {1, 346, 306, 414, 432, 263, 304, 341, 443}, 9},
    {"  two  spaces", {1, 410, 410, 259, 424, 414, 410, 262, 427, 412, 331, 419}, 12},
    {"line one\nline two", {1, 278, 271, 411, 353, 411, 13, 421, 271, 411, 259, 424, 414}, 13},
    {"café naïve — 😀", {1, 280, 412, 431, 485, 297, 412, 198, 178, 360, 410, 481, 410, 243, 162, 155, 131}, 17},
    {"12345 + 678 = 13023",
     {1, 410, 475, 479, 472, 484, 480, 410, 496, 410, 490, 491, 487, 410, 64, 410, 475, 472, 477, 479, 472}, 21},
};

Test(tokenizer, sentencepiece_matches_llama2c)
{
    const char *path = tokfile_stories();
    if (!path)
        cr_skip_test("stories260K's tok512.bin is not beside the checkout");
    struct lx_tokenizer *t;
    struct lx_error err;
    cr_assert_eq(lx_tokenizer_load(&t, path, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(t->n_vocab, 512);
    cr_expect(t->bos == 1 && t->eos == 2 && t->mask == -1, "BOS 1, EOS 2, no mask");
    for (size_t c = 0; c < sizeof RUNC / sizeof *RUNC; c++) {
        char s[128];
        snprintf(s, sizeof s, " %s", RUNC[c].text);     /* run.c's dummy prefix; lenx adds none */
        int *ids;
        long n = lx_tok_encode(t, s, (long)strlen(s), &ids);
        cr_expect_eq(n, RUNC[c].n - 1, "'%s': %ld ids, run.c %d", RUNC[c].text, n, RUNC[c].n - 1);
        for (long i = 0; i < n && i < RUNC[c].n - 1; i++)
            cr_expect_eq(ids[i], RUNC[c].ids[i + 1], "'%s' id %ld: %d, run.c %d", RUNC[c].text, i, ids[i],
                         RUNC[c].ids[i + 1]);
        free(ids);
    }
    for (size_t i = 0; i < sizeof TEXTS / sizeof *TEXTS; i++)
        round_trip(t, TEXTS[i]);
    lx_tokenizer_free(t);
}

/* Segments encoded apart decode to their concatenation, and a word split
** across two segments takes more tokens than whole: segment boundaries are
** token boundaries. */
Test(tokenizer, segments_concatenate)
{
    char path[256];
    tokfile_write(path, sizeof path);
    struct lx_tokenizer *t;
    struct lx_error err;
    cr_assert_eq(lx_tokenizer_load(&t, path, &err), LX_OK, "%s", err.msg);
    cr_expect_eq(t->n_vocab, 3 + 256 + 95 + (long)(sizeof tokfile_merges / sizeof *tokfile_merges));
    const char *a = "What is the pass key? The pass key is", *b = " 1234", *ab = "What is the pass key? The pass key is 1234";
    int *ia, *ib, *iab;
    long na = lx_tok_encode(t, a, (long)strlen(a), &ia), nb = lx_tok_encode(t, b, (long)strlen(b), &ib),
         nab = lx_tok_encode(t, ab, (long)strlen(ab), &iab);
    cr_expect_lt(nab, (long)strlen(ab), "merges make tokens longer than bytes: %ld tokens", nab);
    int cat[128], stop;
    memcpy(cat, ia, sizeof(int) * (size_t)na);
    memcpy(cat + na, ib, sizeof(int) * (size_t)nb);
    char out[256];
    lx_tok_decode(t, cat, na + nb, out, &stop);
    cr_expect_str_eq(out, ab);
    cr_expect_eq(na + nb, nab, "a boundary before a space is a word boundary: the same ids");
    int *ic;
    long nc = lx_tok_encode(t, "pa", 2, &ic) + lx_tok_encode(t, "ss", 2, &ib);
    cr_expect_gt(nc, 1, "'pa' + 'ss' apart is two tokens, 'pass' one");
    for (size_t i = 0; i < sizeof TEXTS / sizeof *TEXTS; i++)
        round_trip(t, TEXTS[i]);
    free(ia), free(ib), free(iab), free(ic);
    lx_tokenizer_free(t);
    remove(path);
}

Test(tokenizer, bad_files_refused)
{
    struct lx_tokenizer *t;
    struct lx_error err;
    cr_expect_lt(lx_tokenizer_load(&t, "/nonexistent/tok.bin", &err), 0);
    cr_expect(strstr(err.msg, "/nonexistent/tok.bin") != NULL, "names the file: %s", err.msg);
    char path[256];
    snprintf(path, sizeof path, "/tmp/lenx-badtok-%ld.bin", (long)getpid());
    FILE *f = fopen(path, "wb");
    int head = 16, len = 1000;
    float sc = 0;
    fwrite(&head, 4, 1, f);
    fwrite(&sc, 4, 1, f);
    fwrite(&len, 4, 1, f);
    fclose(f);
    cr_expect_lt(lx_tokenizer_load(&t, path, &err), 0);
    cr_expect(strstr(err.msg, "at byte 4") && strstr(err.msg, "length 1000"), "offset and length: %s", err.msg);
    cr_expect_null(t);
    remove(path);
}
