/* A byte-level BPE tokenizer.json (Qwen2's pre-tokenizer) for the convert tests and the JSON fuzz
 * target, which feed it to vocab-import and convert. */
#ifndef PF_FUZZ_BPE_JSON_H
#define PF_FUZZ_BPE_JSON_H

#include <stdio.h>

/* Writes to f the 256 GPT-2 byte tokens (ids 0..255), then extra_vocab (`,"tok":id` entries or ""),
 * the merges list `[merges]`, and four specials (<|endoftext|>, <|im_start|>, <|im_end|>, <|fim_pad|>)
 * at first_special.. first_special + 3. */
static void write_bpe_json(FILE *f, int first_special, const char *extra_vocab, const char *merges) {
    fputs("{\"version\":\"1.0\",\"added_tokens\":[", f);
    const char *sp[4] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|fim_pad|>"};
    for (int i = 0; i < 4; i++)
        fprintf(f, "%s{\"id\":%d,\"content\":\"%s\",\"special\":true}", i ? "," : "", first_special + i, sp[i]);
    fputs("],\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":"
          "{\"Regex\":\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}| ?[^\\\\s\\\\p{L}\\\\p{N}]+"
          "[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"},\"behavior\":\"Isolated\",\"invert\":false},"
          "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":false,\"use_regex\":false}]},"
          "\"model\":{\"type\":\"BPE\",\"vocab\":{",
          f);
    /* GPT-2 bytes_to_unicode: printable bytes map to themselves, the others to 256 + n */
    int n = 0;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        unsigned cp = printable ? (unsigned)b : 256u + (unsigned)n++;
        char u[8];
        if (cp < 0x80) { u[0] = (char)cp; u[1] = 0; }
        else { u[0] = (char)(0xC0 | (cp >> 6)); u[1] = (char)(0x80 | (cp & 0x3F)); u[2] = 0; }
        fprintf(f, "%s\"%s%s\":%d", b ? "," : "", (cp == '"' || cp == '\\') ? "\\" : "", u, b);
    }
    fprintf(f, "%s},\"merges\":[%s]}}", extra_vocab, merges);
}

#endif
