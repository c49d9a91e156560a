/* pocketflash public C API: load a Qwen3 GGUF target (and a DFlash / DFlash2 draft), open a
 * session, generate text: plain autoregressive decoding and speculative decoding are strategies
 * chosen in pf_gen_params behind the same pf_generate call, and speculative output equals plain
 * output (greedy: token for token; sampling: the same distribution).
 *
 * Threading and lifetime:
 * - A pf_model and a pf_draft are read-only once loaded: any number of sessions, on any threads,
 *   may use one model and one draft at the same time. Free them after every session using them.
 * - A pf_session is used by one thread at a time (calls on one session are not synchronised;
 *   another thread may take it over once a call returned). Each session has its own KV cache,
 *   scratch and n_threads worker threads; results are bitwise the same for any thread count.
 * - Callbacks run on the calling thread, inside the call; they must not call into the same session.
 *
 * Multi-turn: a session keeps its KV cache (and its draft's context, while the strategy fields of
 * pf_gen_params stay the same) between calls. A prompt that starts with tokens the cache holds
 * prefills only the rest (pf_gen_stats.n_reused); a prompt that diverges from them keeps the shared
 * prefix and drops the rest. The output is exactly that of the same call on a fresh session (every
 * forward is batch invariant). pf_session_reset empties it. */
#ifndef POCKETFLASH_H
#define POCKETFLASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PF_VERSION_MAJOR 0
#define PF_VERSION_MINOR 2
#define PF_VERSION_PATCH 0
#define PF_VERSION_STRING "0.2.0"

/* The library's version ("MAJOR.MINOR.PATCH"); equals PF_VERSION_STRING of the header it was built with. */
const char *pf_version(void);

#define PF_ERR_LEN 256

/* What a call reports, with a one-line message in its err buffer (docs/api.md#status-codes). A
 * failure keeps its kind from the layer where it happened: nothing is guessed on the way up. */
typedef enum {
    PF_OK = 0,
    PF_ERR_IO,       /* a file could not be opened, read or written (missing, unreadable, a folder) */
    PF_ERR_FORMAT,   /* a file is malformed, truncated, of an unsupported type or architecture */
    PF_ERR_ARG,      /* a bad parameter */
    PF_ERR_CONTEXT,  /* the prompt does not fit the context */
    PF_ERR_UTF8,     /* the prompt is not valid UTF-8 */
    PF_ERR_OOM,      /* an allocation failed (the call may succeed with more memory) */
    PF_ERR_INTERNAL, /* a broken invariant: a bug in the library */
    PF_ERR_CANCELLED /* a callback returned a negative value: the call stopped, nothing is wrong */
} pf_status;

/* The name of a status ("ok", "io", "format", "arg", "context", "utf8", "oom", "internal",
 * "cancelled"; "unknown" for any other value): a static string. */
const char *pf_status_name(pf_status st);

typedef struct pf_model pf_model;
typedef struct pf_session pf_session;
typedef struct pf_draft pf_draft;

/* Constructors put the object in *out (NULL on failure) and return its status: PF_ERR_IO (the path
 * cannot be opened: missing, unreadable, a folder), PF_ERR_FORMAT (truncated, malformed, an
 * unsupported type or architecture), PF_ERR_OOM, PF_ERR_ARG (a bad parameter). */
pf_status pf_load_model(const char *path, pf_model **out, char err[PF_ERR_LEN]);
void pf_free_model(pf_model *m);

/* How a model is loaded (pf_load_model_with); all zero: the defaults, which the environment
 * variables PF_KERNELS, PF_REPACK and PF_HUGEPAGES set (docs/api.md). Sessions
 * over the model and its drafts use what it was loaded with. */
typedef struct {
    const char *kernels; /* the most capable kernel level to use: "scalar", "avx2", "avxvnni",
                            "avx512" (x86-64), "neon", "dotprod", "i8mm" (ARM64), capped by what the
                            CPU supports; NULL: PF_KERNELS, else the best the CPU supports. A level
                            this build lacks is PF_ERR_ARG */
    int repack;          /* 1: packed copies of the quantized matrices for the kernels that read
                            them; -1: the file's layout only; 0: on unless PF_REPACK=0 */
    int hugepages;       /* 1: the packed copies in memory that asks for transparent huge pages;
                            -1: plain memory; 0: on unless PF_HUGEPAGES=0 */
} pf_load_params;

/* pf_load_model with p (NULL: the defaults); a bad field is PF_ERR_ARG naming it. */
pf_status pf_load_model_with(const char *path, const pf_load_params *p, pf_model **out, char err[PF_ERR_LEN]);

typedef struct {
    int n_threads;  /* default 1 */
    int64_t n_ctx;  /* default min(4096, the model's training context) */
    int kv_q8;      /* 1: 8-bit keys and values with per-row scales (half the cache's memory and
                       bytes read per step; attention slightly less exact; needs SIMD kernels, any
                       level but the scalar reference: AVX2, AVX-VNNI or AVX-512 on x86-64, NEON,
                       dotprod or i8mm on ARM64; else pf_session_new fails); 0: f16 (default) */
} pf_session_params;

pf_status pf_session_new(const pf_model *m, const pf_session_params *p, pf_session **out, char err[PF_ERR_LEN]);
/* Before the model and the drafts it used. */
void pf_session_free(pf_session *s);
/* Forget what the cache holds: the next call prefills its whole prompt. */
void pf_session_reset(pf_session *s);

/* A DFlash / DFlash2 draft for model m: path is a draft GGUF or a .pfb bundle that holds a draft
 * (told by its magic), or NULL for the draft inside the .pfb bundle m was loaded from. A Dec head in
 * the file (dec.* tensors) enables PF_SPEC_DEC. m must outlive the draft. NULL with err (wrong
 * target, malformed file or Dec head: PF_ERR_FORMAT; no bundled draft: PF_ERR_ARG). */
pf_status pf_load_draft(const pf_model *m, const char *path, pf_draft **out, char err[PF_ERR_LEN]);
void pf_free_draft(pf_draft *d);
int pf_draft_block_size(const pf_draft *d); /* the block size it was trained for */
bool pf_draft_has_dec(const pf_draft *d);

/* Decoding strategy (pf_gen_params.spec). Every one gives the output of plain decoding. */
typedef enum {
    PF_SPEC_DEFAULT = 0, /* with a draft the project's default speculative strategy (what
                            `pocketflash run -d` uses: PF_SPEC_DFLASH when a block is given,
                            else PF_SPEC_DEC when the draft has a Dec head, else
                            PF_SPEC_ADAPTIVE), with a profile its choice, else plain */
    PF_SPEC_PLAIN,       /* plain autoregressive decoding */
    PF_SPEC_DFLASH,      /* the draft proposes block-1 tokens, one target forward verifies them */
    PF_SPEC_NGRAM,       /* prompt lookup: proposes what followed the last n tokens earlier (no draft) */
    PF_SPEC_DEC,         /* DFlash with Dec gating: each round the draft's decision head and a running
                            cost model of the machine choose a plain step or how many drafts to
                            verify, for the most tokens per second (needs pf_draft_has_dec) */
    PF_SPEC_ADAPTIVE,    /* the same planner without a head: the block from the running acceptance
                            at each position (block = the most rows a round verifies) */
    PF_SPEC_HYBRID       /* prompt lookup where the text repeats a pattern of 3+ tokens, the draft
                            otherwise (fixed block; needs a draft) */
} pf_spec_kind;

/* Whether a chat reply may call the tools of pf_gen_params.tools. */
typedef enum {
    PF_TOOL_AUTO = 0, /* the model chooses */
    PF_TOOL_NONE,     /* the tools are not offered */
    PF_TOOL_REQUIRED, /* the reply is one call of a listed tool */
    PF_TOOL_NAMED     /* the reply is one call of tool_name */
} pf_tool_choice;

typedef enum { PF_STOP_EOT = 0, PF_STOP_LENGTH, PF_STOP_CONTEXT, PF_STOP_CALLBACK } pf_stop_reason;

typedef struct {
    int max_tokens;   /* default 128 */
    float temp;       /* <= 0 greedy (default 0) */
    int top_k;        /* <= 0 off */
    float top_p;      /* >= 1 off (default 1) */
    uint64_t seed;    /* RNG seed (default 0) */
    bool chat;        /* wrap the prompt in the model's chat template (as pf_generate_chat does) */
    const char *system; /* optional system message with chat */
    bool stop_at_eot; /* stop at the end-of-turn / end-of-text token (default true) */
    /* Speculation: a draft (NULL = none) and the strategy. */
    const pf_draft *draft;
    pf_spec_kind spec;
    int block;          /* rows verified per round, 2..64; 0 = the strategy's default (dflash
                           min(4, the draft's trained block), dec the trained block, ngram 8);
                           with PF_SPEC_DEFAULT, a draft and no profile it means PF_SPEC_DFLASH */
    int ngram_n;        /* longest pattern the ngram strategy matches (0 = 3) */
    int draft_head;     /* the draft's head scores its N most frequent tokens; 0 = the draft's
                           default, -1 = the whole vocabulary */
    const char *profile; /* tuned profile (pocketflash tune): with spec and block open, its draft
                            choice is the prior of PF_SPEC_DEC ("dec") or PF_SPEC_ADAPTIVE, which
                            then adapt as `run --profile` does; ngram is used as chosen; an
                            explicit spec takes the profile's block, an explicit block wins */
    const char *task;    /* task type to look up in the profile (NULL: its default entry). A profile
                            that cannot be read fails the call with PF_ERR_IO, one that is not a
                            tuned profile (malformed, truncated) with PF_ERR_FORMAT */
    /* Prompt cache file (NULL = none): when it holds the K/V rows of a prefix of this prompt for
     * this model, that prefix is restored instead of prefilled (output unchanged); when it is
     * absent or unusable (warning on stderr) it is written after generation with the prefix:
     * the ChatML system block with chat + system, else the prompt minus its last token. Used only
     * when the session's own cache holds none of the prompt (a cold session). */
    const char *prompt_cache;
    /* Special-token texts in the prompt (e.g. "<|im_start|>") are special tokens by default, as in
     * llama.cpp; no_special makes them plain text (with chat the template's own markers stay special). */
    bool no_special;
    /* Structured output (docs/structured-output.md): the reply is a JSON document valid
     * against json_schema (JSON Schema text of the supported subset, NUL-terminated), or with
     * json_object any JSON object; generation ends when the document is complete. Every strategy
     * gives plain decoding's output under the same constraint. A schema outside the subset fails the
     * call with PF_ERR_ARG and a message naming the keyword, before anything is generated. */
    const char *json_schema;
    bool json_object;
    /* Optional: called with each generated token (before its text reaches on_text) and where it
     * came from: drafted true when the strategy proposed it (draft or prompt lookup) and the target
     * kept it, false when it is the target's own (each round's last token, a plain step, every
     * token of plain decoding). */
    void (*on_token_source)(void *user, int32_t token, bool drafted);
    void *token_source_user;
    /* Tool calling (docs/api.md#tool-calls; pf_generate_chat): tools is an OpenAI tools array
     * (JSON text: [{"type": "function", "function": {"name", "description", "parameters"}}]) that
     * the chat template lists in the system turn, as Qwen3's template does (not with
     * PF_TOOL_NONE); the reply writes its calls as <tool_call> blocks, which pf_parse_tool_calls
     * reads. With PF_TOOL_REQUIRED (or PF_TOOL_NAMED and tool_name) the reply is held to one call
     * of a listed tool (of tool_name) whose arguments are valid against its parameters (the
     * constraint of json_schema, not beside it); a bad tools array, an unknown tool_name or
     * parameters outside the schema subset fail the call with PF_ERR_ARG naming the tool. */
    const char *tools;
    pf_tool_choice tool_choice;
    const char *tool_name;
} pf_gen_params;

void pf_gen_params_default(pf_gen_params *p);

typedef struct {
    int n_prompt, n_gen;
    int n_reused;     /* prompt tokens whose cache rows the session kept from its previous calls */
    int n_cached;     /* prompt tokens restored from the prompt cache file (used only when the
                         session reuses nothing); n_prompt - n_reused - n_cached were prefilled */
    double prefill_s; /* prompt forward */
    double ttft_s;    /* prompt forward + first token */
    double decode_s;  /* first generated token to last (speculation work included) */
    pf_stop_reason stop;
    /* Speculation rounds (all zero for plain decoding). */
    const char *drafter;  /* the drafter: "plain", "dflash", "dflash2", "ngram" (static string) */
    const char *spec;     /* the strategy that ran, pf_gen_params.spec resolved: "plain", "dflash" (a
                             fixed block), "ngram", "dec", "adaptive" or "hybrid" (static string) */
    int block;            /* rows verified per round */
    int64_t rounds, round_tokens; /* rounds, and tokens they committed (bonus included) */
    int64_t drafted, accepted;    /* draft tokens proposed / kept by the target */
    double tau;           /* round_tokens / rounds: tokens per target forward */
    double acceptance;    /* accepted / drafted */
    /* seconds inside rounds: drafting, draft context injection, verify forward, acceptance and
     * sampling, the rest; and building the draft's context from the prompt before round 1 */
    double draft_s, context_s, verify_s, accept_s, other_s, prompt_context_s;
} pf_gen_stats;

/* What p's strategy fields resolve to, without generating: one line into out (at most out_len
 * bytes with the NUL), "KIND block=B" and, where they apply, " draft_head=H", " ngram=N",
 * " prior=profile(block B)" -- the line `pocketflash run --print-plan` prints for the same
 * request. PF_OK, or the status and message generation would fail with (a bad value, a strategy
 * that needs a draft or a Dec head, a profile that cannot be read). */
pf_status pf_gen_plan(const pf_gen_params *p, char *out, size_t out_len, char err[PF_ERR_LEN]);

/* Structured output's budget, checked without generating: PF_OK when p asks for neither a schema
 * nor JSON mode, or when p->max_tokens can hold a whole document of it (generation makes the same
 * check first: a constrained answer always closes within max_tokens, docs/structured-output.md);
 * otherwise PF_ERR_ARG and a one-line error naming max_tokens (or the schema's own error). The
 * session's token masks are built on first use, as generation builds them. */
pf_status pf_gen_check_max_tokens(pf_session *s, const pf_gen_params *p, char err[PF_ERR_LEN]);

/* The callbacks' return value: 0 goes on; a positive value stops generation as a normal end (PF_OK,
 * pf_gen_stats.stop PF_STOP_CALLBACK: a stop string was seen); a negative value cancels it (the call
 * returns PF_ERR_CANCELLED, stats still written, stop PF_STOP_CALLBACK: nobody wants the rest). */
/* Called with each complete UTF-8 piece of generated text. */
typedef int (*pf_text_cb)(void *user, const char *text, size_t len);
/* Called with each generated token id. */
typedef int (*pf_token_cb)(void *user, int32_t token);

/* Text in, text out (streamed). The prompt must be valid UTF-8. */
pf_status pf_generate(pf_session *s, const char *prompt, size_t len, const pf_gen_params *p, pf_text_cb on_text,
                      void *user, pf_gen_stats *stats, char err[PF_ERR_LEN]);
/* Token ids in, token ids out. */
pf_status pf_generate_tokens(pf_session *s, const int32_t *prompt, int n_prompt, const pf_gen_params *p,
                             pf_token_cb on_token, void *user, pf_gen_stats *stats, char err[PF_ERR_LEN]);

/* One chat message; role is "system", "user", "assistant" or "tool" (a tool's result, as content;
 * consecutive ones form one turn). An assistant message that called tools holds its reply as the
 * model wrote it, <tool_call> blocks included. */
typedef struct {
    const char *role;
    const char *content; /* UTF-8 */
} pf_message;

/* One tool call read from a reply: the function's name and its arguments, a JSON object's text. */
typedef struct {
    char *name;
    char *arguments;
} pf_tool_call;

/* The tool calls of a reply text[0..len): its <tool_call> blocks, each a JSON object with a string
 * "name" and an object "arguments", only white space between and after them. *calls (malloc'd,
 * pf_free_tool_calls) and *n_calls; *content_len: the length of the text before the first call
 * (trailing white space dropped), the whole text when there is none. A reply whose blocks do not
 * all parse has no calls. PF_OK, or PF_ERR_OOM. */
pf_status pf_parse_tool_calls(const char *text, size_t len, pf_tool_call **calls, int *n_calls, size_t *content_len,
                              char err[PF_ERR_LEN]);
void pf_free_tool_calls(pf_tool_call *calls, int n);

/* The conversation messages[0..n) (the last one not the assistant's) rendered with the model's
 * chat template (ChatML; Qwen3's non-thinking form when the template is Qwen3's: an empty
 * <think></think> block opens the reply, earlier replies lose their reasoning), then the reply is
 * generated and streamed; it stops at <|im_end|> unless stop_at_eot is false (p->chat and
 * p->system are ignored). For the next turn append the reply as an "assistant" message and the
 * next "user" message: the rendered history is a prefix of the new prompt, so only the new turn is
 * prefilled. One user message (after an optional system one) renders as pf_generate with chat. */
pf_status pf_generate_chat(pf_session *s, const pf_message *messages, int n, const pf_gen_params *p,
                           pf_text_cb on_text, void *user, pf_gen_stats *stats, char err[PF_ERR_LEN]);

/* Batched generation (continuous batching): several requests decoded together in one session,
 * each step ONE forward over a token of every running request (and a chunk of the prompts of
 * those that joined), so the weights are read once for all of them. A request that ends leaves
 * and the feed's next one takes its place between steps. Every request gets exactly the text,
 * stop reason and token count it gets alone from pf_generate / pf_generate_chat on a fresh
 * session (greedy, and sampled with the same seed).
 *
 * A request is a text prompt (params.chat and params.system wrap it as pf_generate does) or,
 * with messages set, a conversation (pf_generate_chat's rules). Its strategy fields (draft, spec,
 * block, draft_head, ngram_n, profile, task) resolve as pf_generate resolves them, and requests of
 * different strategies (plain decoding among them) and drafts share each forward: a speculating
 * request's draft rows are verified together with the other requests' rows (with several
 * decoding, the adaptive strategies' drafts are budgeted for the whole step), the drafts of one
 * pf_draft propose in one draft forward, and its statistics are its own rounds'. A request whose
 * strategy fields pf_generate would refuse (a strategy that needs a draft, or a draft with a Dec
 * head, without one; a draft loaded for another model) ends with that status and message.
 * Structured output (json_schema, json_object, a required or named tool call) holds each request
 * to its own document, plain or speculating, with pf_generate's messages for a schema outside the
 * subset or a max_tokens too small for it. A prompt cache ends the request with PF_ERR_ARG (use
 * pf_generate for it); the others go on. */
typedef struct {
    const char *prompt; /* UTF-8, len bytes; ignored when messages is set */
    size_t len;
    const pf_message *messages; /* NULL, or the conversation messages[0..n_messages) */
    int n_messages;
    pf_gen_params params;
    pf_text_cb on_text; /* its text as pf_generate streams it (may be NULL); a positive return ends
                           the request (PF_STOP_CALLBACK), a negative one cancels it (PF_ERR_CANCELLED) */
    void *user;         /* on_text's argument; also tells done() which request */
} pf_batch_request;

typedef struct {
    /* The next request into *r (zeroed before the call): 1; 0 when none will come (the batch
     * ends once the running ones do); 2 when none is waiting now (asked again before the next
     * step). idle is true when no request is running: then next() may block until it has one,
     * and should rather than return 2. The request's strings stay the caller's and must stay
     * valid until done() is called for it. */
    int (*next)(void *feed, pf_batch_request *r, bool idle);
    /* The request ended: PF_OK with its statistics, or its status and message (a prompt that is
     * empty, not UTF-8 or longer than the context, an unbatchable parameter, cancelled). */
    void (*done)(void *feed, const pf_batch_request *r, pf_status st, const pf_gen_stats *stats, const char *err);
    void *feed;
} pf_batch_feed;

/* Runs the feed's requests, at most n_slots (1..256) at a time, on session s: its threads and
 * kernels; each slot has a KV cache of the session's type and length, and a slot that
 * speculates a drafter of its own (the draft's context over the same length) and its strategy's
 * state (running acceptance, cost model), kept while its requests' strategies stay the same, from
 * call to call until pf_session_free, as pf_generate keeps a session's (only a session's first
 * batch calibrates, and the adaptive strategies go on learning over later calls). The
 * session's own cache, multi-turn history and speculation stay as they were. Threading: s is busy
 * for the whole call, which runs every callback (next, done, on_text, on_token_source) on the
 * calling thread; other threads hand requests over through the feed's own synchronisation (next()
 * may block while idle); the requests' drafts are only read, so other sessions may use them
 * meanwhile. PF_OK once
 * next() returned 0 and every request ended; PF_ERR_ARG (a bad n_slots) or PF_ERR_OOM end the
 * call early, without done() for requests still running. */
pf_status pf_generate_batch(pf_session *s, int n_slots, const pf_batch_feed *feed, char err[PF_ERR_LEN]);

#ifdef __cplusplus
}
#endif
#endif
