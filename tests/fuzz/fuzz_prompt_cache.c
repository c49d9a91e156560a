/* libFuzzer target for the prompt-cache reader (engine/prompt_cache.c). Random bytes would almost
 * never get past the two xxh3 checks, so the input is read as a recipe for a file that passes
 * them: 24 bytes choose the header fields (mostly the values the cache expects, sometimes not),
 * the rest is the raw payload, compressed and hashed like a real file (f16 or 8-bit cache files,
 * restored into a cache of the same or the other type). The restore must then load
 * it or refuse it cleanly, writing only inside the cache and the taps buffer; on success the
 * restored row count must be in range. The reader's source is included for its constants and
 * writers. `make fuzz`. */
#include "engine/prompt_cache.c"

#include <unistd.h>

enum { N_LAYER = 2, N_KV = 1, HD = 8, EMBD = 16, N_CTX = 64, N_PROMPT = 48 };

static uint32_t pick(const uint8_t *b, uint32_t good) {
    /* 7 times in 8 the expected value, else a byte of the input (often out of range) */
    return (b[0] & 7) ? good : (uint32_t)b[1] * (b[0] >> 3 & 3 ? 1u : 65793u);
}

static char path[64];
static void remove_file(void) { unlink(path); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 24) return 0;
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/fuzz-pc-%d.bin", (int)getpid());
        atexit(remove_file);
    }
    const uint8_t *ctl = data;
    const uint8_t *raw = data + 24;
    size_t raw_n = size - 24;
    uint32_t n = 1 + ctl[0] % 40, nt = ctl[1] % 3;
    uint32_t n_layer = pick(ctl + 2, N_LAYER), kv_dim = pick(ctl + 4, N_KV * HD), embd = pick(ctl + 6, EMBD);
    if (ctl[8] & 1) n = pick(ctl + 9, n);
    /* the 8-bit cache's files (version 2) in 1 of 4 inputs */
    const int q8 = (ctl[22] & 3) == 0;
    uint64_t want = payload_size(n, n_layer, kv_dim, embd, nt, q8 ? N_KV : 0);
    uint64_t raw_size = (ctl[11] & 7) ? want : raw_n;
    if (want && (ctl[11] & 7) && raw_n < want) return 0; /* too short a recipe for these fields */
    size_t used = (size_t)(raw_size < raw_n ? raw_size : raw_n);
    size_t cap = ZSTD_compressBound(used);
    uint8_t *file = malloc(PC_HEADER + cap);
    if (!file) return 0;
    size_t z = ZSTD_compress(file + PC_HEADER, cap, raw, used, 1);
    if (ZSTD_isError(z)) {
        free(file);
        return 0;
    }
    uint8_t *h = file;
    memset(h, 0, PC_HEADER);
    memcpy(h, PC_MAGIC, 8);
    wr32(h + 8, (ctl[12] & 15) ? (q8 ? PC_VERSION_Q8 : PC_VERSION) : ctl[13]);
    wr32(h + 12, n);
    const uint64_t key = 0x1234abcdull;
    wr64(h + 16, (ctl[14] & 15) ? key : key ^ ctl[15]);
    wr32(h + 24, n_layer);
    wr32(h + 28, kv_dim);
    wr32(h + 32, embd);
    wr32(h + 36, nt);
    wr64(h + 40, raw_size);
    wr64(h + 48, XXH3_64bits(file + PC_HEADER, z));
    wr64(h + 56, XXH3_64bits(h, 56));
    FILE *fp = fopen(path, "wb");
    if (!fp) {
        free(file);
        return 0;
    }
    size_t file_n = PC_HEADER + z;
    if (ctl[16] == 0xff && file_n > PC_HEADER) file_n -= ctl[17] % (file_n - PC_HEADER); /* truncated */
    fwrite(file, 1, file_n, fp);
    fclose(fp);
    free(file);

    pf_hparams hp = {.n_layer = N_LAYER, .n_head_kv = N_KV, .head_dim = HD};
    /* usually the cache type of the file; sometimes the other (must be refused) */
    pf_kv_cache *kv = pf_kv_new(&hp, N_CTX, (q8 ^ ((ctl[23] & 7) == 0)) ? PF_KV_Q8 : PF_KV_F16);
    if (!kv) return 0;
    /* the prompt: the payload's first tokens when there are enough (so the prefix check can pass) */
    int32_t prompt[N_PROMPT];
    for (int i = 0; i < N_PROMPT; i++) prompt[i] = i;
    if (ctl[18] & 1)
        for (size_t i = 0; i < N_PROMPT && 4 * (i + 1) <= used; i++) memcpy(&prompt[i], raw + 4 * i, 4);
    int n_prompt = 1 + ctl[19] % N_PROMPT;
    int taps_l[2] = {(int32_t)ctl[20] % 4 - 1, 1};
    int n_taps = ctl[21] % 3;
    float *taps = malloc((size_t)N_PROMPT * 2 * EMBD * sizeof(float));
    char err[PF_ERR_LEN];
    int rc = taps ? pf_prompt_cache_restore(path, key, kv, EMBD, prompt, n_prompt, taps_l, n_taps, n_taps ? taps : NULL,
                                            err)
                  : -1;
    if (rc > 0 && (rc >= n_prompt || rc > N_CTX || kv->len != rc)) __builtin_trap();
    if (rc < 0 && kv->len != 0) __builtin_trap(); /* a refused file is never partly applied */
    free(taps);
    pf_kv_free(kv);
    return 0;
}
