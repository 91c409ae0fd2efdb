/*
** harness/core/hash.h - SHA-256, the one stable hash of lenx: run keys, data keys,
** content hashes. FIPS 180-4; the same bytes give the same key in every process
** and on every machine.
*/
#ifndef LX_HASH_H
#define LX_HASH_H

#include <stddef.h>
#include <stdint.h>

struct lx_sha256 {
    uint32_t h[8];          /* chaining state */
    uint8_t block[64];      /* (64,) pending input */
    size_t n_block;         /* bytes pending in block */
    uint64_t n_total;       /* bytes hashed so far */
};

void lx_sha256_init(struct lx_sha256 *s);
void lx_sha256_update(struct lx_sha256 *s, const void *data, size_t n);
void lx_sha256_final(struct lx_sha256 *s, uint8_t out[32]);

/* Finish and write the digest as 64 hex digits + NUL. */
void lx_sha256_final_hex(struct lx_sha256 *s, char out[65]);

/* Hex digest of a NUL-terminated string; out holds 65 bytes. */
void lx_sha256_hex(const char *text, char out[65]);
/* A key (run, model, configuration): the first 16 hex digits of text's digest + NUL. */
void lx_sha256_key(const char *text, char out[17]);
/* Hex digest of data[0, n) (any bytes); out holds 65 bytes. From
** LX_SHA256_LONG bytes on through libcrypto (hash.c), below it and in
** lx_sha256_ref_hex_bytes (the reference) through the plain code. */
#define LX_SHA256_LONG 65536
void lx_sha256_hex_bytes(const void *data, size_t n, char out[65]);
void lx_sha256_ref_hex_bytes(const void *data, size_t n, char out[65]);

/* A long input hashed in pieces (libcrypto): new, add each piece in order,
** end writes the 64 hex digits and frees. */
struct lx_sha256_long;
struct lx_sha256_long *lx_sha256_long_new(void);
void lx_sha256_long_add(struct lx_sha256_long *h, const void *data, size_t n);
void lx_sha256_long_end(struct lx_sha256_long *h, char out[65]);

/* The first 8 bytes of the digest of text, big-endian: a 64-bit stable key. */
uint64_t lx_hash64(const char *text);

#endif
