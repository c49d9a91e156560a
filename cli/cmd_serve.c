/* pocketflash serve: an OpenAI-compatible HTTP server (docs/server.md) over one loaded model and
 * draft: the flags, loading, the session pool (serve_engine.c), the HTTP side (serve_http.c), and
 * a clean stop on SIGINT / SIGTERM. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/serve_engine.h"
#include "cli/serve_http.h"
#include "cli/serve_page.h"
#include "engine/model.h"
#include "include/pocketflash.h"
#include "kernels/topology.h"

static const char k_usage[] =
    "usage: pocketflash serve -m MODEL.gguf|APP.pfb [-d DRAFT.gguf] [options]\n"
    "  an OpenAI-compatible HTTP server: POST /v1/chat/completions, POST /v1/completions,\n"
    "  GET /v1/models, GET /health, and a chat page at GET / (docs/server.md)\n"
    "  -m FILE          target model (qwen3 GGUF), or a .pfb bundle (its draft is used unless -d)\n"
    "  -d FILE          DFlash / DFlash2 draft GGUF, or a .pfb bundle holding one: requests speculate\n"
    "                   with the strategy `run -d` uses (dec when the draft has a Dec head, else\n"
    "                   adaptive); output unchanged\n"
    "  --host ADDR      address to bind (default 127.0.0.1, loopback only; 0.0.0.0 for every\n"
    "                   interface)\n"
    "  --port N         port (default 8080; 0 = any free port, named on stderr)\n"
    "  --parallel N     requests generating at the same time (default 1); more wait in a queue.\n"
    "                   N > 1: they run as the N rows of one batch on every thread (plain,\n"
    "                   speculating and structured rows share each forward), joining and leaving\n"
    "                   between steps (each answer unchanged)\n"
    "  --no-batch       N sessions with their own threads for every request (no batch)\n"
    "  --queue N        requests that may wait for a session (default 64); beyond: 503\n"
    "  --api-key KEY    every route but /health needs 'Authorization: Bearer KEY' (401 otherwise)\n"
    "  -t N             threads per session and of the batch (default: the physical cores /\n"
    "                   --parallel per session, here %d; the batch every physical core)\n"
    CLI_LOAD_USAGE
    "  -c N             context size per session in tokens (default min(4096, model's))\n"
    "  --kv f16|q8      KV cache type (as run)\n"
    "  -n N             max_tokens of a request that gives none (default: until the context is\n"
    "                   full or the end of turn)\n"
    "  --timeout S      request time limit in seconds: reading the body, waiting for a session and\n"
    "                   generating (default 600); generation that reaches it stops (finish_reason\n"
    "                   \"length\", pocketflash.timed_out true)\n"
    "  --max-body N     largest request body in bytes (default 1048576); beyond: 413\n"
    "  --max-connections N  open connections at most (default 256)\n"
    "  --alias NAME     the model id /v1/models lists (default: the model file's name)\n"
    "  --seed S         a request without a \"seed\" samples with seed S, so the same request gives\n"
    "                   the same answer (as `run --seed S`); default: each draws its own\n"
    "  -v               one line per request on stderr\n"
    "llama-server spellings accepted: --model, -md/--model-draft, --ctx-size, --threads, -np,\n"
    "  --n-predict, -s\n";

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

int cmd_serve(int argc, char **argv) {
    const char *model_path = NULL, *draft_path = NULL, *alias = NULL;
    sv_http_config hc = {.host = "127.0.0.1", .port = 8080, .max_body = 1 << 20, .timeout_s = 600,
                         .max_connections = 256, .page = pf_serve_page, .page_len = pf_serve_page_len};
    sv_engine_config ec = {.n_sessions = 1, .queue_max = 64};
    int threads = 0;
    bool no_batch = false;
    long long seed = -1; /* not given */
    pf_load_params lp = {0};
    const cli_arg args[] = {
        CLI_LOAD(&lp),
        CLI_ON("-v", &hc.verbose), CLI_ON("--no-batch", &no_batch), CLI_STR("-m", &model_path), CLI_STR("-d", &draft_path), CLI_STR("--host", &hc.host),
        CLI_STR("--alias", &alias), CLI_STR("--api-key", &hc.api_key), CLI_INT("--port", &hc.port, 0, 65535),
        CLI_INT("--parallel", &ec.n_sessions, 1, 64), CLI_INT("--queue", &ec.queue_max, 0, 1 << 20),
        CLI_INT("-t", &threads, 1, 256), CLI_I64("-c", &ec.session.n_ctx, 1, 1 << 24), CLI_KV("--kv", &ec.session.kv_q8),
        CLI_INT("-n", &ec.default_max_tokens, 1, 1 << 30), CLI_DOUBLE("--timeout", &hc.timeout_s, 0.001, 1e7),
        CLI_SIZE("--max-body", &hc.max_body, 1, 1ll << 32), CLI_INT("--max-connections", &hc.max_connections, 1, 65536),
        CLI_LL("--seed", &seed, 0, INT64_MAX), CLI_END};
    int parsed = cli_parse("serve", argc, argv, args, CLI_PARSE_ALIASES);
    if (parsed) return parsed < 0 ? (printf(k_usage, pf_physical_cores()), 0) : 1;
    if (hc.api_key && !*hc.api_key) return cli_fail("serve: --api-key must not be empty");
    if (!model_path) return cli_fail("serve: missing -m MODEL.gguf");
    ec.timeout_s = hc.timeout_s;
    ec.session.n_threads = threads ? threads : pf_physical_cores() / ec.n_sessions;
    if (ec.session.n_threads < 1) ec.session.n_threads = 1;
    ec.batch = ec.n_sessions > 1 && !no_batch;
    ec.batch_threads = threads ? threads : pf_physical_cores();
    if (ec.batch_threads < 1) ec.batch_threads = 1;
    hc.model_id = alias ? alias : base_name(model_path);
    hc.fixed_seed = seed >= 0;
    hc.seed = hc.fixed_seed ? (uint64_t)seed : 0;

    char err[PF_ERR_LEN];
    int rc = 1;
    pf_draft *d = NULL;
    sv_engine *e = NULL;
    sv_http *h = NULL;
    pf_model *m = NULL;
    pf_status st = pf_load_model_with(model_path, &lp, &m, err);
    if (st != PF_OK) return cli_fail_status(st, err);
    /* a bundle that carries a draft speculates with it, as run does */
    bool bundled = !draft_path && pf_model_bundles_draft(m);
    if ((draft_path || bundled) && (st = pf_load_draft(m, draft_path, &d, err)) != PF_OK) {
        rc = cli_fail_status(st, err);
        goto done;
    }

    /* SIGINT / SIGTERM go to sigwait below: every thread started from here on blocks them */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    int port = 0;
    if ((st = sv_engine_new(m, d, &ec, &e, err)) != PF_OK || (st = sv_http_start(e, &hc, &h, &port, err)) != PF_OK) {
        rc = cli_fail_status(st, err);
        goto done;
    }
    char batch[64] = "";
    if (ec.batch) snprintf(batch, sizeof batch, ", a batch of %d x %d thread%s", ec.n_sessions, ec.batch_threads,
                           ec.batch_threads > 1 ? "s" : "");
    fprintf(stderr, "pocketflash serve: listening on http://%s%s%s:%d (model %s%s%s, %d session%s x %d thread%s%s%s)\n",
            strchr(hc.host, ':') ? "[" : "", hc.host, strchr(hc.host, ':') ? "]" : "", port, hc.model_id,
            d ? ", draft " : "", d ? (draft_path ? base_name(draft_path) : "from the bundle") : "", ec.n_sessions,
            ec.n_sessions > 1 ? "s" : "", ec.session.n_threads, ec.session.n_threads > 1 ? "s" : "", batch,
            hc.api_key ? ", API key required" : "");
    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "pocketflash serve: stopping (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    rc = 0;
done:
    sv_http_quiesce(h);
    if (e) sv_engine_stop(e);
    sv_http_drain(h, 2.0); /* the cancelled requests' 503s go out; an idle keep-alive client is not waited for longer */
    sv_http_stop(h);
    sv_engine_free(e);
    pf_free_draft(d);
    pf_free_model(m);
    return rc;
}
