/* pocketflash gen: batch generation over a JSONL prompt file (for building draft training data and
 * for inspecting a model on many prompts). */
#include <errno.h>
#include "formats/grow.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_session.h"
#include "api/strategy.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/spec_flags.h"
#include "engine/chat_tokens.h"
#include "engine/generate.h"
#include "engine/tokenizer.h"
#include "eval/tasks.h"
#include "formats/atomic_file.h"
#include "formats/json.h"
#include "kernels/topology.h"
#include "verify/spec.h"
#include "include/pocketflash.h"

static const char k_usage[] =
    "usage: pocketflash gen -m MODEL.gguf -i PROMPTS.jsonl -o OUT.jsonl [options]\n"
    "  generates a response for every line {\"prompt\": ..., \"id\": ...} of PROMPTS.jsonl (ChatML-wrapped)\n"
    "  and writes one line per prompt: {\"id\", \"prompt\", \"response\", \"prompt_ids\", \"response_ids\",\n"
    "  \"stop\"}; the output is written to a temporary file and renamed when complete.\n"
    "  -n N           max tokens per response (default 256)\n"
    "  -t N           threads (default: the physical cores, here %d)\n"
    CLI_LOAD_USAGE
    "  -c N           context size (default 2048)\n"
    "  --kv f16|q8    KV cache: f16 (default) or 8-bit keys and values with per-row scales (half\n"
    "                 the memory and the bytes attention reads; slightly less exact; SIMD kernels only)\n"
    "  --temp T --top-k K --top-p P --seed S   sampling (default greedy); prompt i uses seed S+i\n"
    "  --limit N      only the first N prompts\n"
    "  --batch N      decode N prompts at a time in one forward (continuous: a finished prompt's place\n"
    "                 goes to the next); the same output file; with a strategy (-d, --spec, as without\n"
    "                 --batch) every prompt's drafts are verified in that one forward, draft rows going\n"
    "                 where they are expected to pay most; each line's response is the one it gets\n"
    "                 without --batch, structured output included; no --log-rounds\n"
    "  --json-schema FILE  every response is JSON valid against the JSON Schema in FILE\n"
    "                 (docs/structured-output.md); --json: any JSON object; a line's own \"schema\"\n"
    "                 (a JSON Schema object or boolean) constrains that line's response instead\n"
    "  --no-special   special-token texts inside the prompts are plain text (the ChatML template's\n"
    "                 own markers stay special; default: parsed as special tokens)\n"
    "  -d DRAFT.gguf  decode speculatively with this DFlash draft, a GGUF or a .pfb bundle holding\n"
    "                 one (same output; also -md); a -m bundle's own draft is used without -d\n"
    "  --spec S       the strategy, as `run --spec`: plain, dflash, ngram, hybrid, dec, adaptive\n"
    "                 (default with a draft: dflash when --block is given, else dec when the draft\n"
    "                 has a Dec head, else adaptive; without one: plain)\n"
    "  --block B      rows verified per round (default: the strategy's, as `run`)\n"
    "  --draft-max N  llama.cpp's spelling: N tokens drafted per round, i.e. --block N+1\n"
    "  --ngram N      longest pattern the ngram draft matches (default 3)\n"
    "  --profile FILE --task TYPE  a tuned profile's choice, as `run`\n"
    "  --print-plan   print the strategy the flags resolve to and exit (no -i/-o needed)\n"
    "  --draft-head N|full  with -d: the draft's head scores its N most frequent tokens, or the whole\n"
    "                 vocabulary (default: the draft's dflash.head_vocab, else the whole vocabulary)\n"
    "  --log-rounds FILE  with -d: append every round's Dec features and accepted length to FILE\n"
    "                 (the training data of a Dec head, see train/train_dec.py)\n"
    "llama.cpp spellings accepted: --model, --predict/--n-predict, --ctx-size, --threads, -s (--seed),\n"
    "  -md/--model-draft, --draft/--draft-n (--draft-max)\n";

typedef struct {
    int32_t *ids;
    int n;
    size_t cap;
} idbuf;

static int push_id(void *u, int32_t t) {
    idbuf *b = u;
    int32_t *p = pf_grow(b->ids, &b->cap, (size_t)b->n + 1, sizeof *p, 256);
    if (!p) return 1;
    b->ids = p;
    b->ids[b->n++] = t;
    return 0;
}

static void json_str(FILE *f, const char *s, size_t n) {
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\r') fputs("\\r", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void json_ids(FILE *f, const int32_t *ids, int n) {
    fputc('[', f);
    for (int i = 0; i < n; i++) fprintf(f, "%s%d", i ? ", " : "", ids[i]);
    fputc(']', f);
}

/* The response's text (detokenized as one piece) as a JSON string. */
static void json_response_text(FILE *f, const pf_tokenizer *tok, const idbuf *resp) {
    pf_detok dt;
    pf_detok_init(&dt, tok, true);
    char *acc = NULL;
    size_t acc_n = 0;
    for (int i = 0; i <= resp->n; i++) {
        size_t k = 0;
        const char *piece = i < resp->n ? pf_detok_push(&dt, resp->ids[i], &k) : pf_detok_flush(&dt, &k);
        if (!piece || !k) continue;
        char *na = realloc(acc, acc_n + k);
        if (!na) break;
        acc = na;
        memcpy(acc + acc_n, piece, k);
        acc_n += k;
    }
    pf_detok_free(&dt);
    json_str(f, acc ? acc : "", acc_n);
    free(acc);
}

/* What every prompt line shares: the model, its session, the parameters and the output. */
typedef struct {
    pf_model *m;
    pf_session *s;
    pf_gen_params *gp;
    uint64_t seed0; /* prompt i uses seed0 + i */
    bool no_special;
    const char *in;
    FILE *fo;
    idbuf resp;
} gen_run;

/* A prompt line parsed: its document (for the id and the prompt), its ChatML-wrapped ids and its
 * own schema (or NULL). */
typedef struct {
    int lineno;
    pf_json_doc *doc;
    const pf_json *id, *prompt;
    int32_t *ids;
    size_t n_ids;
    char *schema;
} gen_line_in;

static void line_free(gen_line_in *l) {
    free(l->schema);
    free(l->ids);
    pf_json_free(l->doc);
}

static const char *stop_name(pf_stop_reason stop) {
    return stop == PF_STOP_EOT ? "eot" : stop == PF_STOP_LENGTH ? "length" : "context";
}

/* One output line: {"id", "prompt", "response", "prompt_ids", "response_ids", "stop"}; the id is the
 * line's own string id, else its index. */
static void write_record(gen_run *g, const gen_line_in *l, const idbuf *resp, pf_stop_reason stop) {
    FILE *fo = g->fo;
    fputs("{\"id\": ", fo);
    if (l->id && l->id->type == PF_JSON_STRING) json_str(fo, l->id->u.str.s, l->id->u.str.len);
    else fprintf(fo, "%d", l->lineno - 1);
    fputs(", \"prompt\": ", fo);
    json_str(fo, l->prompt->u.str.s, l->prompt->u.str.len);
    fputs(", \"response\": ", fo);
    json_response_text(fo, g->m->tok, resp);
    fputs(", \"prompt_ids\": ", fo);
    json_ids(fo, l->ids, (int)l->n_ids);
    fputs(", \"response_ids\": ", fo);
    json_ids(fo, resp->ids, resp->n);
    fprintf(fo, ", \"stop\": \"%s\"}\n", stop_name(stop));
}

/* Line lineno (len bytes, not empty) of the prompt file parsed and its prompt ChatML-wrapped into
 * *l; else the exit status of the failure's kind (reported, l freed): 3 for a malformed line. */
static int parse_line(const gen_run *g, const char *line, size_t len, int lineno, gen_line_in *l) {
    char err[PF_ERR_LEN];
    memset(l, 0, sizeof *l);
    l->lineno = lineno;
    l->doc = pf_json_parse(line, len, err);
    l->prompt = l->doc ? pf_json_get(pf_json_root(l->doc), "prompt") : NULL;
    l->id = l->doc ? pf_json_get(pf_json_root(l->doc), "id") : NULL;
    int sr = l->doc ? pf_task_schema_text(pf_json_root(l->doc), line, len, &l->schema) : 0;
    int rc = 1;
    pf_rc trc;
    if (!l->prompt || l->prompt->type != PF_JSON_STRING)
        rc = cli_fail_kind(PF_ERR_FORMAT, "%s:%d: %s", g->in, lineno, l->doc ? "no string field \"prompt\"" : err);
    else if (sr == -1)
        rc = cli_fail_kind(PF_ERR_FORMAT, "%s:%d: \"schema\" must be a JSON Schema (an object or a boolean)", g->in,
                           lineno);
    else if (sr < 0)
        rc = cli_fail_kind(PF_ERR_OOM, "%s:%d: out of memory", g->in, lineno);
    else if ((trc = pf_chat_tokenize(g->m->tok, NULL, l->prompt->u.str.s, !g->no_special, &l->ids, &l->n_ids, err)) !=
             PF_RC_OK)
        rc = cli_fail_kind(pf_api_status(trc), "%s:%d: %s", g->in, lineno, err);
    else
        rc = 0;
    if (rc) line_free(l);
    return rc;
}

/* Line lineno (len bytes, not empty) of the prompt file: its prompt ChatML-wrapped, generated and
 * written; the exit status of the failure (reported) when the line is malformed (1) or generation
 * fails (its kind's). */
static int gen_line(gen_run *g, const char *line, size_t len, int lineno) {
    char err[PF_ERR_LEN];
    gen_line_in l;
    int rc = parse_line(g, line, len, lineno, &l);
    if (rc) return rc;
    pf_gen_params gp = *g->gp; /* this line's: its own schema, if it has one, and seed */
    pf_gen_stats st;
    pf_status gst;
    g->resp.n = 0;
    gp.seed = g->seed0 + (uint64_t)(lineno - 1);
    if (l.schema) {
        gp.json_schema = l.schema;
        gp.json_object = false;
    }
    if ((gst = pf_generate_tokens(g->s, l.ids, (int)l.n_ids, &gp, push_id, &g->resp, &st, err)) != PF_OK) {
        rc = cli_fail_kind(gst, "%s:%d: %s", g->in, lineno, err);
    } else {
        write_record(g, &l, &g->resp, st.stop);
        rc = 0;
    }
    line_free(&l);
    return rc;
}

/* ---- --batch N: the prompt file as the feed of the library's batched generation ---- */

/* A line in flight: parsed, then decoded; written once it and every line before it ended. */
typedef struct gen_item {
    gen_line_in line;
    idbuf resp;
    int oom;            /* a response id could not be kept */
    const int *stopped; /* the feed's: nonzero once a line was reported or a write failed */
    pf_stop_reason stop;
    int ended;
    struct gen_item *next;
} gen_item;

typedef struct {
    gen_run *g;
    FILE *fi;
    char *buf;
    size_t cap;
    long long limit;
    int lineno, written;
    int failed;            /* the exit status of the line reported (0: none yet); the feed ends */
    gen_item *head, *tail; /* the lines in flight, in file order */
} gen_feed;

/* The lines at the head that ended, written and freed. */
static void flush_ended(gen_feed *f) {
    while (f->head && f->head->ended) {
        gen_item *it = f->head;
        write_record(f->g, &it->line, &it->resp, it->stop);
        if (ferror(f->g->fo) && !f->failed) f->failed = 1; /* reported by cmd_gen */
        if (++f->written % 50 == 0) fprintf(stderr, "\rgen: %d prompts", f->written);
        f->head = it->next;
        if (!f->head) f->tail = NULL;
        line_free(&it->line);
        free(it->resp.ids);
        free(it);
    }
}

/* Each generated token into the line's response ids (what the one-at-a-time path collects). */
static void item_token(void *u, int32_t t, bool drafted) {
    (void)drafted;
    gen_item *it = u;
    if (push_id(&it->resp, t)) it->oom = 1;
}

/* The line's text is not needed (the response is written from its ids); the lines still
 * decoding are cancelled once a line was reported or a write failed. */
static int item_text(void *u, const char *text, size_t len) {
    (void)text, (void)len;
    return *((const gen_item *)u)->stopped ? -1 : 0;
}

static int feed_next(void *u, pf_batch_request *r, bool idle) {
    (void)idle;
    gen_feed *f = u;
    ssize_t len;
    while (!f->failed && (f->limit < 0 || f->lineno < f->limit) && (len = getline(&f->buf, &f->cap, f->fi)) > 0) {
        f->lineno++;
        while (len > 0 && (f->buf[len - 1] == '\n' || f->buf[len - 1] == '\r')) len--;
        if (!len) continue;
        gen_item *it = calloc(1, sizeof *it);
        int rc = it ? parse_line(f->g, f->buf, (size_t)len, f->lineno, &it->line)
                    : cli_fail_kind(PF_ERR_OOM, "%s:%d: out of memory", f->g->in, f->lineno);
        if (rc) {
            free(it);
            f->failed = rc;
            break;
        }
        it->stopped = &f->failed;
        *(f->tail ? &f->tail->next : &f->head) = it;
        f->tail = it;
        /* the one-at-a-time call's parameters (gen_line), with the ChatML wrapping left to the
         * library: the same ids parse_line made */
        pf_gen_params p = *f->g->gp;
        p.seed = f->g->seed0 + (uint64_t)(f->lineno - 1);
        if (it->line.schema) {
            p.json_schema = it->line.schema;
            p.json_object = false;
        }
        p.chat = true;
        p.system = NULL;
        p.no_special = f->g->no_special;
        p.on_token_source = item_token;
        p.token_source_user = it;
        *r = (pf_batch_request){.prompt = it->line.prompt->u.str.s, .len = it->line.prompt->u.str.len, .params = p,
                                .on_text = item_text, .user = it};
        return 1;
    }
    return 0;
}

static void feed_done(void *u, const pf_batch_request *r, pf_status st, const pf_gen_stats *stats, const char *err) {
    gen_feed *f = u;
    gen_item *it = r->user;
    if (st == PF_OK && it->oom) st = PF_ERR_OOM, err = "out of memory";
    if (st != PF_OK && !f->failed) /* a line cancelled after another's failure is not reported again */
        f->failed = cli_fail_kind(st, "%s:%d: %s", f->g->in, it->line.lineno, err);
    if (st != PF_OK) return; /* left in flight: the output file is not written */
    it->stop = stats->stop;
    it->ended = 1;
    flush_ended(f);
}

/* Every line of fi decoded n_batch at a time (pf_generate_batch: each line with gen_line's
 * parameters, its strategy and its structured output) and written in file order; 0, or the exit
 * status of the failure (reported). */
static int gen_batched(gen_run *g, FILE *fi, long long limit, int n_batch, int *lines) {
    gen_feed f = {.g = g, .fi = fi, .limit = limit};
    char err[PF_ERR_LEN];
    pf_batch_feed feed = {feed_next, feed_done, &f};
    pf_status st = pf_generate_batch(g->s, n_batch, &feed, err);
    int rc = f.failed;
    if (st != PF_OK && !rc) rc = cli_fail_status(st, err);
    while (f.head) { /* what a failure left in flight */
        gen_item *it = f.head;
        f.head = it->next;
        line_free(&it->line);
        free(it->resp.ids);
        free(it);
    }
    free(f.buf);
    *lines = f.lineno;
    return rc;
}

/* --log-rounds: the rounds of the strategy the library's resolver makes of gp (built now; every
 * line's call runs it) appended to log_rounds; 0, or the exit status (reported). */
static int open_round_log(pf_session *s, const pf_gen_params *gp, const char *log_rounds, FILE **log_file) {
    char err[PF_ERR_LEN];
    api_choice c;
    pf_status st = pf_api_strategy(s, gp, &c, err);
    if (st != PF_OK) return cli_fail_status(st, err);
    return c.spec ? cli_round_log(c.spec, log_rounds, log_file) : 0;
}

int cmd_gen(int argc, char **argv) {
    const char *model = NULL, *in = NULL, *out = NULL, *log_rounds = NULL, *schema_path = NULL;
    cli_spec_flags fl = {0};
    pf_draft *draft = NULL;
    FILE *log_file = NULL;
    pf_gen_params gp;
    pf_gen_params_default(&gp);
    gp.max_tokens = 256;
    pf_session_params sp = {.n_threads = pf_physical_cores(), .n_ctx = 2048};
    bool no_special = false;
    long long limit = -1;
    int n_batch = 0;
    pf_load_params lp = {0};
    const cli_arg args[] = {
        CLI_LOAD(&lp),
        CLI_STR("-m", &model), CLI_STR("-i", &in), CLI_STR("-o", &out), CLI_STR("-d", &fl.draft),
        CLI_STR("--spec", &fl.spec), CLI_STR("--profile", &fl.profile), CLI_STR("--task", &fl.task),
        CLI_INT("--ngram", &fl.ngram_n, 1, 16), CLI_ON("--print-plan", &fl.print_plan),
        CLI_STR("--log-rounds", &log_rounds), CLI_STR("--json-schema", &schema_path), CLI_BLOCK("--block", &fl.block),
        CLI_DRAFT_HEAD("--draft-head", &fl.draft_head), CLI_DRAFT_MAX("--draft-max", &fl.block),
        CLI_INT("-n", &gp.max_tokens, 1, 1 << 20), CLI_INT("-t", &sp.n_threads, 1, 256),
        CLI_I64("-c", &sp.n_ctx, 16, 1 << 24), CLI_KV("--kv", &sp.kv_q8), CLI_FLOAT("--temp", &gp.temp, 0, 100),
        CLI_INT("--top-k", &gp.top_k, 0, 1 << 30), CLI_FLOAT("--top-p", &gp.top_p, 0, 1),
        CLI_U64("--seed", &gp.seed, 0, INT64_MAX), CLI_LL("--limit", &limit, 0, 1ll << 40),
        CLI_INT("--batch", &n_batch, 1, 256),
        CLI_ON("--no-special", &no_special), CLI_ON("--json", &gp.json_object), CLI_END};
    int parsed = cli_parse("gen", argc, argv, args, CLI_PARSE_ALIASES);
    if (parsed) return parsed < 0 ? (printf(k_usage, sp.n_threads), 0) : 1;
    if (!model || (!fl.print_plan && (!in || !out))) return cli_fail("gen: -m, -i and -o are required");
    if (log_rounds && !fl.draft) return cli_fail("gen: --log-rounds needs -d DRAFT.gguf");
    if (schema_path && gp.json_object) return cli_fail("gen: give one of --json-schema FILE or --json");
    if (n_batch && log_rounds) return cli_fail("gen: --batch takes no --log-rounds");
    size_t schema_len = 0;
    char *schema_text = NULL;
    int read_st = schema_path ? cli_read_file(schema_path, &schema_text, &schema_len) : 0;
    if (read_st) return read_st;
    gp.json_schema = schema_text;
    char err[PF_ERR_LEN];
    pf_model *m = NULL;
    pf_status st = pf_load_model_with(model, &lp, &m, err);
    if (st != PF_OK) return free(schema_text), cli_fail_status(st, err);
    if (fl.print_plan) {
        int prc = cli_spec_params("gen", m, &fl, &gp, &draft);
        if (!prc) prc = cli_print_plan(&gp);
        pf_free_draft(draft);
        pf_model_free(m);
        free(schema_text);
        return prc;
    }
    gen_run g = {.m = m, .gp = &gp, .seed0 = gp.seed, .no_special = no_special, .in = in};
    st = pf_session_new(m, &sp, &g.s, err);
    FILE *fi = fopen(in, "rb");
    atomic_file af = {0};
    int rc = 1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0;
    if (!g.s) { rc = cli_fail_status(st, err); goto done; }
    if ((rc = cli_spec_params("gen", m, &fl, &gp, &draft)) != 0) goto done;
    rc = 1;
    if (log_rounds && (rc = open_round_log(g.s, &gp, log_rounds, &log_file))) goto done;
    if (!fi) { rc = cli_fail_kind(PF_ERR_IO, "%s: cannot open", in); goto done; }
    if ((rc = cli_create(out, &af))) goto done;
    g.fo = af.fp;
    rc = 1;
    if (n_batch && (rc = gen_batched(&g, fi, limit, n_batch, &lineno)) != 0) {
        if (ferror(g.fo)) {
            atomic_file_failed(&af);
            rc = cli_fail_kind(PF_ERR_IO, "%s: write failed: %s", out, strerror(af.err));
        }
        goto done;
    }
    while (!n_batch && (len = getline(&line, &cap, fi)) > 0 && (limit < 0 || lineno < limit)) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        if (!len) continue;
        if ((rc = gen_line(&g, line, (size_t)len, lineno)) != 0) goto done;
        rc = 1;
        /* a full disk ends the run now, not after the remaining prompts */
        if (ferror(g.fo)) {
            atomic_file_failed(&af);
            rc = cli_fail_kind(PF_ERR_IO, "%s: write failed: %s", out, strerror(af.err));
            goto done;
        }
        if (lineno % 50 == 0) fprintf(stderr, "\rgen: %d prompts", lineno);
    }
    if ((rc = cli_finish(&af, out))) goto done;
    fprintf(stderr, "\rgen: %d prompts done\n", lineno);
    rc = 0;
done:
    atomic_file_abort(&af);
    if (fi) fclose(fi);
    free(line);
    free(g.resp.ids);
    if (log_file) fclose(log_file);
    pf_session_free(g.s);
    pf_free_draft(draft);
    pf_model_free(m);
    free(schema_text);
    return rc;
}
