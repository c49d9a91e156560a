/* .pfb bundles: pack -> run gives the GGUF files' output (target alone and with the bundled draft);
 * every single-bit flip of the header, the table, the metadata sections, the padding and the
 * profile, and a deterministic sample of 24000 bit positions in tensor data, is caught by
 * pfb_verify and by pfb_parse (the validator pf_model_load runs on a bundle); truncations at many
 * lengths are rejected; structurally bad tables with valid hashes are rejected with the field
 * named; the CLI pack / verify / run work end to end and a failed pack leaves no file; every
 * command that takes -d takes a bundle's draft. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "api/api_session.h"
#include "api/strategy.h"
#include "convert/dflash_synth.h"
#include "engine/generate.h"
#include "convert/synth.h"
#include "formats/ggml_types.h"
#include "formats/pfb.h"
#include "test.h"
#include "util.h"
#include "verify/spec.h"
#include "verify/strategies.h"

typedef struct { char target[300], draft[300], bundle[300]; int ok; } fixture;

static const char k_profile[] = "{\"block\": 8, \"spec\": \"dflash\"}";

/* A tiny q8_0 target, a 1-layer DFlash draft for it, and their bundle with a profile. */
static const fixture *fix(void) {
    static fixture f;
    if (f.ok) return &f;
    char err[PF_ERR_LEN];
    test_tmp_path(f.bundle, sizeof f.bundle, "pfb-app.pfb");
    if (test_synth_target_draft("pfb", 31, 1, f.target, f.draft, sizeof f.target, err) < 0) {
        printf("    fixture: %s\n", err);
        return NULL;
    }
    gguf_file *t, *d = NULL;
    if (gguf_open_file(f.target, &t, err) == PF_RC_OK) gguf_open_file(f.draft, &d, err);
    pfb_pack_params pp = {.target = t, .draft = d, .profile = k_profile, .profile_len = strlen(k_profile)};
    pf_rc r = t && d ? pfb_write(f.bundle, &pp, err) : PF_RC_IO;
    gguf_close(t);
    gguf_close(d);
    if (r != PF_RC_OK) {
        printf("    fixture: %s\n", err);
        return NULL;
    }
    f.ok = 1;
    return &f;
}

static void prompt_of(int i, int32_t *p, int *n, int V) {
    *n = 4 + i % 9;
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 7);
    for (int j = 0; j < *n; j++) {
        x ^= x >> 29; x *= 0xbf58476d1ce4e5b9ull; x ^= x >> 32;
        p[j] = (int32_t)(x % (uint64_t)V);
    }
}

/* Greedy tokens of `m` for prompt i, plain (spec NULL) or with a dflash drafter (draft_path NULL =
 * the one bundled with m). */
static int gen(pf_model *m, const char *spec, const char *draft_path, int i, test_seq *out, char *err) {
    pf_session_params sp = {.n_threads = 1, .n_ctx = 128};
    pf_session *s = NULL;
    pf_session_new(m, &sp, &s, err);
    if (!s) return -1;
    pf_drafter *d = NULL;
    pf_spec *sx = NULL;
    int block = 0, rc = -1;
    pf_gen_params gp = test_gen_fixed(20);
    if (spec) {
        if (pf_drafter_open(spec, draft_path, &s->engine, 3, &block, &d, err) != PF_RC_OK) goto done;
        if (!(sx = pf_spec_new(&s->engine, d, block, err))) goto done;
        pf_api_use_strategy(s, pf_spec_strategy(sx));
    }
    int32_t p[16];
    int np;
    prompt_of(i, p, &np, m->hp.n_vocab);
    out->n = 0;
    rc = pf_generate_tokens(s, p, np, &gp, test_seq_push, out, NULL, err) == PF_OK ? 0 : -1;
done:
    pf_api_use_strategy(s, NULL); /* before the strategy goes */
    pf_spec_free(sx);
    pf_drafter_free(d);
    pf_session_free(s);
    return rc;
}

TEST(pfb_bundle_output_equals_gguf_files) {
    const fixture *f = fix();
    CHECK(f);
    char err[PF_ERR_LEN];
    pf_model *mg = pf_model_load(f->target, err), *mb = pf_model_load(f->bundle, err);
    CHECKF(mg && mb, "%s", err);
    CHECK(!mg->bundle && mb->bundle && pfb_has_model(mb->bundle, PFB_OWNER_DRAFT));
    size_t plen;
    const void *prof = pfb_profile(mb->bundle, &plen);
    CHECK(prof && plen == strlen(k_profile) && !memcmp(prof, k_profile, plen));
    for (int i = 0; i < 6; i++) {
        test_seq a, b, c, d;
        CHECKF(gen(mg, NULL, NULL, i, &a, err) == 0, "%s", err);
        CHECKF(gen(mb, NULL, NULL, i, &b, err) == 0, "%s", err);
        CHECKF(gen(mg, "dflash", f->draft, i, &c, err) == 0, "%s", err);
        CHECKF(gen(mb, "dflash", NULL, i, &d, err) == 0, "%s", err);
        CHECK(a.n == 20 && b.n == 20 && c.n == 20 && d.n == 20);
        CHECKF(!memcmp(a.toks, b.toks, sizeof a.toks[0] * 20), "prompt %d: bundle target differs", i);
        CHECKF(!memcmp(a.toks, c.toks, sizeof a.toks[0] * 20) && !memcmp(c.toks, d.toks, sizeof a.toks[0] * 20),
               "prompt %d: bundled draft differs", i);
    }
    /* a plain GGUF target has no bundled draft to fall back on */
    pf_session_params sp = {.n_threads = 1, .n_ctx = 64};
    pf_session *s = NULL;
    pf_session_new(mg, &sp, &s, err);
    int block = 0;
    pf_drafter *none = NULL;
    CHECK(s && pf_drafter_open("dflash", NULL, &s->engine, 3, &block, &none, err) == PF_RC_ARG && strstr(err, "needs a draft"));
    pf_session_free(s);
    /* uncompressed tensors are used in place from the mapping, 64-byte aligned */
    const gguf_tensor *t = gguf_find_tensor(mb->file, "blk.0.attn_q.weight");
    CHECK(t && t->data && ((uintptr_t)t->data % PFB_ALIGN) == 0);
    pf_model_free(mg);
    pf_model_free(mb);
}

/* The fixture's bundle as bytes (malloc'd), or NULL. */
static uint8_t *bundle_bytes(size_t *n) {
    const fixture *f = fix();
    return f ? (uint8_t *)test_slurp(f->bundle, n) : NULL;
}

/* Bits of the file every single flip of which is tried: header, table, metadata and profile
 * sections, and every padding byte; tensor sections get a deterministic sample. */
TEST(pfb_every_bit_flip_detected) {
    size_t n;
    uint8_t *buf = bundle_bytes(&n);
    CHECK(buf);
    char err[PF_ERR_LEN];
    pfb_bundle *b = pfb_parse(buf, n, "flip.pfb", err);
    CHECKF(b, "%s", err);
    /* owner of each byte: -1 exhaustive, else the tensor section index */
    int *who = malloc(n * sizeof *who);
    CHECK(who);
    for (size_t i = 0; i < n; i++) who[i] = -1;
    size_t tensor_bytes = 0;
    int ns = pfb_n_sections(b);
    for (int i = 0; i < ns; i++) {
        const pfb_section *s = pfb_section_at(b, i);
        if (s->kind != PFB_KIND_TENSOR) continue;
        for (uint64_t j = 0; j < s->stored_size; j++) who[s->offset + j] = i;
        tensor_bytes += (size_t)s->stored_size;
    }
    char names[64][PFB_NAME_LEN + 16];
    for (int i = 0; i < ns && i < 64; i++)
        snprintf(names[i], sizeof names[i], "'%s/%s'", pfb_owner_name(pfb_section_at(b, i)->owner),
                 pfb_section_at(b, i)->name);
    pfb_close(b);
    CHECK(ns <= 64);
    long exhaustive = 0, sampled = 0;
    for (size_t i = 0; i < n; i++) {
        if (who[i] >= 0) continue;
        for (int bit = 0; bit < 8; bit++) {
            buf[i] ^= (uint8_t)(1u << bit);
            int ns_flip;
            pf_rc v = pfb_verify(buf, n, "flip.pfb", &ns_flip, err);
            pfb_bundle *l = v == PF_RC_FORMAT ? pfb_parse(buf, n, "flip.pfb", err) : NULL;
            buf[i] ^= (uint8_t)(1u << bit);
            CHECKF(v == PF_RC_FORMAT && !l, "flip of byte %zu bit %d not detected", i, bit);
            CHECKF(strstr(err, "flip.pfb: ") == err, "message '%s'", err);
            exhaustive++;
        }
    }
    uint64_t x = 12345;
    while (sampled < 24000) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        size_t i = (size_t)((x >> 20) % n);
        if (who[i] < 0) continue;
        int bit = (int)(x >> 60) & 7;
        buf[i] ^= (uint8_t)(1u << bit);
        int ns_flip;
        pf_rc v = pfb_verify(buf, n, "flip.pfb", &ns_flip, err);
        CHECKF(v == PF_RC_FORMAT && strstr(err, names[who[i]]) && strstr(err, "hash mismatch"),
               "tensor flip at %zu: '%s' should name %s", i, err, names[who[i]]);
        pfb_bundle *l = pfb_parse(buf, n, "flip.pfb", err);
        buf[i] ^= (uint8_t)(1u << bit);
        CHECKF(!l, "tensor flip at %zu loads", i);
        sampled++;
    }
    printf("    %ld exhaustive flips (%zu bytes), %ld sampled flips in %zu tensor bytes\n", exhaustive,
           (size_t)exhaustive / 8, sampled, tensor_bytes);
    int ns_ok;
    CHECK(pfb_verify(buf, n, "flip.pfb", &ns_ok, err) == PF_RC_OK && ns_ok == ns);
    free(who);
    free(buf);
}

TEST(pfb_truncated_rejected) {
    size_t n;
    uint8_t *buf = bundle_bytes(&n);
    CHECK(buf);
    char err[PF_ERR_LEN];
    int tried = 0;
    for (size_t len = 0; len < n; len += len < 8192 ? 1 : 997) {
        uint8_t *cut = malloc(len ? len : 1); /* exact size: a read past the end is an ASan error */
        memcpy(cut, buf, len);
        pfb_bundle *b = pfb_parse(cut, len, "cut.pfb", err);
        free(cut);
        CHECKF(!b, "truncated to %zu bytes loads", len);
        CHECKF(strstr(err, "cut.pfb: ") == err && strstr(err, "truncated"), "length %zu: '%s'", len, err);
        tried++;
    }
    CHECK(tried > 8000);
    free(buf);
}

/* Re-seal the header hash after editing the table, so the structural checks themselves answer. */
static void reseal(uint8_t *buf) {
    uint32_t count;
    uint64_t toff;
    memcpy(&count, buf + 12, 4);
    memcpy(&toff, buf + 16, 8);
    uint8_t h[PFB_HEADER_SIZE];
    memcpy(h, buf, sizeof h);
    memset(h + 40, 0, 8);
    XXH3_state_t *st = XXH3_createState();
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, h, sizeof h);
    XXH3_64bits_update(st, buf + toff, (size_t)count * PFB_ENTRY_SIZE);
    uint64_t v = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    memcpy(buf + 40, &v, 8);
}

static uint8_t *entry(uint8_t *buf, int i) { return buf + PFB_HEADER_SIZE + (size_t)i * PFB_ENTRY_SIZE; }

TEST(pfb_structural_errors_named) {
    size_t n = 0;
    uint8_t *orig = bundle_bytes(&n), *buf = malloc(n ? n : 1);
    CHECK(orig && buf);
    char err[PF_ERR_LEN];
    struct { const char *what, *expect; } cases[] = {
        {"overlap", "overlaps"},       {"codec", "unknown codec"},      {"align", "alignment"},
        {"index", "tensor index"},     {"dup-index", "duplicate section"}, {"raw", "raw size"},
        {"past-end", "run past the end"}, {"kind", "unknown kind"},      {"padding", "padding"},
        {"no-target", "no target metadata"}, {"size-mismatch", "tensor info needs"},
        {"bad-zstd", "zstd"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        memcpy(buf, orig, n);
        const char *w = cases[c].what;
        uint8_t *e0 = entry(buf, 0), *e1 = entry(buf, 1), *e2 = entry(buf, 2), *e4 = entry(buf, 4);
        uint64_t o0, s0, u;
        uint32_t v32;
        memcpy(&o0, e0 + 112, 8); /* section 0: the target's metadata (zstd, unaligned end) */
        memcpy(&s0, e0 + 120, 8);
        if (!strcmp(w, "overlap")) memcpy(e2 + 112, e1 + 112, 8);
        else if (!strcmp(w, "codec")) e1[98] = 7;
        else if (!strcmp(w, "align")) { v32 = 48; memcpy(e1 + 100, &v32, 4); }
        else if (!strcmp(w, "index")) { v32 = 5000; memcpy(e1 + 104, &v32, 4); }
        else if (!strcmp(w, "dup-index")) { memcpy(e2, e1, PFB_NAME_LEN); memcpy(e2 + 104, e1 + 104, 4); }
        else if (!strcmp(w, "raw")) { memcpy(&u, e1 + 120, 8); u++; memcpy(e1 + 128, &u, 8); }
        else if (!strcmp(w, "past-end")) { u = (uint64_t)n / PFB_ALIGN * PFB_ALIGN; memcpy(e1 + 112, &u, 8); }
        else if (!strcmp(w, "kind")) e1[96] = 9;
        else if (!strcmp(w, "padding")) { CHECK((o0 + s0) % PFB_ALIGN); buf[o0 + s0] = 1; }
        else if (!strcmp(w, "no-target")) e0[96] = PFB_KIND_TENSOR;
        else if (!strcmp(w, "size-mismatch")) { /* token_embd and blk.0.attn_q swap names and indices */
            uint8_t t[PFB_NAME_LEN];
            memcpy(t, e1, PFB_NAME_LEN); memcpy(e1, e4, PFB_NAME_LEN); memcpy(e4, t, PFB_NAME_LEN);
            memcpy(t, e1 + 104, 4); memcpy(e1 + 104, e4 + 104, 4); memcpy(e4 + 104, t, 4);
        } else if (!strcmp(w, "bad-zstd")) { /* break the frame magic, then re-hash the section */
            CHECK(e0[98] == PFB_CODEC_ZSTD);
            buf[o0] ^= 0xff;
            u = XXH3_64bits(buf + o0, (size_t)s0);
            memcpy(e0 + 136, &u, 8);
        }
        reseal(buf);
        int ns_bad;
        pf_rc v = pfb_verify(buf, n, "bad.pfb", &ns_bad, err);
        CHECKF(v == PF_RC_FORMAT && strstr(err, "bad.pfb: ") == err && strstr(err, cases[c].expect), "%s: '%s' lacks '%s'",
               w, v != PF_RC_OK ? err : "(accepted)", cases[c].expect);
    }
    /* the unmodified copy still verifies: every case above changed only its own field */
    memcpy(buf, orig, n);
    int ns_ok;
    CHECK(pfb_verify(buf, n, "ok.pfb", &ns_ok, err) == PF_RC_OK && ns_ok > 0);
    free(buf);
    free(orig);
}

/* ---- the CLI ---- */

TEST(pfb_cli_pack_verify_run) {
    const fixture *f = fix();
    CHECK(f);
    const char *d = pf_test_tmpdir();
    char cmd[2000], o[65536], ref[8192], got[8192];
    snprintf(cmd, sizeof cmd, "printf '%%s' '%s' > %s/prof.json && %s pack -m %s -d %s --profile %s/prof.json -o %s/cli.pfb",
             k_profile, d, test_cli(), f->target, f->draft, d, d);
    CHECKF(test_run(cmd, o, sizeof o, NULL, 0) == 0, "pack: %s", o);
    CHECK(strstr(o, "blk.0.attn_q.weight") && strstr(o, "zstd") && strstr(o, "compression ratio"));
    snprintf(cmd, sizeof cmd, "%s verify %s/cli.pfb", test_cli(), d);
    CHECKF(test_run(cmd, o, sizeof o, NULL, 0) == 0 && strstr(o, "ok, 41 sections"), "verify: %s", o);
    /* greedy: the bundle (its draft used by default) gives the GGUF files' text */
    snprintf(cmd, sizeof cmd, "%s run -m %s -d %s -p 'the bundle' -n 24 --ignore-eos 2>/dev/null", test_cli(), f->target, f->draft);
    CHECK(test_run(cmd, ref, sizeof ref, NULL, 0) == 0);
    snprintf(cmd, sizeof cmd, "%s run -m %s/cli.pfb -p 'the bundle' -n 24 --ignore-eos --stats", test_cli(), d);
    CHECK(test_run(cmd, o, sizeof o, NULL, 0) == 0 && strstr(o, "speculation:")); /* the bundled draft speculates */
    /* detection is by magic: the same bundle under a .gguf name, plain decoding by --spec ar */
    snprintf(cmd, sizeof cmd, "cp %s/cli.pfb %s/looks-like.gguf && %s run -m %s/looks-like.gguf -p 'the bundle' -n 24 "
             "--ignore-eos 2>/dev/null", d, d, test_cli(), d);
    CHECK(test_run(cmd, got, sizeof got, NULL, 0) == 0 && !strcmp(ref, got));
    snprintf(cmd, sizeof cmd, "cp %s %s/plain.pfb && %s run -m %s/plain.pfb -d %s -p 'the bundle' -n 24 --ignore-eos "
             "2>/dev/null", f->target, d, test_cli(), d, f->draft); /* and a GGUF under a .pfb name is a GGUF */
    CHECK(test_run(cmd, got, sizeof got, NULL, 0) == 0 && !strcmp(ref, got));
    snprintf(cmd, sizeof cmd, "%s run -m %s/cli.pfb --spec ar -p 'the bundle' -n 24 --ignore-eos 2>/dev/null", test_cli(), d);
    CHECK(test_run(cmd, got, sizeof got, NULL, 0) == 0 && !strcmp(ref, got));
    snprintf(cmd, sizeof cmd, "%s run -m %s/cli.pfb -p 'the bundle' -n 24 --ignore-eos 2>/dev/null", test_cli(), d);
    CHECK(test_run(cmd, got, sizeof got, NULL, 0) == 0 && !strcmp(ref, got));
    /* a corrupted byte: verify names the section and, as run, refuses it as a bad file (3) */
    snprintf(cmd, sizeof cmd, "cp %s/cli.pfb %s/bad.pfb && printf '\\377' | dd of=%s/bad.pfb bs=1 seek=200000 conv=notrunc 2>/dev/null"
             " && %s verify %s/bad.pfb", d, d, d, test_cli(), d);
    CHECKF(test_run(cmd, o, sizeof o, NULL, 0) == 3 && test_count_lines(o) == 1 && strstr(o, "pocketflash: ") == o &&
           strstr(o, "bad.pfb: section 'target/") && strstr(o, "hash mismatch"), "verify bad: %s", o);
    snprintf(cmd, sizeof cmd, "%s run -m %s/bad.pfb -p hi", test_cli(), d);
    CHECKF(test_run(cmd, o, sizeof o, NULL, 0) == 3 && test_count_lines(o) == 1 && strstr(o, "hash mismatch"), "run bad: %s", o);
    /* truncated */
    snprintf(cmd, sizeof cmd, "head -c 300000 %s/cli.pfb > %s/cut.pfb && %s verify %s/cut.pfb", d, d, test_cli(), d);
    CHECKF(test_run(cmd, o, sizeof o, NULL, 0) == 3 && test_count_lines(o) == 1 && strstr(o, "cut.pfb: file size") && strstr(o, "truncated"),
           "verify cut: %s", o);
    snprintf(cmd, sizeof cmd, "%s run -m %s/cut.pfb -p hi", test_cli(), d);
    CHECKF(test_run(cmd, o, sizeof o, NULL, 0) == 3 && test_count_lines(o) == 1 && strstr(o, "truncated"), "run cut: %s", o);
    /* a failed pack (bad draft: 3) leaves neither the output nor a temporary file */
    snprintf(cmd, sizeof cmd, "%s pack -m %s -d %s/cut.pfb -o %s/never.pfb", test_cli(), f->target, d, d);
    CHECK(test_run(cmd, o, sizeof o, NULL, 0) == 3 && test_count_lines(o) == 1);
    snprintf(cmd, sizeof cmd, "ls %s | grep never", d);
    CHECK(test_run(cmd, o, sizeof o, NULL, 0) != 0);
    /* --spec dflash with a draft-less bundle is an error naming what is missing */
    snprintf(cmd, sizeof cmd, "%s pack -m %s -o %s/nodraft.pfb >/dev/null && %s run -m %s/nodraft.pfb --spec dflash -p hi",
             test_cli(), f->target, d, test_cli(), d);
    CHECKF(test_run(cmd, o, sizeof o, NULL, 0) == 1 && strstr(o, "needs a draft: -d DRAFT.gguf") && test_count_lines(o) == 1,
           "nodraft: %s", o);
}

/* -d takes a bundle's draft in every command that decodes with one (the one way a draft is opened):
 * `run -m TARGET -d APP.pfb` gives the text of `run -m APP.pfb` and speculates with the bundle's
 * draft; gen, bench and tune take it too; a bundle without a draft is one line saying so. */
TEST(pfb_cli_bundle_as_draft) {
    const fixture *f = fix();
    CHECK(f);
    const char *d = pf_test_tmpdir();
    char cmd[2000], o[65536], ref[8192], got[8192];
    snprintf(cmd, sizeof cmd, "%s run -m %s -p 'the draft' -n 24 --ignore-eos 2>/dev/null", test_cli(), f->bundle);
    CHECK(test_run(cmd, ref, sizeof ref, NULL, 0) == 0 && ref[0]);
    snprintf(cmd, sizeof cmd, "%s run -m %s -d %s -p 'the draft' -n 24 --ignore-eos 2>/dev/null", test_cli(), f->target,
             f->bundle);
    CHECKF(test_run(cmd, got, sizeof got, NULL, 0) == 0 && !strcmp(ref, got), "run -d bundle: '%s', want '%s'", got, ref);
    snprintf(cmd, sizeof cmd, "%s run -m %s -d %s --spec dflash -p 'the draft' -n 24 --ignore-eos --stats 2>&1", test_cli(),
             f->target, f->bundle);
    CHECKF(test_run(cmd, o, sizeof o, NULL, 0) == 0 && strstr(o, "speculation:"), "run -d bundle --stats: %s", o);
    /* gen: the same responses as with the draft's GGUF */
    snprintf(cmd, sizeof cmd, "printf '{\"id\": 1, \"prompt\": \"the draft\"}\\n{\"id\": 2, \"prompt\": \"a bundle\"}\\n' > %s/p.jsonl"
             " && %s gen -m %s -d %s -i %s/p.jsonl -o %s/gb.jsonl -n 12 -t 1 && %s gen -m %s -d %s -i %s/p.jsonl -o %s/gg.jsonl"
             " -n 12 -t 1 && cmp %s/gb.jsonl %s/gg.jsonl", d, test_cli(), f->target, f->bundle, d, d, test_cli(), f->target,
             f->draft, d, d, d, d);
    CHECKF(test_run(cmd, o, sizeof o, NULL, 0) == 0, "gen -d bundle: %s", o);
    /* bench (every output checked against plain decoding) and tune */
    snprintf(cmd, sizeof cmd, "mkdir -p %s/tasks && printf '{\"type\": \"code\", \"prompt\": \"def f(x): return x\"}\\n' > "
             "%s/tasks/code.jsonl && %s bench -m %s -d %s --tasks %s/tasks --compare fixed:2,default -n 8 --reps 1 -t 1 2>&1",
             d, d, test_cli(), f->target, f->bundle, d);
    CHECKF(test_run(cmd, o, sizeof o, NULL, 0) == 0 && strstr(o, "| fixed:2 |") && !strstr(o, "| NO |"), "bench -d bundle: %s", o);
    snprintf(cmd, sizeof cmd, "%s tune -m %s -d %s --tasks %s/tasks -o %s/prof.json --blocks 2,4 --depth 16 -n 8 --reps 1 "
             "--prompts 1 -t 1 2>&1", test_cli(), f->target, f->bundle, d, d);
    CHECKF(test_run(cmd, o, sizeof o, NULL, 0) == 0 && strstr(o, "dflash draft cost"), "tune -d bundle: %s", o);
    /* a bundle without a draft */
    snprintf(cmd, sizeof cmd, "%s pack -m %s -o %s/nodraft.pfb >/dev/null && %s run -m %s -d %s/nodraft.pfb -p hi 2>&1",
             test_cli(), f->target, d, test_cli(), f->target, d);
    CHECKF(test_run(cmd, o, sizeof o, NULL, 0) == 3 && test_count_lines(o) == 1 && strstr(o, "nodraft.pfb: the bundle holds no draft model"),
           "-d nodraft.pfb: %s", o);
}
