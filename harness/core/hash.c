/*
** harness/core/hash.c - SHA-256 (FIPS 180-4): written from the standard for
** keys and other short inputs, and OpenSSL's libcrypto (the one file that
** touches it) for a long buffer — a model file or its weights, gigabytes at
** load, where libcrypto's SHA-NI and AVX2 code runs 5-10x faster than the
** plain C below (docs/checkpoints.md#what-a-load-costs). Both give the same
** digest; the plain one stays as the reference the tests compare against.
*/
#include "harness/core/hash.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/lx.h"

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void compress(uint32_t h[8], const uint8_t *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g; g = f; f = e; e = d + t1;
        d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d;
    h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}

void lx_sha256_init(struct lx_sha256 *s)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->n_block = 0;
    s->n_total = 0;
}

void lx_sha256_update(struct lx_sha256 *s, const void *data, size_t n)
{
    const uint8_t *p = data;
    s->n_total += n;
    while (n > 0) {
        size_t take = 64 - s->n_block < n ? 64 - s->n_block : n;
        memcpy(s->block + s->n_block, p, take);
        s->n_block += take;
        p += take;
        n -= take;
        if (s->n_block == 64) {
            compress(s->h, s->block);
            s->n_block = 0;
        }
    }
}

void lx_sha256_final(struct lx_sha256 *s, uint8_t out[32])
{
    uint64_t bits = s->n_total * 8;
    uint8_t pad = 0x80;
    lx_sha256_update(s, &pad, 1);
    pad = 0;
    while (s->n_block != 56)
        lx_sha256_update(s, &pad, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)(bits >> (56 - 8 * i));
    lx_sha256_update(s, len, 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(s->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)s->h[i];
    }
}

/* A 32-byte digest as 64 hex digits + NUL. */
static void to_hex(const unsigned char d[32], char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

void lx_sha256_final_hex(struct lx_sha256 *s, char out[65])
{
    uint8_t d[32];
    lx_sha256_final(s, d);
    to_hex(d, out);
}

void lx_sha256_ref_hex_bytes(const void *data, size_t n, char out[65])
{
    struct lx_sha256 h;
    lx_sha256_init(&h);
    lx_sha256_update(&h, data, n);
    lx_sha256_final_hex(&h, out);
}

void lx_sha256_hex_bytes(const void *data, size_t n, char out[65])
{
    if (n < LX_SHA256_LONG) {
        lx_sha256_ref_hex_bytes(data, n, out);
        return;
    }
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    LX_ASSERT(EVP_Digest(data, n, d, &len, EVP_sha256(), NULL) == 1 && len == 32);
    to_hex(d, out);
}

void lx_sha256_hex(const char *text, char out[65])
{
    lx_sha256_hex_bytes(text, strlen(text), out);
}

void lx_sha256_key(const char *text, char out[17])
{
    char hex[65];
    lx_sha256_hex(text, hex);
    memcpy(out, hex, 16);
    out[16] = '\0';
}

uint64_t lx_hash64(const char *text)
{
    struct lx_sha256 s;
    uint8_t d[32];
    lx_sha256_init(&s);
    lx_sha256_update(&s, text, strlen(text));
    lx_sha256_final(&s, d);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | d[i];
    return v;
}

/* ---- long inputs, in pieces ---- */

struct lx_sha256_long {
    EVP_MD_CTX *ctx;        /* libcrypto's state */
};

struct lx_sha256_long *lx_sha256_long_new(void)
{
    struct lx_sha256_long *h = lx_xcalloc(1, sizeof *h);
    h->ctx = EVP_MD_CTX_new();
    LX_ASSERT(h->ctx && EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) == 1);
    return h;
}

void lx_sha256_long_add(struct lx_sha256_long *h, const void *data, size_t n)
{
    LX_ASSERT(EVP_DigestUpdate(h->ctx, data, n) == 1);
}

void lx_sha256_long_end(struct lx_sha256_long *h, char out[65])
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    LX_ASSERT(EVP_DigestFinal_ex(h->ctx, d, &len) == 1 && len == 32);
    to_hex(d, out);
    EVP_MD_CTX_free(h->ctx);
    free(h);
}
