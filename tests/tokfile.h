/*
** tests/tokfile.h - a small SentencePiece vocabulary written as a llama2.c
** tokenizer.bin, for tests that need a tokenizer whose tokens are not bytes:
** <unk>, <s>, </s>, the 256 byte fallbacks, every printable ASCII character,
** then merges (a higher score merges first) that make words and digit pairs
** several bytes long, with a leading space as SentencePiece writes "▁".
**
**   char path[256];
**   tokfile_write(path, sizeof path);   -> a file under /tmp, unique per process
**   tokfile_write_pieces(path, sizeof path, pieces, n);   -> the same start, then
**                                          only these pieces (fuzz findings' vocabularies)
**
** And stories260K's own tok512.bin (llama2.c, read from the shared models
** folder beside the checkout, never copied): tokfile_stories() gives its path,
** or NULL when it is not there (the caller skips).
*/
#ifndef LX_TEST_TOKFILE_H
#define LX_TEST_TOKFILE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const tokfile_merges[] = {
    "th", "he", "the", " t", " the", "in", " a", "is", " is", "er", "an", "re", "on", "at", "en", "nd", "es",
    "ke", "ey", "key", " k", " key", "pa", "ss", "pass", " p", " pass", "00", "12", "34", "56", "78", "90",
    " 1", " 12", " 9", "ing", " s", "ec", "ial", " m", "ag", "ic", "mag", "magic", " magic", "um", "ber",
    "umber", " n", " number", ". ", "is:", "e.", "ne", "ed", "ll", "ou", "it", "ha", "as", " w", " h", " o",
};

static void tokfile_put(FILE *f, const char *piece, float score)
{
    int len = (int)strlen(piece);
    fwrite(&score, 4, 1, f);
    fwrite(&len, 4, 1, f);
    fwrite(piece, 1, (size_t)len, f);
}

/* A tokenizer.bin at path (/tmp, unique per process) whose pieces are at
** most max_len bytes, holding <unk>, <s>, </s> and the byte fallbacks; the
** caller writes the other tokens to the returned file and closes it. */
static inline FILE *tokfile_begin(char *path, size_t n, int max_len)
{
    snprintf(path, n, "/tmp/lenx-tokfile-%ld.bin", (long)getpid());
    FILE *f = fopen(path, "wb");
    fwrite(&max_len, 4, 1, f);
    tokfile_put(f, "<unk>", 0.0f);
    tokfile_put(f, "<s>", 0.0f);
    tokfile_put(f, "</s>", 0.0f);
    for (int b = 0; b < 256; b++) {
        char p[8];
        snprintf(p, sizeof p, "<0x%02X>", b);
        tokfile_put(f, p, 0.0f);
    }
    return f;
}

/* tokfile_begin, then the pieces extra[0, n_extra), the first scored highest. */
static inline void tokfile_write_pieces(char *path, size_t n, const char *const *extra, int n_extra)
{
    FILE *f = tokfile_begin(path, n, 16);
    for (int i = 0; i < n_extra; i++)
        tokfile_put(f, extra[i], (float)(n_extra - i));
    fclose(f);
}

static inline void tokfile_write(char *path, size_t n)
{
    FILE *f = tokfile_begin(path, n, 16);
    for (int c = 0x20; c < 0x7f; c++) {
        char p[2] = {(char)c, 0};
        tokfile_put(f, p, -1000.0f);
    }
    int k = (int)(sizeof tokfile_merges / sizeof *tokfile_merges);
    for (int i = 0; i < k; i++)
        tokfile_put(f, tokfile_merges[i], (float)(k - i));
    fclose(f);
}

static inline const char *tokfile_stories(void)
{
    static char path[4096];
    const char *root = getenv("LENX_ROOT");
    snprintf(path, sizeof path, "%s/../shared/models/stories260K/tok512.bin", root ? root : ".");
    return access(path, R_OK) == 0 ? path : NULL;
}

#endif
