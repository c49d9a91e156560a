/* Helpers several test files share: kernel levels reported as skips when they cannot run, the
 * environment saved and restored, the CLI and shell commands with their output, scratch files,
 * token sequences collected from a generation callback, and the float64 reference's pieces
 * (RMSNorm, RoPE, f16 rounding, matrix-vector product) that the target and draft references share. */
#ifndef PF_TEST_UTIL_H
#define PF_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convert/synth.h"
#include "draft/dflash.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "include/pocketflash.h"
#include "kernels/kernels.h"
#include "verify/kind.h"

/* ---- kernel levels ---- */

/* The kernels of `level` for a test that loops over the levels: NULL for a level this build does
 * not hold (another architecture's); NULL too, reported as the skipped part "LEVEL" of the current
 * test, for a level the CPU lacks or PF_KERNELS caps. */
const pf_kernels *test_kernels(int level);
/* Why `level` does not run here ("" when it does; "not in this build" for another architecture's). */
const char *test_level_missing(int level);

/* ---- environment ---- */

typedef struct {
    const char *name;
    char value[256];
    int was_set;
} test_env;
/* Remember variable `name` (set or not) so a test can change it and put it back. */
void test_env_save(test_env *e, const char *name);
void test_env_restore(const test_env *e);

/* ---- commands ---- */

/* The CLI under test: $PF_CLI or ./pocketflash. */
const char *test_cli(void);
/* Runs `cmd` with /bin/sh and returns its exit status (128 when it did not exit). */
int test_sh(const char *cmd);
/* Runs `cmd` with stdin from /dev/null; its stdout goes to out (n_out bytes with the NUL), its
 * stderr to err, or to out as well when err is NULL. Returns the exit status. */
int test_run(const char *cmd, char *out, size_t n_out, char *err, size_t n_err);
/* test_run of `$PF_CLI ARGS`. */
int test_run_cli(const char *args, char *out, size_t n_out, char *err, size_t n_err);
/* test_run_cli into two char arrays. */
#define RUN_CLI(args, out, err) test_run_cli((args), (out), sizeof(out), (err), sizeof(err))

/* What the process writes to fd (1 or 2) between the two calls, kept in a scratch file and read
 * into buf (n bytes with the NUL). */
typedef struct { int fd, saved; char path[300]; } test_capture;
void test_capture_begin(test_capture *c, int fd);
void test_capture_end(test_capture *c, char *buf, size_t n);

/* ---- files ---- */

/* pf_test_tmpdir()/name into out. */
void test_tmp_path(char *out, size_t n, const char *name);
/* The whole file, malloc'd with a NUL after it (*n, when n is not NULL, gets its size); NULL when
 * it cannot be read. */
char *test_slurp(const char *path, size_t *n);
/* Writes n bytes (a string's without its NUL when n is (size_t)-1); 0 or -1. */
int test_write_file(const char *path, const void *data, size_t n);
int test_exists(const char *path);
int test_count_lines(const char *s);

/* ---- token sequences ---- */

typedef struct {
    int32_t toks[1024];
    int n;
} test_seq;
/* A generation callback (pf_token_cb shape) appending to the test_seq at u; never stops it. */
int test_seq_push(void *u, int32_t tok);
int test_seq_same(const test_seq *a, const test_seq *b);
/* The default generation parameters for a run of exactly max_tokens tokens (it does not stop at
 * the end of turn). */
pf_gen_params test_gen_fixed(int max_tokens);

/* ---- models ---- */

/* `pocketflash synth --shape tiny --type TYPE` into pf_test_tmpdir()/name, path[n] its path (the
 * failure printed); 0 or -1. */
int test_cli_synth_tiny(const char *type, const char *name, char *path, size_t n);
/* A synthetic target of `shape` (seed 7) written to path and loaded; NULL, with the error printed,
 * when either step fails. */
pf_model *test_synth_model(const pf_synth_shape *shape, uint32_t type, bool untied, const char *path);

/* A tiny synthetic target (shape "tiny", its type and seed; written to pf_test_tmpdir()) and a
 * session over it with `threads` threads and n_ctx positions (threads 0: the default parameters).
 * 0, or -1 with the failing step printed; test_tiny_close it either way. */
typedef struct {
    pf_model *m;
    pf_session *s;
} test_tiny;
int test_tiny_open(test_tiny *t, uint32_t type, uint64_t seed, int threads, int n_ctx);
void test_tiny_close(test_tiny *t);

/* The target's forward over n tokens (one thread), returning the rows the draft taps (n * n_taps *
 * n_embd floats, malloc'd); NULL, with the error printed, when it fails. */
float *test_target_taps(const pf_model *m, const pf_dflash *d, const int32_t *toks, int n);

/* The committed target (models/pf-target-f16.gguf), a session over it (2 threads, 1024 positions)
 * and its DFlash2 draft loaded by the library. 0, or -1 (why on stderr; test_pair_close it either
 * way). */
typedef struct {
    pf_model *m;
    pf_session *s;
    pf_draft *draft;
} test_pair;
int test_pair_open(test_pair *p);
void test_pair_close(test_pair *p);
/* Generates from `prompt` (tokenized with its special tokens) on p's session, reset first, under gp
 * with strategy strat (NULL: plain decoding); the tokens to seq. PF_ERR_ARG when the prompt does
 * not tokenize, else pf_generate_tokens's status. */
pf_status test_pair_generate(test_pair *p, pf_strategy *strat, const char *prompt, const pf_gen_params *gp,
                             test_seq *seq, pf_gen_stats *st, char err[PF_ERR_LEN]);
/* seq's text (the tokens' bytes, no NUL added) into text[cap]: its length, or (size_t)-1 when a
 * token has no bytes or the text does not fit. */
size_t test_seq_text(const pf_model *m, const test_seq *seq, char *text, size_t cap);
/* The speculative kinds the library builds over the pair's DFlash2 draft. */
enum { TEST_N_SPEC_KINDS = 5 };
extern const pf_kind test_spec_kinds[TEST_N_SPEC_KINDS];

/* A tiny q8_0 target (seed target_seed) and a version-1 DFlash draft of it with draft_layers layers (block 8,
 * default taps, seed 3), written to <tmp>/<prefix>-target.gguf and <prefix>-draft.gguf, whose paths go to
 * target and draft (n bytes each); 0, or -1 with err. */
int test_synth_target_draft(const char *prefix, uint64_t target_seed, int draft_layers, char *target, char *draft,
                            size_t n, char *err);
/* The ids of `user`'s message in the chat template (pf_chat_format, special tokens parsed); pf_tokenize's result. */
int test_chat_tokens(const pf_model *m, const char *user, int32_t **ids, size_t *n, char *err);

/* ---- sampled distributions ---- */

/* The counts pf_chi2_positions_differ compares: `runs` pairs of generations of n_pos + 1 tokens from
 * prompt (temperature 1, top-k 4, seed (2 * run + w) * seed_mul + seed_add), plain (w = 0), then
 * with `strategy` (w = 1), after which after(u) runs; the tokens at positions 1..n_pos (position 0
 * is the prefill's sample) counted into a calloc'd [2][n_pos][n_vocab]. NULL, with err, when a
 * generation fails. */
typedef struct {
    pf_session *s;
    const int32_t *prompt;
    int n_prompt, runs, n_pos, n_vocab;
    uint64_t seed_mul, seed_add;
    pf_strategy *strategy;
    void (*after)(void *u);
    void *u;
    const char *json_schema; /* both decode under it when set (structured output) */
    int strategy_only;       /* only the runs with `strategy` (w = 1); the plain half stays 0 */
} test_sampling;
int *test_sample_counts(const test_sampling *t, char *err);

/* ---- strategies through the library ---- */

/* The round loop the library builds for spec/block over draft d (NULL: none) on session s -- the
 * one resolver's plan, owned by the session until another plan is asked for -- or NULL with err.
 * A test runs it with pf_api_use_strategy(s, pf_spec_strategy(...)) and reads its statistics. */
typedef struct pf_spec pf_spec;
pf_spec *test_library_spec(pf_session *s, const pf_draft *d, pf_spec_kind spec, int block, char *err);

/* ---- float64 reference pieces ---- */

/* y[rows] = W[rows x cols] x (row-major doubles). */
void ref_matvec_d(const double *W, int rows, int cols, const double *x, double *y);
/* out = x / sqrt(mean(x^2) + eps) * w. */
void ref_rmsnorm(const double *x, const double *w, int n, double eps, double *out);
/* RoPE (NEOX halves: dimension i pairs with i + hd/2) of nh heads of hd at position pos. */
void ref_rope(double *x, int nh, int hd, int64_t pos, double theta);
/* x rounded through f16, as the engine's KV cache stores it. */
double ref_f16(double x);

#endif
