/* llama.cpp's logits of a GGUF file on given token ids: every position, every vocabulary entry, one
** line a position (tab-separated, %.9g). Usage: lllogits FILE.gguf ID ID ... (CPU, one thread,
** flash attention off, batch = the ids). */
#include <stdio.h>
#include <stdlib.h>
#include "llama.h"

int main(int argc, char **argv)
{
    int n = argc - 2;
    if (n < 1)
        return fprintf(stderr, "usage: lllogits FILE ID...\n"), 2;
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *m = llama_model_load_from_file(argv[1], mp);
    if (!m)
        return fprintf(stderr, "cannot load %s\n", argv[1]), 1;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = n, cp.n_batch = n, cp.n_ubatch = n, cp.n_threads = 1, cp.n_threads_batch = 1;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    struct llama_context *c = llama_init_from_model(m, cp);
    if (!c)
        return fprintf(stderr, "no context\n"), 1;
    struct llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        b.token[i] = atoi(argv[2 + i]), b.pos[i] = i, b.n_seq_id[i] = 1, b.seq_id[i][0] = 0, b.logits[i] = 1;
    }
    b.n_tokens = n;
    if (llama_decode(c, b))
        return fprintf(stderr, "decode failed\n"), 1;
    int V = llama_vocab_n_tokens(llama_model_get_vocab(m));
    for (int i = 0; i < n; i++) {
        const float *lg = llama_get_logits_ith(c, i);
        for (int v = 0; v < V; v++)
            printf("%s%.9g", v ? "\t" : "", lg[v]);
        printf("\n");
    }
    llama_batch_free(b);
    llama_free(c);
    llama_model_free(m);
    return 0;
}
