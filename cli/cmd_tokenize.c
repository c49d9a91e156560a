/* pocketflash tokenize / vocab-import. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "engine/tokenizer.h"
#include "formats/gguf.h"
#include "convert/vocab_import.h"

static const char k_tokenize_usage[] =
    "usage: pocketflash tokenize -m FILE.gguf (-p TEXT | -f FILE) [--decode] [--no-special]\n"
    "  Prints the token ids of the exact bytes of TEXT (or of FILE; nothing is added or stripped),\n"
    "  on one line separated by spaces. The input must be valid UTF-8.\n"
    "  -m FILE.gguf   any GGUF with a tokenizer: a model or a vocab-import output\n"
    "  -p TEXT        text to encode (or, with --decode, token ids)\n"
    "  -f FILE        read the text (or ids) from FILE\n"
    "  --decode       read token ids (separated by spaces, newlines or commas) and print the\n"
    "                 bytes they decode to, exactly\n"
    "  --no-special   treat control-token texts such as <|im_end|> as plain text\n";

static const char k_import_usage[] =
    "usage: pocketflash vocab-import tokenizer.json [tokenizer_config.json] -o vocab.gguf\n"
    "  Converts a Hugging Face byte-level BPE tokenizer.json (Qwen2/Qwen3 pre-tokenizer) into a\n"
    "  tokenizer-only GGUF (general.architecture = \"tokenizer\") that `tokenize -m` accepts.\n"
    "  tokenizer_config.json, if given, supplies eos_token, pad_token and chat_template.\n"
    "  -o vocab.gguf  output file (written to a temporary file, then renamed)\n";

static int print_ids(const int32_t *ids, size_t n) {
    for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", (int)ids[i]);
    putchar('\n');
    return 0;
}

/* Token ids separated by whitespace or commas, each in [0, n_vocab); all are checked before
 * anything is printed. */
static int decode_ids(const pf_tokenizer *t, const char *s, size_t len) {
    int32_t *ids = malloc((len / 2 + 1) * sizeof *ids);
    size_t n = 0, i = 0;
    if (!ids) return cli_fail_kind(PF_ERR_OOM, "tokenize --decode: out of memory");
    while (i < len) {
        if (memchr(" \t\n\r,", s[i], 5)) {
            i++;
            continue;
        }
        long long v = 0;
        size_t start = i;
        while (i < len && s[i] >= '0' && s[i] <= '9' && v <= (long long)INT32_MAX)
            v = v * 10 + (s[i++] - '0');
        if (i == start || (i < len && !memchr(" \t\n\r,", s[i], 5))) {
            free(ids);
            return cli_fail("tokenize --decode: '%.*s' at byte %zu is not a token id",
                            (int)(i - start + 1 > 20 ? 20 : i - start + 1), s + start, start);
        }
        if (v >= pf_tokenizer_n_vocab(t)) {
            free(ids);
            return cli_fail("tokenize --decode: token id %lld out of range (vocabulary has %d tokens)",
                            v, pf_tokenizer_n_vocab(t));
        }
        ids[n++] = (int32_t)v;
    }
    for (size_t k = 0; k < n; k++) {
        size_t bl;
        const char *b = pf_token_bytes(t, ids[k], &bl);
        fwrite(b, 1, bl, stdout);
    }
    free(ids);
    return 0;
}

int cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *text = NULL, *file = NULL;
    bool decode = false, special = true;
    const cli_arg args[] = {CLI_STR("-m", &model), CLI_STR("-p", &text), CLI_STR("-f", &file),
                            CLI_ON("--decode", &decode), CLI_OFF("--no-special", &special), CLI_END};
    int parsed = cli_parse("tokenize", argc, argv, args, 0);
    if (parsed) return parsed < 0 ? (fputs(k_tokenize_usage, stdout), 0) : 1;
    if (!model) return cli_fail("tokenize: missing -m FILE.gguf");
    if (!text == !file) return cli_fail("tokenize: give exactly one of -p TEXT or -f FILE");

    char *buf = NULL;
    size_t len;
    if (file) {
        int read_st = cli_read_file(file, &buf, &len);
        if (read_st) return read_st;
        text = buf;
    } else {
        len = strlen(text);
    }

    char err[PF_ERR_LEN];
    int status = 1;
    pf_tokenizer *t;
    pf_rc rc = pf_tokenizer_load_file(model, &t, err);
    if (rc != PF_RC_OK) {
        status = cli_fail_status(pf_api_status(rc), err);
        goto out;
    }
    if (decode) {
        status = decode_ids(t, text, len);
    } else {
        int32_t *ids;
        size_t n;
        if ((rc = pf_tokenize(t, text, len, special, &ids, &n, err)) != PF_RC_OK) {
            status = cli_fail_kind(pf_api_status(rc), "tokenize: %s: %s", file ? file : "-p TEXT", err);
            goto out;
        }
        status = print_ids(ids, n);
        free(ids);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) status = cli_fail("tokenize: write to stdout failed");
out:
    pf_tokenizer_free(t);
    free(buf);
    return status;
}

int cmd_vocab_import(int argc, char **argv) {
    const char *in[2] = {NULL, NULL}, *out = NULL;
    const cli_arg args[] = {CLI_STR("-o", &out), CLI_POS(in, 2), CLI_END};
    int parsed = cli_parse("vocab-import", argc, argv, args, 0);
    if (parsed) return parsed < 0 ? (fputs(k_import_usage, stdout), 0) : 1;
    if (!in[0]) return cli_fail("vocab-import: missing tokenizer.json");
    if (!out) return cli_fail("vocab-import: missing -o vocab.gguf");
    char err[PF_ERR_LEN];
    pf_rc rc = pf_vocab_import(in[0], in[1], out, err);
    if (rc != PF_RC_OK) return cli_fail_kind(pf_api_status(rc), "%s", err);
    return 0;
}
