/* pocketflash serve end to end, on loopback, with a real client: the official OpenAI Node SDK
 * (tests/serve/client.mjs; mk/serve.mk installs it into .cache/openai-node). Greedy answers equal
 * `run` (with and without the draft), streamed deltas concatenate to the same text, concurrent
 * requests get their own answers, a dropped stream frees its session, the error cases get
 * OpenAI-style 4xx bodies while the server keeps serving, --api-key refuses, and a bounded load run
 * keeps every answer right and the resident memory flat; raw sockets (truncated, byte-at-a-time,
 * oversized, dropped, many at once) leave every session free and descriptors and memory where they
 * were. Tests needing node or the SDK skip by name
 * where they are missing. Runs ./pocketflash (or $PF_CLI) on the committed stand-in models. */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "eval/schema_valid.h"
#include "formats/json.h"
#include "formats/json_write.h"
#include "test.h"
#include "util.h"

#define TARGET "models/pf-target-f16.gguf"
#define DRAFT "models/pf-draft-dflash2.gguf"

static const char *cli(void) { return getenv("PF_CLI") ? getenv("PF_CLI") : "./pocketflash"; }

/* The folder $ENV names (else def), absolute: the clients resolve their npm packages with node's
 * createRequire, which refuses a relative path (make asan and make tsan do not export make test's
 * absolute PF_OPENAI_DIR). Resolved once into *cached, kept for the process. */
static const char *npm_dir(const char *env, const char *def, char **cached) {
    const char *d = getenv(env) ? getenv(env) : def;
    if (!*cached) *cached = realpath(d, NULL);
    return *cached ? *cached : d;
}

static const char *openai_dir(void) {
    static char *abs_dir;
    return npm_dir("PF_OPENAI_DIR", ".cache/openai-node", &abs_dir);
}

static const char *playwright_dir(void) {
    static char *abs_dir;
    return npm_dir("PF_PLAYWRIGHT_DIR", ".cache/playwright-node", &abs_dir);
}

static const char *chromium(void) { return getenv("PF_CHROMIUM") ? getenv("PF_CHROMIUM") : "/usr/bin/chromium"; }

static bool have_node(void) { return system("command -v node >/dev/null 2>&1") == 0; }

static bool have_sdk(void) {
    char p[600];
    snprintf(p, sizeof p, "%s/node_modules/openai/package.json", openai_dir());
    return have_node() && access(p, R_OK) == 0;
}

static bool have_browser(void) {
    char p[600];
    snprintf(p, sizeof p, "%s/node_modules/playwright-core/package.json", playwright_dir());
    return have_node() && access(p, R_OK) == 0 && access(chromium(), X_OK) == 0;
}

#define NEED_BROWSER()                                                                                \
    do {                                                                                              \
        if (!have_browser()) {                                                                        \
            pf_test_skip("needs chromium (apt-get install chromium), node and playwright-core (npm, " \
                         "installed by make test)");                                                  \
            return;                                                                                   \
        }                                                                                             \
    } while (0)
#define NEED_NODE()                                                                                   \
    do {                                                                                              \
        if (!have_node()) {                                                                           \
            pf_test_skip("needs node (Debian: apt-get install nodejs)");                              \
            return;                                                                                   \
        }                                                                                             \
    } while (0)
#define NEED_SDK()                                                                                    \
    do {                                                                                              \
        if (!have_sdk()) {                                                                            \
            pf_test_skip("needs node and the OpenAI Node SDK (npm openai, installed by make test)");  \
            return;                                                                                   \
        }                                                                                             \
    } while (0)

/* `pocketflash ARGS`: its stdout (without run's final newline) into out; exit status. */
static int run_cli(const char *args, char *out, size_t n_out) {
    char cmd[4096], po[300];
    snprintf(po, sizeof po, "%s/serve-run.out", pf_test_tmpdir());
    snprintf(cmd, sizeof cmd, "%s %s >%s 2>/dev/null </dev/null", cli(), args, po);
    int st = system(cmd);
    char *s = test_slurp(po, NULL);
    snprintf(out, n_out, "%s", s ? s : "");
    free(s);
    size_t n = strlen(out);
    if (n && out[n - 1] == '\n') out[n - 1] = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* ---- the server process ---- */
typedef struct {
    pid_t pid;
    int port;
    char base[64], log[300];
} server;

static int g_servers;

/* Starts `pocketflash serve --port 0 ARGS`; waits for its "listening on" line. */
static bool server_start(server *s, const char *args) {
    memset(s, 0, sizeof *s);
    /* the runner's process id in the name and the file removed first: each test runs in its own
     * process (g_servers starts at 0 in every one), and a log left by an earlier test's server would
     * give its stale port before this server writes its own */
    snprintf(s->log, sizeof s->log, "%s/serve-%d-%d.log", pf_test_tmpdir(), (int)getpid(), g_servers++);
    unlink(s->log);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "exec %s serve --port 0 %s 2>%s >/dev/null </dev/null", cli(), args, s->log);
#ifdef __linux__
    pid_t parent = getpid();
#endif
    s->pid = fork();
    if (s->pid < 0) return false;
    if (s->pid == 0) {
#ifdef __linux__
        /* a test process killed mid-run (a timeout, ^C) takes its server with it: a server left
         * behind would keep the port, the runner's descriptors and any lock they hold */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);
#endif
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    /* polled; the bound (300 s) is for a server that hangs, generous for a sanitizer build on a
     * loaded machine: one that fails exits, and that is seen at once */
    for (int i = 0; i < 6000; i++) {
        char *log = test_slurp(s->log, NULL);
        const char *p = log ? strstr(log, "listening on http://127.0.0.1:") : NULL;
        if (p) s->port = atoi(p + strlen("listening on http://127.0.0.1:"));
        free(log);
        if (s->port > 0) {
            snprintf(s->base, sizeof s->base, "http://127.0.0.1:%d", s->port);
            return true;
        }
        int st;
        if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
            s->pid = 0;
            return false;
        }
        usleep(50000);
    }
    return false;
}

/* SIGTERM, then its exit status (-1: had to be killed, after 120 s: a bound for a server that never
 * ends, not a measurement). */
static int server_stop(server *s) {
    if (s->pid <= 0) return -1;
    kill(s->pid, SIGTERM);
    for (int i = 0; i < 2400; i++) {
        int st;
        if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
            s->pid = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }
        usleep(50000);
    }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
    return -1;
}

static void server_log(const server *s) {
    char *log = test_slurp(s->log, NULL);
    printf("    server log: %.2000s\n", log ? log : "(none)");
    free(log);
}

#define START(s, args)                                                                                \
    do {                                                                                              \
        if (!server_start(&(s), args)) {                                                              \
            server_log(&(s));                                                                         \
            CHECKF(0, "serve %s did not start", args);                                                \
        }                                                                                             \
    } while (0)

/* A failed CHECK returns from the test: the server goes first. */
#define SCHECK(s, cond, ...)                                                                          \
    do {                                                                                              \
        if (!(cond)) {                                                                                \
            server_stop(&(s));                                                                        \
            server_log(&(s));                                                                         \
            CHECKF(0, __VA_ARGS__);                                                                   \
        }                                                                                             \
    } while (0)

/* node tests/serve/client.mjs BASE MODE ARGS; its output and errors into the log on failure. */
static int client(const server *s, const char *mode_args) {
    char cmd[2048], log[300];
    snprintf(log, sizeof log, "%s/client.log", pf_test_tmpdir());
    snprintf(cmd, sizeof cmd, "PF_OPENAI_DIR='%s' node tests/serve/client.mjs %s %s >%s 2>&1", openai_dir(), s->base,
             mode_args, log);
    int st = system(cmd);
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    if (rc) {
        char *t = test_slurp(log, NULL);
        printf("    client.mjs %s: exit %d: %.2000s\n", mode_args, rc, t ? t : "");
        free(t);
    }
    return rc;
}

/* client(MODE_ARGS), then the JSON it wrote to out; NULL, with err, when the client fails or its
 * output does not parse. */
/* Runs the client with the mode and arguments fmt formats, then parses the JSON it wrote to out. */
__attribute__((format(printf, 4, 5)))
static pf_json_doc *client_json(const server *s, const char *out, char *err, const char *fmt, ...) {
    char mode_args[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(mode_args, sizeof mode_args, fmt, ap);
    va_end(ap);
    if (client(s, mode_args) != 0) {
        snprintf(err, PF_ERR_LEN, "client failed");
        return NULL;
    }
    return pf_json_parse_file(out, err);
}

static const char *tmp(const char *name) {
    static char paths[8][300];
    static int k;
    char *p = paths[k++ % 8];
    snprintf(p, 300, "%s/%s", pf_test_tmpdir(), name);
    return p;
}

static bool write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return false;
    fputs(text, f);
    return fclose(f) == 0;
}

/* The i-th element of the JSON array in path's document; member lookups by name. */
static const pf_json *item(const pf_json_doc *d, size_t i) {
    const pf_json *r = d ? pf_json_root(d) : NULL;
    return r && r->type == PF_JSON_ARRAY && i < r->u.arr.n ? &r->u.arr.items[i] : NULL;
}
static const char *str(const pf_json *v, const char *key) {
    const pf_json *m = v ? pf_json_get(v, key) : NULL;
    return m && m->type == PF_JSON_STRING ? m->u.str.s : NULL;
}
static double num(const pf_json *v, const char *key) {
    const pf_json *m = v ? pf_json_get(v, key) : NULL;
    return m && m->type == PF_JSON_NUMBER ? m->u.num.d : -1;
}
static bool is_true(const pf_json *v, const char *key) {
    const pf_json *m = v ? pf_json_get(v, key) : NULL;
    return m && m->type == PF_JSON_BOOL && m->u.b;
}

#define Q1 "A shop sells 12 apples for 3 dollars each. How much do the apples cost?"
#define Q2 "Write a short poem about the sea."
#define Q3 "What is the capital of France?"
#define Q4 "List three colors."
#define P2 "Once upon a time, there was"

/* The client's input for six chat requests at once, each Q2 for 1000 tokens without end of turn:
 * seconds each, so the requests sent together are all in before the first ends. */
static bool write_six_long_chats(const char *path) {
    static char req[8192];
    size_t n = (size_t)snprintf(req, sizeof req, "[");
    for (int i = 0; i < 6; i++)
        n += (size_t)snprintf(req + n, sizeof req - n,
                              "%s{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"user\","
                              "\"content\":\"" Q2 "\"}],\"max_tokens\":1000,\"temperature\":0,\"ignore_eos\":true}}",
                              i ? "," : "");
    snprintf(req + n, sizeof req - n, "]");
    return write_file(path, req);
}

/* An answer refused with 503 server_busy. */
static bool is_server_busy(const pf_json *r) {
    const char *code = str(pf_json_get(r, "error"), "code");
    return num(r, "status") == 503 && code && !strcmp(code, "server_busy");
}

/* The server's health once its clients have left: `dropped` generations stopped, no session busy,
 * nothing queued; else false and why. */
static bool idle_after_drops(const pf_json *health, double dropped, char *why, size_t n) {
    if (num(health, "dropped") != dropped)
        snprintf(why, n, "%g generations dropped, %g expected", num(health, "dropped"), dropped);
    else if (num(health, "sessions_busy") != 0 || num(health, "queued") != 0)
        snprintf(why, n, "busy %g, queued %g", num(health, "sessions_busy"), num(health, "queued"));
    else
        return true;
    return false;
}


/* Chat and completion requests for Q1, Q2 (plain and streamed) against `run`, the second turn of
 * the first conversation (its cache rows reused), and a seeded sample twice. */
static void check_against_run(const char *serve_args, const char *run_args) {
    static char want_c1[8192], want_c2[8192], want_p1[8192], want_p2[8192], want_s[8192], args[2048];
    bool draft = strstr(serve_args, "-d ") != NULL;
    snprintf(args, sizeof args, "run -m " TARGET " %s --chat -n 40 -p '" Q1 "'", run_args);
    CHECK(run_cli(args, want_c1, sizeof want_c1) == 0 && strlen(want_c1) > 2);
    snprintf(args, sizeof args, "run -m " TARGET " %s --chat -n 40 -p '" Q2 "'", run_args);
    CHECK(run_cli(args, want_c2, sizeof want_c2) == 0);
    snprintf(args, sizeof args, "run -m " TARGET " %s --chat -n 24 --temp 0.9 --seed 7 -p '" Q2 "'", run_args);
    CHECK(run_cli(args, want_s, sizeof want_s) == 0);
    snprintf(args, sizeof args, "run -m " TARGET " %s -n 24 -p '" Q1 "'", run_args);
    CHECK(run_cli(args, want_p1, sizeof want_p1) == 0);
    snprintf(args, sizeof args, "run -m " TARGET " %s -n 24 -p '" P2 "'", run_args);
    CHECK(run_cli(args, want_p2, sizeof want_p2) == 0);
    const char *in = tmp("sdk-in.json"), *out = tmp("sdk-out.json");
    static char req[16384];
    snprintf(req, sizeof req,
             "[{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"user\",\"content\":\"" Q1 "\"}],"
             "\"max_tokens\":40,\"temperature\":0}},"
             "{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"user\",\"content\":\"" Q1 "\"}],"
             "\"max_tokens\":40,\"temperature\":0,\"stream\":true}},"
             "{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"user\",\"content\":\"" Q1 "\"},"
             "{\"role\":\"assistant\",\"content\":\"It costs 36 dollars.\"},{\"role\":\"user\",\"content\":\"And 6 apples?\"}],"
             "\"max_tokens\":16,\"temperature\":0}},"
             "{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"user\",\"content\":\"" Q2 "\"}],"
             "\"max_tokens\":40,\"temperature\":0,\"stream\":true}},"
             "{\"endpoint\":\"completions\",\"body\":{\"model\":\"pf\",\"prompt\":\"" Q1 "\",\"max_tokens\":24,\"temperature\":0}},"
             "{\"endpoint\":\"completions\",\"body\":{\"model\":\"pf\",\"prompt\":\"" P2 "\",\"max_tokens\":24,\"temperature\":0,"
             "\"stream\":true}},"
             "{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"user\",\"content\":\"" Q2 "\"}],"
             "\"max_tokens\":24,\"temperature\":0.9,\"seed\":7}},"
             "{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"user\",\"content\":\"" Q2 "\"}],"
             "\"max_tokens\":24,\"temperature\":0.9,\"seed\":7,\"stream\":true}}%s]",
             /* a fixed block (Dec's choices follow the clock): the drafted tokens are the same every run */
             draft ? ",{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"user\",\"content\":\"" Q1 "\"}],"
                     "\"max_tokens\":40,\"temperature\":0,\"stream\":true,\"spec\":\"dflash\",\"block\":4}}"
                   : "");
    CHECK(write_file(in, req));
    server s;
    START(s, serve_args);
    char err[PF_ERR_LEN];
    pf_json_doc *d = client_json(&s, out, err, "sdk %s %s 1", in, out);
    SCHECK(s, d, "%s", err);
    /* requests 0, 1, 3, 4, 5 against run; 2 is the second turn of 0's conversation */
    const char *want[] = {want_c1, want_c1, NULL, want_c2, want_p1, want_p2};
    for (int i = 0; i < 6; i++) {
        if (!want[i]) continue;
        const char *got = str(item(d, (size_t)i), "text");
        SCHECK(s, got && !strcmp(got, want[i]), "request %d: '%s' differs from run's '%s'", i, got ? got : "(error)", want[i]);
        const pf_json *u = pf_json_get(item(d, (size_t)i), "usage");
        SCHECK(s, num(u, "prompt_tokens") > 0 && num(u, "completion_tokens") > 0 &&
                      num(u, "total_tokens") == num(u, "prompt_tokens") + num(u, "completion_tokens"),
               "request %d: usage missing", i);
        const char *fr = str(item(d, (size_t)i), "finish_reason");
        SCHECK(s, fr && (!strcmp(fr, "stop") || !strcmp(fr, "length")), "request %d: finish_reason", i);
        SCHECK(s, num(pf_json_get(item(d, (size_t)i), "pocketflash"), "decode_tok_s") >= 0, "request %d: no extension", i);
    }
    SCHECK(s, num(item(d, 1), "chunks") >= 3 && str(item(d, 1), "role"), "the stream came in %g chunks",
           num(item(d, 1), "chunks"));
    /* the streams' per-token marks: the same text, one per token; drafted ones only with a draft
     * (with a fixed block on Q1, some) */
    for (int i = 1; i < (draft ? 9 : 8); i += i < 7 ? 2 : 1) {
        const pf_json *mk = pf_json_get(item(d, (size_t)i), "marks");
        double n_gen = num(pf_json_get(item(d, (size_t)i), "usage"), "completion_tokens");
        SCHECK(s, str(mk, "text") && !strcmp(str(mk, "text"), str(item(d, (size_t)i), "text")),
               "request %d: token marks spell '%s'", i, str(mk, "text") ? str(mk, "text") : "(none)");
        SCHECK(s, num(mk, "tokens") == n_gen, "request %d: %g token marks for %g tokens", i, num(mk, "tokens"), n_gen);
        SCHECK(s, i < 8 || !strcmp(str(item(d, 8), "text"), want_c1), "fixed block: '%s'", str(item(d, 8), "text"));
        SCHECK(s, !draft ? num(mk, "drafted") == 0 : i == 8 ? num(mk, "drafted") > 0 : num(mk, "drafted") >= 0,
               "request %d: %g drafted tokens", i, num(mk, "drafted"));
    }
    /* the second turn reused the first turn's cache rows */
    SCHECK(s, str(item(d, 2), "text") && num(pf_json_get(item(d, 2), "pocketflash"), "reused_tokens") > 0,
           "second turn: no KV reuse");
    /* a seed reproduces a sample, streamed or not */
    const char *a = str(item(d, 6), "text"), *b = str(item(d, 7), "text");
    SCHECK(s, a && b && !strcmp(a, b), "seeded samples differ: '%s' vs '%s'", a ? a : "", b ? b : "");
    SCHECK(s, !strcmp(a, want_s), "seeded sample '%s' differs from run's '%s'", a, want_s);
    pf_json_free(d);
    /* a stop sequence from the middle of the answer: the text ends before it, streamed or not */
    static char stop[16], cut[8192];
    size_t half = strlen(want_c1) / 2;
    snprintf(stop, sizeof stop, "%.4s", want_c1 + half);
    SCHECK(s, strlen(stop) == 4 && !strchr(stop, '"') && !strchr(stop, '\\'), "no usable stop sequence in '%s'", want_c1);
    snprintf(cut, sizeof cut, "%.*s", (int)(strstr(want_c1, stop) - want_c1), want_c1);
    for (int streamed = 0; streamed < 2; streamed++) {
        snprintf(req, sizeof req,
                 "[{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"user\",\"content\":\"" Q1 "\"}],"
                 "\"max_tokens\":40,\"temperature\":0,\"stop\":[\"%s\",\"zzzz\"],\"stream\":%s}}]",
                 stop, streamed ? "true" : "false");
        CHECK(write_file(in, req));
        d = client_json(&s, out, err, "sdk %s %s 1", in, out);
        SCHECK(s, d, "%s", err);
        const char *got = str(item(d, 0), "text"), *fr = str(item(d, 0), "finish_reason");
        SCHECK(s, got && !strcmp(got, cut) && fr && !strcmp(fr, "stop"), "stop '%s': '%s' (%s), want '%s'", stop,
               got ? got : "(error)", fr ? fr : "-", cut);
        const char *marked = str(pf_json_get(item(d, 0), "marks"), "text");
        SCHECK(s, !streamed || (marked && !strcmp(marked, cut)), "stop '%s': token marks spell '%s'", stop,
               marked ? marked : "(none)");
        pf_json_free(d);
    }
    /* stop sequences that never match but hold back text ending in their first byte: a token's
     * text may then go out over two chunks (a "cont" mark), and the marks still spell the answer */
    CHECK(write_file(in, "[{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"user\",\"content\":\"" Q1
                         "\"}],\"max_tokens\":40,\"temperature\":0,\"stream\":true,"
                         "\"stop\":[\"e\\u0001\",\"a\\u0001\",\"o\\u0001\",\" \\u0001\"]}}]"));
    d = client_json(&s, out, err, "sdk %s %s 1", in, out);
    SCHECK(s, d, "%s", err);
    const pf_json *mk = pf_json_get(item(d, 0), "marks");
    SCHECK(s, str(item(d, 0), "text") && !strcmp(str(item(d, 0), "text"), want_c1), "held stops: '%s'",
           str(item(d, 0), "text") ? str(item(d, 0), "text") : "(error)");
    SCHECK(s, str(mk, "text") && !strcmp(str(mk, "text"), want_c1), "held stops: marks spell '%s'",
           str(mk, "text") ? str(mk, "text") : "(none)");
    SCHECK(s, num(mk, "tokens") == num(pf_json_get(item(d, 0), "usage"), "completion_tokens"), "held stops: %g marks",
           num(mk, "tokens"));
    pf_json_free(d);
    CHECKF(server_stop(&s) == 0, "serve did not exit cleanly on SIGTERM");
}

TEST(serve_greedy_chat_equals_run) {
    NEED_SDK();
    check_against_run("-m " TARGET " -t 1", "-t 1");
}

TEST(serve_greedy_chat_equals_run_with_draft) {
    NEED_SDK();
    check_against_run("-m " TARGET " -d " DRAFT " -t 1", "-d " DRAFT " -t 1");
}

TEST(serve_concurrent_requests_get_their_own_answers) {
    NEED_SDK();
    static const char *qs[4] = {Q1, Q2, Q3, Q4};
    static char want[4][8192], args[1024], req[16384];
    for (int i = 0; i < 4; i++) {
        snprintf(args, sizeof args, "run -m " TARGET " -d " DRAFT " -t 1 --chat -n 32 -p '%s'", qs[i]);
        CHECK(run_cli(args, want[i], sizeof want[i]) == 0);
    }
    size_t n = 0;
    n += (size_t)snprintf(req + n, sizeof req - n, "[");
    for (int i = 0; i < 12; i++)
        n += (size_t)snprintf(req + n, sizeof req - n,
                              "%s{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"user\","
                              "\"content\":\"%s\"}],\"max_tokens\":32,\"temperature\":0,\"stream\":%s}}",
                              i ? "," : "", qs[i % 4], i % 3 ? "false" : "true");
    snprintf(req + n, sizeof req - n, "]");
    const char *in = tmp("conc-in.json"), *out = tmp("conc-out.json");
    CHECK(write_file(in, req));
    server s;
    START(s, "-m " TARGET " -d " DRAFT " --parallel 3 --no-batch -t 1"); /* the pool's sessions */
    char err[PF_ERR_LEN];
    pf_json_doc *d = client_json(&s, out, err, "sdk %s %s 6", in, out);
    SCHECK(s, d, "%s", err);
    int sessions_seen = 0;
    for (int i = 0; i < 12; i++) {
        const char *got = str(item(d, (size_t)i), "text");
        SCHECK(s, got && !strcmp(got, want[i % 4]), "request %d: '%s', want '%s'", i, got ? got : "(error)", want[i % 4]);
        sessions_seen |= 1 << (int)num(pf_json_get(item(d, (size_t)i), "pocketflash"), "session");
    }
    pf_json_free(d);
    SCHECK(s, sessions_seen > 1, "every request ran on one session (mask %d)", sessions_seen);
    CHECK(server_stop(&s) == 0);
}

/* serve --seed S: a sampled request without a seed of its own is run's --seed S sample, streamed or
 * not, every time; one that names a seed keeps it. */
TEST(serve_seed_flag_fixes_unseeded_samples) {
    NEED_SDK();
    static char want7[8192], want8[8192], req[4096];
    CHECK(run_cli("run -m " TARGET " -t 1 --chat -n 24 --temp 0.9 --seed 7 -p '" Q2 "'", want7, sizeof want7) == 0);
    CHECK(run_cli("run -m " TARGET " -t 1 --chat -n 24 --temp 0.9 --seed 8 -p '" Q2 "'", want8, sizeof want8) == 0);
    CHECK(strcmp(want7, want8) != 0);
    static const char *const bodies[] = {"", ",\"stream\":true", "", ",\"seed\":8"};
    size_t n = (size_t)snprintf(req, sizeof req, "[");
    for (int i = 0; i < 4; i++)
        n += (size_t)snprintf(req + n, sizeof req - n,
                              "%s{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"user\","
                              "\"content\":\"" Q2 "\"}],\"max_tokens\":24,\"temperature\":0.9%s}}",
                              i ? "," : "", bodies[i]);
    snprintf(req + n, sizeof req - n, "]");
    const char *in = tmp("seed-in.json"), *out = tmp("seed-out.json");
    CHECK(write_file(in, req));
    server s;
    START(s, "-m " TARGET " -t 1 --seed 7");
    char err[PF_ERR_LEN];
    pf_json_doc *d = client_json(&s, out, err, "sdk %s %s 1", in, out);
    SCHECK(s, d, "%s", err);
    for (int i = 0; i < 4; i++) {
        const char *got = str(item(d, (size_t)i), "text"), *want = i == 3 ? want8 : want7;
        SCHECK(s, got && !strcmp(got, want), "request %d: '%s', want run's '%s'", i, got ? got : "(error)", want);
    }
    pf_json_free(d);
    CHECK(server_stop(&s) == 0);
}

/* Two conversations on two sessions: each second turn returns to the session of its first turn and
 * reuses its cache rows (the whole first turn: prompt and reply). */
TEST(serve_next_turn_returns_to_its_session) {
    NEED_SDK();
    server s;
    START(s, "-m " TARGET " --parallel 2 --no-batch -t 1"); /* a batch row keeps a turn only when the next lands in it */
    const char *out = tmp("turns.json");
    char err[PF_ERR_LEN];
    pf_json_doc *d = client_json(&s, out, err, "turns %s", out);
    SCHECK(s, d, "%s", err);
    for (int k = 0; k < 2; k++) {
        const pf_json *first = pf_json_get(item(d, (size_t)k), "pocketflash"), *next = pf_json_get(item(d, (size_t)k + 2), "pocketflash");
        double p1 = num(pf_json_get(item(d, (size_t)k), "usage"), "prompt_tokens");
        SCHECK(s, first && next && num(first, "session") == num(next, "session"), "conversation %d: sessions %g then %g", k,
               num(first, "session"), num(next, "session"));
        SCHECK(s, num(next, "reused_tokens") > p1, "conversation %d: second turn reused %g tokens (first prompt %g)", k,
               num(next, "reused_tokens"), p1);
    }
    SCHECK(s, num(pf_json_get(item(d, 0), "pocketflash"), "session") != num(pf_json_get(item(d, 1), "pocketflash"), "session"),
           "both conversations on one session");
    pf_json_free(d);
    CHECK(server_stop(&s) == 0);
}

/* Four different requests (chat and completion, greedy and seeded samples, streamed or not, a
 * stop string, max_tokens), all at once with --parallel 4, each its solo answer (one at a time on
 * one session, without batching): text, finish reason and token count; every one is a row of the
 * one batch. Without a draft all four decode plainly; with one they speculate, each with its own
 * strategy and block (the default, a fixed block, prompt lookup) beside a plain one. */
static void check_batch_equals_solo(const char *const *bodies, const char *draft_args, const char *tag) {
    static char req[8192], args[256];
    size_t n = (size_t)snprintf(req, sizeof req, "[");
    for (int i = 0; i < 4; i++) n += (size_t)snprintf(req + n, sizeof req - n, "%s%s", i ? "," : "", bodies[i]);
    snprintf(req + n, sizeof req - n, "]");
    char in[64], solo_name[64], out_name[64];
    snprintf(in, sizeof in, "batch-in-%s.json", tag);
    snprintf(solo_name, sizeof solo_name, "batch-solo-%s.json", tag);
    snprintf(out_name, sizeof out_name, "batch-out-%s.json", tag);
    const char *in_copy = tmp(in), *solo_out = tmp(solo_name), *out = tmp(out_name);
    CHECK(write_file(in_copy, req));
    char err[PF_ERR_LEN];
    server s;
    snprintf(args, sizeof args, "-m " TARGET " %s -t 1", draft_args);
    START(s, args);
    pf_json_doc *want = client_json(&s, solo_out, err, "sdk %s %s 1", in_copy, solo_out);
    SCHECK(s, want, "%s", err);
    CHECK(server_stop(&s) == 0);
    snprintf(args, sizeof args, "-m " TARGET " %s --parallel 4 -t 1", draft_args);
    START(s, args);
    pf_json_doc *d = client_json(&s, out, err, "sdk %s %s 4", in_copy, out);
    SCHECK(s, d, "%s", err);
    for (int i = 0; i < 4; i++) {
        const pf_json *g = item(d, (size_t)i), *w = item(want, (size_t)i);
        const char *gt = str(g, "text"), *wt = str(w, "text"), *gf = str(g, "finish_reason"), *wf = str(w, "finish_reason");
        SCHECK(s, gt && wt && !strcmp(gt, wt), "%s, request %d: batched '%s', solo '%s'", tag, i, gt ? gt : "(error)",
               wt ? wt : "(error)");
        SCHECK(s, gf && wf && !strcmp(gf, wf), "%s, request %d: finish_reason %s, solo %s", tag, i, gf ? gf : "-",
               wf ? wf : "-");
        SCHECK(s, num(pf_json_get(g, "usage"), "completion_tokens") == num(pf_json_get(w, "usage"), "completion_tokens"),
               "%s, request %d: %g tokens, solo %g", tag, i, num(pf_json_get(g, "usage"), "completion_tokens"),
               num(pf_json_get(w, "usage"), "completion_tokens"));
        const pf_json *gp = pf_json_get(g, "pocketflash"), *wp = pf_json_get(w, "pocketflash");
        const char *gs = str(gp, "spec"), *ws = str(wp, "spec");
        SCHECK(s, gs && ws && !strcmp(gs, ws) && num(gp, "block") == num(wp, "block"),
               "%s, request %d: %s block %g, solo %s block %g", tag, i, gs ? gs : "-", num(gp, "block"), ws ? ws : "-",
               num(wp, "block"));
        /* the batch reports itself as session --parallel (past the pool's 0..N-1) */
        SCHECK(s, num(gp, "session") == 4, "%s, request %d ran on session %g, not the batch", tag, i, num(gp, "session"));
    }
    SCHECK(s, !strcmp(str(item(d, 2), "finish_reason"), "stop"), "%s: the stop string did not end request 2", tag);
    pf_json_free(d);
    pf_json_free(want);
    CHECK(server_stop(&s) == 0);
}

TEST(serve_batch_four_at_once_equal_solo) {
    NEED_SDK();
    static const char *const bodies[4] = {
        "{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"user\",\"content\":\"" Q1
        "\"}],\"max_tokens\":40,\"temperature\":0,\"stream\":true}}",
        "{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"user\",\"content\":\"" Q2
        "\"}],\"max_tokens\":36,\"temperature\":0.9,\"top_p\":0.9,\"seed\":11}}",
        "{\"endpoint\":\"completions\",\"body\":{\"model\":\"pf\",\"prompt\":\"" P2
        "\",\"max_tokens\":48,\"temperature\":0,\"stop\":[\".\"],\"stream\":true}}",
        "{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief."
        "\"},{\"role\":\"user\",\"content\":\"" Q3 "\"}],\"max_tokens\":7,\"temperature\":0.7,\"seed\":3}}",
    };
    check_batch_equals_solo(bodies, "", "plain");
}

TEST(serve_batch_speculating_four_at_once_equal_solo) {
    NEED_SDK();
    static const char *const bodies[4] = {
        "{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"user\",\"content\":\"" Q1
        "\"}],\"max_tokens\":40,\"temperature\":0,\"stream\":true}}",
        "{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"user\",\"content\":\"" Q2
        "\"}],\"max_tokens\":36,\"temperature\":0.9,\"top_p\":0.9,\"seed\":11,\"spec\":\"dflash\",\"block\":3}}",
        "{\"endpoint\":\"completions\",\"body\":{\"model\":\"pf\",\"prompt\":\"" P2
        "\",\"max_tokens\":48,\"temperature\":0,\"stop\":[\".\"],\"stream\":true,\"spec\":\"plain\"}}",
        "{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief."
        "\"},{\"role\":\"user\",\"content\":\"" Q3 "\"}],\"max_tokens\":12,\"temperature\":0,\"spec\":\"ngram\"}}",
    };
    check_batch_equals_solo(bodies, "-d " DRAFT, "spec");
}

/* Three of four batched streams vanish after their first chunks: their rows leave the batch (the
 * server counts them dropped), the request beside them is answered, every place is free after. */
TEST(serve_batch_clients_vanish_mid_batch) {
    NEED_SDK();
    server s;
    START(s, "-m " TARGET " --parallel 4 -t 1 -c 16384");
    const char *out = tmp("vanish.json");
    char err[PF_ERR_LEN];
    pf_json_doc *d = client_json(&s, out, err, "vanish %s 3", out);
    SCHECK(s, d, "%s", err);
    const pf_json *r = pf_json_root(d), *health = pf_json_get(r, "health");
    SCHECK(s, is_true(pf_json_get(r, "during"), "ok") && is_true(pf_json_get(r, "after"), "ok"),
           "a request beside or after the vanished ones failed");
    SCHECK(s, !strcmp(str(pf_json_get(r, "during"), "text"), str(pf_json_get(r, "after"), "text")),
           "the same request in and after the batch: '%s' / '%s'", str(pf_json_get(r, "during"), "text"),
           str(pf_json_get(r, "after"), "text"));
    char why[160];
    SCHECK(s, idle_after_drops(health, 3, why, sizeof why), "health: %s", why);
    pf_json_free(d);
    CHECK(server_stop(&s) == 0);
}

/* A batch of two rows and one queue place: of 6 long requests at once, 2 run, 1 waits and the
 * others get 503 server_busy; every answer equals the first (the same request). */
TEST(serve_batch_full_queue) {
    NEED_SDK();
    const char *in = tmp("bqueue-in.json"), *out = tmp("bqueue-out.json");
    CHECK(write_six_long_chats(in));
    server s;
    START(s, "-m " TARGET " --parallel 2 --queue 1 -t 1 -c 2048");
    char err[PF_ERR_LEN];
    pf_json_doc *d = client_json(&s, out, err, "sdk %s %s 6", in, out);
    SCHECK(s, d, "%s", err);
    int ok = 0, busy = 0;
    const char *first = NULL;
    for (size_t i = 0; i < 6; i++) {
        const pf_json *r = item(d, i);
        if (is_true(r, "ok") && num(pf_json_get(r, "usage"), "completion_tokens") == 1000) {
            ok++;
            if (!first) first = str(r, "text");
            SCHECK(s, !strcmp(first, str(r, "text")), "request %zu: another answer", i);
        } else if (is_server_busy(r)) {
            busy++;
        }
    }
    pf_json_free(d);
    SCHECK(s, ok >= 3 && busy >= 1 && ok + busy == 6, "%d answered, %d busy of 6", ok, busy);
    CHECK(server_stop(&s) == 0);
}

TEST(serve_dropped_stream_frees_its_session) {
    NEED_SDK();
    server s;
    /* the dropped stream asks for 100000 tokens without end of turn: with this context it runs for
     * over a minute unless stopped, whatever the load (the client and the server slow together) */
    START(s, "-m " TARGET " --parallel 1 -t 1 -c 16384");
    const char *out = tmp("drop.json");
    char err[PF_ERR_LEN];
    pf_json_doc *d = client_json(&s, out, err, "disconnect %s", out);
    SCHECK(s, d, "%s", err);
    const pf_json *r = pf_json_root(d), *after = pf_json_get(r, "after"), *health = pf_json_get(r, "health");
    printf("    the next request answered after %.0f ms\n", num(r, "after_ms"));
    /* the server's count, not the client's clock: the next request got the only session, and the
     * stream was stopped because its client left, not because it ran to its end */
    SCHECK(s, is_true(after, "ok"), "the next request failed: %s", str(after, "message"));
    char why[160];
    SCHECK(s, idle_after_drops(health, 1, why, sizeof why), "health: %s", why);
    pf_json_free(d);
    CHECK(server_stop(&s) == 0);
}

/* One session, one queue place: of 6 requests at once, the ones beyond get 503 server_busy and the
 * others their answer. Each answer is 1000 tokens long (seconds), so the requests the client sends
 * together are all in before the first ends, however slowly it sends them. A generation past
 * --timeout stops with finish_reason "length". */
TEST(serve_queue_limit_and_time_limit) {
    NEED_SDK();
    static char args[700];
    const char *in = tmp("queue-in.json"), *out = tmp("queue-out.json");
    CHECK(write_six_long_chats(in));
    server s;
    START(s, "-m " TARGET " --parallel 1 --queue 1 -t 1 -c 2048");
    char err[PF_ERR_LEN];
    pf_json_doc *d = client_json(&s, out, err, "sdk %s %s 6", in, out);
    SCHECK(s, d, "%s", err);
    int ok = 0, busy = 0;
    for (size_t i = 0; i < 6; i++) {
        const pf_json *r = item(d, i);
        if (is_true(r, "ok") && num(pf_json_get(r, "usage"), "completion_tokens") > 0) ok++;
        else if (is_server_busy(r)) busy++;
    }
    pf_json_free(d);
    SCHECK(s, ok >= 2 && busy >= 1 && ok + busy == 6, "%d answered, %d busy of 6", ok, busy);
    CHECK(server_stop(&s) == 0);
    /* the time limit: 100000 tokens without end of turn stop after 0.25 s, long before a context of
     * 8192 tokens is full (seconds on any machine; a loaded one only widens the gap) */
    START(s, "-m " TARGET " -t 1 --timeout 0.25 -c 8192");
    SCHECK(s, write_file(in, "[{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"user\","
                             "\"content\":\"hi\"}],\"max_tokens\":100000,\"temperature\":0,\"ignore_eos\":true}}]"), "write");
    snprintf(args, sizeof args, "sdk %s %s 1", in, out);
    SCHECK(s, client(&s, args) == 0, "client failed");
    d = pf_json_parse_file(out, err);
    const pf_json *r = item(d, 0);
    const char *fr = str(r, "finish_reason");
    /* the flag, not the client's clock: a loaded machine may take seconds to answer */
    SCHECK(s, fr && !strcmp(fr, "length") && is_true(pf_json_get(r, "pocketflash"), "timed_out"),
           "time limit: finish_reason %s after %g ms", fr ? fr : "-", num(r, "ms"));
    pf_json_free(d);
    CHECK(server_stop(&s) == 0);
}

/* One raw HTTP exchange's expectations. */
typedef struct {
    const char *method, *path, *headers, *body; /* headers: a JSON object's members, or "" */
    int status;
    const char *param, *code; /* expected in the error body (NULL: not checked) */
} exchange;

static void check_exchanges(server *s, const exchange *x, int n) {
    static char req[1 << 16];
    size_t k = (size_t)snprintf(req, sizeof req, "[");
    for (int i = 0; i < n; i++) {
        k += (size_t)snprintf(req + k, sizeof req - k, "%s{\"method\":\"%s\",\"path\":\"%s\",\"headers\":{%s}", i ? "," : "",
                              x[i].method, x[i].path, x[i].headers);
        if (x[i].body) {
            k += (size_t)snprintf(req + k, sizeof req - k, ",\"body\":\"");
            for (const char *c = x[i].body; *c && k + 8 < sizeof req; c++)
                k += (size_t)snprintf(req + k, sizeof req - k, *c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
            k += (size_t)snprintf(req + k, sizeof req - k, "\"");
        }
        k += (size_t)snprintf(req + k, sizeof req - k, "}");
    }
    snprintf(req + k, sizeof req - k, "]");
    const char *in = tmp("raw-in.json"), *out = tmp("raw-out.json");
    CHECK(write_file(in, req));
    char args[700], err[PF_ERR_LEN];
    snprintf(args, sizeof args, "raw %s %s", in, out);
    SCHECK(*s, client(s, args) == 0, "client failed");
    pf_json_doc *d = pf_json_parse_file(out, err);
    SCHECK(*s, d, "%s", err);
    for (int i = 0; i < n; i++) {
        const pf_json *r = item(d, (size_t)i);
        const char *body = str(r, "body");
        SCHECK(*s, num(r, "status") == x[i].status, "%s %s: status %g, want %d (%.300s)", x[i].method, x[i].path,
               num(r, "status"), x[i].status, body ? body : "");
        if (x[i].status < 400) continue;
        pf_json_doc *e = body ? pf_json_parse(body, strlen(body), err) : NULL;
        const pf_json *eo = e ? pf_json_get(pf_json_root(e), "error") : NULL;
        bool shape = eo && str(eo, "message") && str(eo, "type") && pf_json_get(eo, "param") && pf_json_get(eo, "code");
        bool param = !x[i].param || (str(eo, "param") && !strcmp(str(eo, "param"), x[i].param));
        bool code = !x[i].code || (str(eo, "code") && !strcmp(str(eo, "code"), x[i].code));
        pf_json_free(e);
        SCHECK(*s, shape && param && code, "%s %s: error body '%.300s' (want param %s, code %s)", x[i].method, x[i].path,
               body ? body : "", x[i].param ? x[i].param : "-", x[i].code ? x[i].code : "-");
    }
    pf_json_free(d);
}

#define JSON_CT "\"content-type\":\"application/json\""
#define CHAT_OK "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":4,\"temperature\":0}"

TEST(serve_bad_requests_get_openai_errors) {
    NEED_NODE();
    static char long_prompt[8192], big[6000];
    size_t k = (size_t)snprintf(long_prompt, sizeof long_prompt, "{\"messages\":[{\"role\":\"user\",\"content\":\"");
    for (int i = 0; i < 150; i++) k += (size_t)snprintf(long_prompt + k, sizeof long_prompt - k, "apple ");
    snprintf(long_prompt + k, sizeof long_prompt - k, "\"}],\"max_tokens\":4%s}", "");
    static char long_stream[8300];
    snprintf(long_stream, sizeof long_stream, "%.*s,\"stream\":true}", (int)strlen(long_prompt) - 1, long_prompt);
    memset(big, 'x', sizeof big - 1);
    memcpy(big, "{\"prompt\":\"", 11);
    memcpy(big + sizeof big - 3, "\"}", 2);
    const exchange x[] = {
        {"POST", "/v1/chat/completions", JSON_CT, "{not json", 400, NULL, NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "", 400, NULL, NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "[1,2]", 400, NULL, NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "{\"max_tokens\":4}", 400, "messages", NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "{\"messages\":[]}", 400, "messages", NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "{\"messages\":[{\"role\":\"user\",\"content\":5}]}", 400, "messages", NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "{\"messages\":[{\"role\":\"wizard\",\"content\":\"hi\"}]}", 400, "messages", NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":\"ten\"}", 400, "max_tokens", NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2.5}", 400, "max_tokens", NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"temperature\":\"hot\"}", 400, "temperature", NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":\"yes\"}", 400, "stream", NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stop\":[1]}", 400, "stop", NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"n\":2}", 400, "n", NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"spec\":\"dflash\"}", 400, "spec", NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"spec\":\"bogus\"}", 400, "spec", NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"block\":99}", 400, "block", NULL},
        {"POST", "/v1/completions", JSON_CT, "{\"prompt\":42}", 400, "prompt", NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"response_format\":"
         "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":{\"type\":\"string\",\"pattern\":\"(a)\\\\1\"}}}}", 400, "response_format", NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"response_format\":{\"type\":\"xml\"}}", 400, "response_format", NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"json_schema\":{\"not\":{}}}", 400, "json_schema", NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":8,\"response_format\":{\"type\":\"json_object\"}}", 200, NULL, NULL},
        {"POST", "/v1/chat/completions", JSON_CT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":8,\"response_format\":"
         "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"yn\",\"schema\":{\"enum\":[\"yes\",\"no\"]}}}}", 200, NULL, NULL},
        /* a budget that cannot hold the schema's shortest document: refused before generating */
        {"POST", "/v1/chat/completions", JSON_CT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2,\"response_format\":"
         "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"d\",\"schema\":{\"type\":\"object\",\"properties\":{\"description\":"
         "{\"type\":\"string\",\"minLength\":20}},\"required\":[\"description\"]}}}}", 400, "max_tokens", NULL},
        {"POST", "/v1/chat/completions", JSON_CT, long_prompt, 400, "messages", "context_length_exceeded"},
        {"POST", "/v1/chat/completions", JSON_CT, long_stream, 400, "messages", "context_length_exceeded"},
        {"POST", "/v1/completions", JSON_CT, big, 413, NULL, "request_too_large"},
        {"GET", "/v1/nothing", "", NULL, 404, NULL, "not_found"},
        {"GET", "/v1/chat/completions", "", NULL, 405, NULL, "method_not_allowed"},
        {"DELETE", "/v1/models", "", NULL, 405, NULL, "method_not_allowed"},
        /* and it keeps serving */
        {"POST", "/v1/chat/completions", JSON_CT, CHAT_OK, 200, NULL, NULL},
        {"GET", "/v1/models", "", NULL, 200, NULL, NULL},
        {"GET", "/health", "", NULL, 200, NULL, NULL},
    };
    server s;
    /* no draft: "spec": "dflash" is refused; a 64-token context: the long prompt does not fit */
    START(s, "-m " TARGET " -t 1 -c 64 --max-body 4096");
    check_exchanges(&s, x, (int)(sizeof x / sizeof x[0]));
    if (pf_test_failed()) return;
    CHECK(server_stop(&s) == 0);
}

TEST(serve_api_key_refusals) {
    NEED_SDK();
    server s;
    START(s, "-m " TARGET " -t 1 --api-key sekrit");
    const exchange x[] = {
        {"GET", "/health", "", NULL, 200, NULL, NULL},
        {"GET", "/v1/models", "", NULL, 401, NULL, "invalid_api_key"},
        {"GET", "/v1/models", "\"authorization\":\"Bearer wrong\"", NULL, 401, NULL, "invalid_api_key"},
        {"GET", "/v1/models", "\"authorization\":\"Bearer sekrit\"", NULL, 200, NULL, NULL},
        {"POST", "/v1/chat/completions", JSON_CT, CHAT_OK, 401, NULL, "invalid_api_key"},
        {"POST", "/v1/chat/completions", JSON_CT ",\"authorization\":\"Bearer sekri\"", CHAT_OK, 401, NULL, "invalid_api_key"},
        {"POST", "/v1/nothing", "", NULL, 401, NULL, NULL},
    };
    check_exchanges(&s, x, (int)(sizeof x / sizeof x[0]));
    if (pf_test_failed()) return;
    /* through the SDK: the wrong key is an authentication error, the right one answers */
    const char *in = tmp("key-in.json"), *out = tmp("key-out.json");
    CHECK(write_file(in, "[{\"endpoint\":\"chat\",\"key\":\"nope\",\"body\":" CHAT_OK "},"
                         "{\"endpoint\":\"chat\",\"key\":\"sekrit\",\"body\":" CHAT_OK "}]"));
    char err[PF_ERR_LEN];
    pf_json_doc *d = client_json(&s, out, err, "sdk %s %s 1", in, out);
    SCHECK(s, d, "%s", err);
    SCHECK(s, !is_true(item(d, 0), "ok") && num(item(d, 0), "status") == 401, "wrong key: status %g", num(item(d, 0), "status"));
    SCHECK(s, is_true(item(d, 1), "ok") && str(item(d, 1), "text"), "right key refused");
    pf_json_free(d);
    CHECK(server_stop(&s) == 0);
}

/* ---- the chat page (GET /) in a real browser ---- */
/* node tests/serve/page.mjs BASE MODE OUT SHOT Q1 40 ARGS: what the page showed (JSON), or NULL
 * with err. */
static pf_json_doc *browser(const server *s, const char *mode_args, const char *out, const char *shot, char *err) {
    char cmd[2048], log[300];
    snprintf(log, sizeof log, "%s/page.log", pf_test_tmpdir());
    snprintf(cmd, sizeof cmd,
             "PF_PLAYWRIGHT_DIR='%s' PF_CHROMIUM='%s' node tests/serve/page.mjs %s %.*s %s %s '" Q1 "' 40 %s >%s 2>&1",
             playwright_dir(), chromium(), s->base, (int)strcspn(mode_args, " "), mode_args, out, shot,
             mode_args + strcspn(mode_args, " "), log);
    int st = system(cmd);
    if (!WIFEXITED(st) || WEXITSTATUS(st)) {
        char *t = test_slurp(log, NULL);
        snprintf(err, PF_ERR_LEN, "page.mjs %s: %.200s", mode_args, t ? t : "");
        free(t);
        return NULL;
    }
    return pf_json_parse_file(out, err);
}

/* The answer the page showed in a pane: done, run's text, one mark per token, as many drafted
 * marks as it counted drafted tokens, the strategy that ran ("dec", "dflash", "plain", ...) and its
 * drafter ("dflash2", "plain"). */
static bool pane_ok(const pf_json *p, const char *want, const char *strategy, const char *drafter, char *why) {
    const char *state = str(p, "state"), *text = str(p, "text"), *strat = str(p, "strategy"), *dr = str(p, "drafter");
    double tokens = num(p, "tokens"), drafted = num(p, "drafted"), sd = num(p, "spans_drafted"), st = num(p, "spans_target");
    if (!state || strcmp(state, "done")) snprintf(why, PF_ERR_LEN, "state %s: %.150s", state ? state : "-", text ? text : "");
    else if (!text || strcmp(text, want)) snprintf(why, PF_ERR_LEN, "'%.100s' differs from run's '%.100s'", text ? text : "", want);
    else if (tokens < 1 || sd + st != tokens || sd != drafted) snprintf(why, PF_ERR_LEN, "%g tokens, %g + %g marks, %g drafted", tokens, sd, st, drafted);
    else if (!strat || strcmp(strat, strategy)) snprintf(why, PF_ERR_LEN, "strategy %s, not %s", strat ? strat : "-", strategy);
    else if (!dr || strcmp(dr, drafter)) snprintf(why, PF_ERR_LEN, "drafter %s, not %s", dr ? dr : "-", drafter);
    else return true;
    return false;
}

static bool no_page_errors(const pf_json_doc *d) {
    const pf_json *e = pf_json_get(pf_json_root(d), "page_errors");
    return e && e->type == PF_JSON_ARRAY && e->u.arr.n == 0;
}

/* Types Q1, checks the streamed answer against `run --chat` with its tokens marked (the server's
 * default strategy `dflt`), then the same prompt side by side (speculative with spec_block's
 * strategy `chosen`, else the default, and plain); a screenshot. */
static void check_page(const char *serve_args, const char *spec_block, const char *dflt, const char *chosen,
                       const char *drafter, bool drafts) {
    static char want[8192];
    CHECK(run_cli("run -m " TARGET " -t 1 --chat -n 40 -p '" Q1 "'", want, sizeof want) == 0 && strlen(want) > 2);
    server s;
    START(s, serve_args);
    const char *out = tmp("page.json"), *shot = tmp("page.png");
    unlink(shot);
    char args[300], err[PF_ERR_LEN], why[PF_ERR_LEN];
    snprintf(args, sizeof args, "chat %s", spec_block);
    pf_json_doc *d = browser(&s, args, out, shot, err);
    SCHECK(s, d, "%s", err);
    const pf_json *r = pf_json_root(d), *single = pf_json_get(r, "single"), *side = pf_json_get(r, "side");
    SCHECK(s, single && single->type == PF_JSON_ARRAY && single->u.arr.n == 1, "one pane for one answer");
    SCHECK(s, pane_ok(&single->u.arr.items[0], want, dflt, drafter, why), "the answer: %s", why);
    SCHECK(s, side && side->type == PF_JSON_ARRAY && side->u.arr.n == 2, "two panes side by side");
    const pf_json *spec = &side->u.arr.items[0], *plain = &side->u.arr.items[1];
    SCHECK(s, !strcmp(str(spec, "kind"), "spec") && pane_ok(spec, want, chosen, drafter, why), "speculative pane: %s", why);
    SCHECK(s, !strcmp(str(plain, "kind"), "plain") && pane_ok(plain, want, "plain", "plain", why), "plain pane: %s", why);
    SCHECK(s, drafts ? num(spec, "drafted") > 0 : num(spec, "drafted") == 0, "%g drafted tokens", num(spec, "drafted"));
    SCHECK(s, num(plain, "drafted") == 0 && num(plain, "tokens") == num(spec, "tokens"), "plain: %g of %g drafted",
           num(plain, "drafted"), num(plain, "tokens"));
    SCHECK(s, str(r, "speedup") && strstr(str(r, "speedup"), "the same text"), "speed line '%s'", str(r, "speedup"));
    SCHECK(s, no_page_errors(d), "the page threw");
    size_t n_png = 0;
    char *png = test_slurp(shot, &n_png);
    SCHECK(s, png && n_png > 1000 && !memcmp(png, "\x89PNG", 4), "no screenshot at %s", shot);
    printf("    page: %s; screenshot %s (%zu bytes)\n", str(plain, "stats"), shot, n_png);
    free(png);
    pf_json_free(d);
    CHECK(server_stop(&s) == 0);
}

TEST(serve_page_in_browser_with_draft) {
    NEED_BROWSER();
    /* a fixed block side by side: Dec's choices follow the clock, a fixed block drafts the same every run */
    check_page("-m " TARGET " -d " DRAFT " -t 1", "dflash 4", "dec", "dflash", "dflash2", true);
}

TEST(serve_page_in_browser_without_draft) {
    NEED_BROWSER();
    check_page("-m " TARGET " -t 1", "", "plain", "plain", "plain", false);
}

/* With --api-key the page loads, its request without the key is refused and says so, and with the
 * key typed in it answers. */
TEST(serve_page_in_browser_api_key) {
    NEED_BROWSER();
    static char want[8192];
    CHECK(run_cli("run -m " TARGET " -t 1 --chat -n 40 -p '" Q1 "'", want, sizeof want) == 0);
    server s;
    START(s, "-m " TARGET " -t 1 --api-key sekrit");
    const char *out = tmp("page-key.json");
    char err[PF_ERR_LEN], why[PF_ERR_LEN];
    pf_json_doc *d = browser(&s, "key sekrit", out, tmp("page-key.png"), err);
    SCHECK(s, d, "%s", err);
    const pf_json *r = pf_json_root(d), *refused = pf_json_get(r, "refused"), *ok = pf_json_get(r, "accepted");
    const pf_json *p0 = refused && refused->type == PF_JSON_ARRAY && refused->u.arr.n ? &refused->u.arr.items[0] : NULL;
    SCHECK(s, p0 && !strcmp(str(p0, "state"), "error") && strstr(str(p0, "text"), "API key"), "without the key: %s",
           p0 ? str(p0, "text") : "no pane");
    SCHECK(s, str(r, "model_before") && !strcmp(str(r, "model_before"), "API key needed"), "model line '%s'",
           str(r, "model_before"));
    SCHECK(s, ok && ok->type == PF_JSON_ARRAY && ok->u.arr.n == 1 && pane_ok(&ok->u.arr.items[0], want, "plain", "plain", why),
           "with the key: %s", why);
    SCHECK(s, str(r, "model_after") && !strcmp(str(r, "model_after"), "pf-target-f16.gguf"), "model line '%s'",
           str(r, "model_after"));
    SCHECK(s, no_page_errors(d), "the page threw");
    pf_json_free(d);
    CHECK(server_stop(&s) == 0);
}

/* 1,000 small requests (a quarter streamed) from 8 clients on 2 sessions: none fails, every answer
 * is its prompt's, and the resident memory after the first 200 stays flat to the end. */
TEST(serve_load_run_no_failures_flat_memory) {
    NEED_SDK();
    server s;
    START(s, "-m " TARGET " -d " DRAFT " --parallel 2 -t 1");
    const char *out = tmp("load.json");
    char err[PF_ERR_LEN];
    pf_json_doc *d = client_json(&s, out, err, "load %s 1000 8 %d", out, (int)s.pid);
    SCHECK(s, d, "%s", err);
    const pf_json *r = pf_json_root(d), *rss = pf_json_get(r, "rss_kb");
    SCHECK(s, rss && rss->type == PF_JSON_ARRAY && rss->u.arr.n >= 10, "no RSS samples");
    double first = rss->u.arr.items[2].u.num.d, last = rss->u.arr.items[rss->u.arr.n - 1].u.num.d, peak = 0;
    for (size_t i = 2; i < rss->u.arr.n; i++) peak = rss->u.arr.items[i].u.num.d > peak ? rss->u.arr.items[i].u.num.d : peak;
    printf("    serve load: %g requests, %g clients, %g failed, %g wrong; p50 %.1f ms, p99 %.1f ms, %.1f req/s; "
           "RSS %g kB after 200, %g kB at the end (peak %g kB)\n",
           num(r, "n"), num(r, "clients"), num(r, "failed"), num(r, "wrong"), num(r, "p50_ms"), num(r, "p99_ms"),
           num(r, "req_per_s"), first, last, peak);
    SCHECK(s, num(r, "failed") == 0 && num(r, "wrong") == 0, "%g failed, %g wrong answers", num(r, "failed"), num(r, "wrong"));
    SCHECK(s, peak - first < 16 * 1024, "RSS grew from %g kB to %g kB", first, peak);
    pf_json_free(d);
    CHECK(server_stop(&s) == 0);
}

/* The load run on the batch: 400 small requests from 8 clients through --parallel 4 (no draft,
 * so every one is a row of the batch). */
TEST(serve_load_run_batched_no_failures) {
    NEED_SDK();
    server s;
    START(s, "-m " TARGET " --parallel 4 -t 1");
    const char *out = tmp("bload.json");
    char err[PF_ERR_LEN];
    pf_json_doc *d = client_json(&s, out, err, "load %s 400 8 %d", out, (int)s.pid);
    SCHECK(s, d, "%s", err);
    const pf_json *r = pf_json_root(d);
    printf("    batched serve load: %g requests, %g clients, %g failed, %g wrong; p50 %.1f ms, p99 %.1f ms\n",
           num(r, "n"), num(r, "clients"), num(r, "failed"), num(r, "wrong"), num(r, "p50_ms"), num(r, "p99_ms"));
    SCHECK(s, num(r, "failed") == 0 && num(r, "wrong") == 0, "%g failed, %g wrong answers", num(r, "failed"), num(r, "wrong"));
    pf_json_free(d);
    CHECK(server_stop(&s) == 0);
}

TEST(serve_bad_flags_one_line_errors) {
    static char out[4096];
    char cmd[1024], pe[300];
    snprintf(pe, sizeof pe, "%s/serve-flags.err", pf_test_tmpdir());
    static const char *const cases[][2] = {
        {"", "missing -m"},
        {"-m " TARGET " --port 70000", "--port"},
        {"-m " TARGET " --parallel 0", "--parallel"},
        {"-m " TARGET " --bogus", "unknown flag '--bogus'"},
        {"-m " TARGET " --api-key ''", "--api-key"},
        {"-m " TARGET " --seed -1", "--seed"},
        {"-m /nonexistent.gguf", "cannot open"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s serve %s >/dev/null 2>%s </dev/null", cli(), cases[i][0], pe);
        int st = system(cmd);
        char *e = test_slurp(pe, NULL);
        snprintf(out, sizeof out, "%s", e ? e : "");
        free(e);
        /* a bad flag is 1; a model that cannot be read 2 (docs/cli.md#exit-status) */
        int want = strstr(cases[i][0], "/nonexistent") ? 2 : 1;
        CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == want, "serve %s: exit %d", cases[i][0], st);
        CHECKF(strstr(out, cases[i][1]) && strchr(out, '\n') == out + strlen(out) - 1, "serve %s: stderr '%s'",
               cases[i][0], out);
    }
}

/* A failure after the model loaded but before listening exits with its kind and one line: a port
 * another socket holds cannot be bound (I/O, 2; docs/cli.md#exit-status). */
TEST(serve_port_in_use_exit_status) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 1) == 0 &&
          getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    char cmd[1024], pe[300];
    snprintf(pe, sizeof pe, "%s/serve-port.err", pf_test_tmpdir());
    snprintf(cmd, sizeof cmd, "%s serve -m " TARGET " -t 1 --port %d >/dev/null 2>%s </dev/null", cli(), ntohs(a.sin_port), pe);
    int st = system(cmd);
    close(fd);
    char *e = test_slurp(pe, NULL);
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 2, "exit %d", st);
    CHECKF(e && strstr(e, "pocketflash: serve: cannot listen on 127.0.0.1:") && strstr(e, "the port is in use") &&
               strchr(e, '\n') == e + strlen(e) - 1,
           "stderr '%s'", e ? e : "");
    free(e);
}

/* ---- raw sockets: what a broken or hostile client sends ---- */

static int raw_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static void raw_send(int fd, const char *s, size_t n) {
    while (n) {
        ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
        if (k <= 0) return; /* the server may close first: that is allowed */
        s += k, n -= (size_t)k;
    }
}

/* Reads up to n bytes (or until the server closes); the count. */
static size_t raw_read(int fd, char *buf, size_t n) {
    size_t got = 0;
    for (ssize_t k; got < n && (k = recv(fd, buf + got, n - got, 0)) > 0;) got += (size_t)k;
    return got;
}

/* Whether the socket with this inode is a listening TCP socket (/proc/PID/net/tcp{,6}, state 0A).
 * Any other socket of the server is a connection: open, closing, or reset and unhashed (absent from
 * the tables) until the server's thread closes it. */
static bool tcp_listening(pid_t pid, unsigned long inode) {
    static const char *const tables[] = {"tcp", "tcp6"};
    bool found = false;
    for (int t = 0; t < 2 && !found; t++) {
        char p[64], line[512];
        snprintf(p, sizeof p, "/proc/%d/net/%s", (int)pid, tables[t]);
        FILE *f = fopen(p, "r");
        if (!f) continue;
        while (!found && fgets(line, sizeof line, f)) {
            unsigned st;
            unsigned long ino;
            /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
            found = sscanf(line, "%*s %*s %*s %x %*s %*s %*s %*s %*s %lu", &st, &ino) == 2 && ino == inode && st == 0x0A;
        }
        fclose(f);
    }
    return found;
}

static void count_fds(pid_t pid, int *lasting, int *conns, bool show) {
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/fd", (int)pid);
    *lasting = *conns = -1;
    DIR *d = opendir(p);
    if (!d) return;
    *lasting = *conns = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char fp[sizeof p + sizeof e->d_name + 1], link[256] = "";
        snprintf(fp, sizeof fp, "%s/%s", p, e->d_name);
        ssize_t n = readlink(fp, link, sizeof link - 1);
        if (n > 0) link[n] = 0;
        unsigned long ino;
        if (sscanf(link, "socket:[%lu]", &ino) == 1 && !tcp_listening(pid, ino)) {
            (*conns)++;
            continue;
        }
        (*lasting)++;
        if (show) printf("      fd %s -> %s\n", e->d_name, link);
    }
    closedir(d);
}

static long rss_kb(pid_t pid) {
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
    FILE *f = fopen(p, "r"); /* a /proc file has no size to read by */
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kb = atol(line + 6);
    if (f) fclose(f);
    return kb;
}

/* GET /health; busy and queued counts (-1: no answer). */
static void raw_health(int port, int *busy, int *queued) {
    *busy = *queued = -1;
    int fd = raw_connect(port);
    if (fd < 0) return;
    static const char req[] = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    raw_send(fd, req, sizeof req - 1);
    char buf[2048] = {0};
    raw_read(fd, buf, sizeof buf - 1);
    close(fd);
    const char *b = strstr(buf, "\"sessions_busy\":"), *q = strstr(buf, "\"queued\":");
    if (b && q) *busy = atoi(b + 16), *queued = atoi(q + 9);
}

/* Until every session is free and nothing is queued (cancelled jobs stop at their next token),
 * then until the server has closed every connection, its /health request's too, then (want >= 0)
 * until its long-lived descriptors are back to want (a thread may still hold one briefly). Each
 * wait is for a state, polled; the bound (120 s each) only ends a server that never settles (a
 * leak), it is no measurement. */
static void settle(const server *s, int want, int *busy, int *queued, int *lasting, int *conns) {
    for (int i = 0; i < 2400; i++) {
        raw_health(s->port, busy, queued);
        if (*busy == 0 && *queued == 0) break;
        usleep(50000);
    }
    for (int i = 0; i < 2400; i++) {
        count_fds(s->pid, lasting, conns, false);
        if (*conns == 0 && (want < 0 || *lasting <= want)) break;
        usleep(50000);
    }
}

#define RAW_CHAT "{\"messages\":[{\"role\":\"user\",\"content\":\"Tell a long story.\"}],\"max_tokens\":100000,\"stream\":true}"

/* Bounded (a fixed count of connections, no waits but the settling at the end): truncated
 * requests, byte-at-a-time senders, oversized headers and bodies, streams dropped after their
 * first bytes, 32 half-sent requests open at once. Afterwards /health shows every session free and
 * nothing queued, the server closes every connection, its long-lived descriptors are no more than
 * after a warm-up round (one complete request served) and its resident memory has not grown by
 * more than 16 MB. */
TEST(serve_raw_socket_abuse_leaves_it_clean) {
    server s;
    START(s, "-m " TARGET " -t 1 --parallel 2 -c 128 --max-body 65536");
    int busy, queued, fd0 = -1, fds_now = -1, conns0 = -1, conns = -1;
    long rss0 = -1;
    static char big[70000], req[80000];
    memset(big, 'a', sizeof big - 1);
    for (int round = 0; round < 5; round++) {
        /* the first round warms up (pages of the model, both sessions' caches, a complete request
         * served): the baseline is after it, once the server has settled */
        if (round == 1) {
            settle(&s, -1, &busy, &queued, &fd0, &conns0);
            printf("    long-lived descriptors after the warm-up:\n");
            count_fds(s.pid, &fd0, &conns0, true);
            SCHECK(s, busy == 0 && queued == 0 && conns0 == 0, "after the warm-up: busy %d queued %d connections %d",
                   busy, queued, conns0);
            rss0 = rss_kb(s.pid);
        }
        /* truncated: the request line and part of the headers */
        for (int i = 0; i < 8; i++) {
            int fd = raw_connect(s.port);
            SCHECK(s, fd >= 0, "connect");
            raw_send(fd, "POST /v1/chat/completions HTTP/1.1\r\nContent-Le", 45 - (size_t)i * 3);
            close(fd);
        }
        /* one byte per send, then the answer read */
        int n = snprintf(req, sizeof req, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
                         (int)strlen("{\"prompt\":\"hi\",\"max_tokens\":2}"), "{\"prompt\":\"hi\",\"max_tokens\":2}");
        int fd = raw_connect(s.port);
        for (int i = 0; i < n; i++) raw_send(fd, req + i, 1);
        char buf[4096];
        size_t got = raw_read(fd, buf, sizeof buf - 1);
        buf[got] = 0;
        close(fd);
        SCHECK(s, strstr(buf, " 200 "), "byte-at-a-time request: '%.200s'", buf);
        /* a 60 kB header, and a body over --max-body */
        n = snprintf(req, sizeof req, "GET /health HTTP/1.1\r\nX-Big: %.60000s\r\n\r\n", big);
        fd = raw_connect(s.port);
        raw_send(fd, req, (size_t)n);
        raw_read(fd, buf, 64);
        close(fd);
        n = snprintf(req, sizeof req, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10000\r\n%.65536s\r\n10000\r\n", big);
        fd = raw_connect(s.port);
        raw_send(fd, req, (size_t)n);
        raw_send(fd, big, 65536);
        close(fd);
        /* streams dropped after their first bytes */
        for (int i = 0; i < 3; i++) {
            n = snprintf(req, sizeof req, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s",
                         (int)strlen(RAW_CHAT), RAW_CHAT);
            fd = raw_connect(s.port);
            raw_send(fd, req, (size_t)n);
            raw_read(fd, buf, 300);
            close(fd);
        }
        /* many at once, each half sent */
        int fds[32];
        for (int i = 0; i < 32; i++) {
            fds[i] = raw_connect(s.port);
            if (fds[i] >= 0) raw_send(fds[i], "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 500\r\n\r\n{\"mess", 66);
        }
        for (int i = 0; i < 32; i++)
            if (fds[i] >= 0) close(fds[i]);
    }
    settle(&s, fd0, &busy, &queued, &fds_now, &conns);
    long rss1 = rss_kb(s.pid);
    printf("    raw sockets: long-lived fds %d -> %d, connections %d, RSS %ld -> %ld kB, health busy %d queued %d\n", fd0,
           fds_now, conns, rss0, rss1, busy, queued);
    SCHECK(s, busy == 0 && queued == 0, "health after: busy %d queued %d", busy, queued);
    SCHECK(s, conns == 0, "%d connections still open", conns);
    if (fds_now > fd0) count_fds(s.pid, &fds_now, &conns, true);
    SCHECK(s, fds_now <= fd0, "long-lived descriptors %d, %d after the warm-up (both listed above)", fds_now, fd0);
    SCHECK(s, rss0 > 0 && rss1 - rss0 < 16 * 1024, "RSS grew from %ld to %ld kB", rss0, rss1);
    CHECK(server_stop(&s) == 0);
}

/* Structured output through the official SDK: response_format json_object and json_schema, plain
 * and streamed, on a server with a draft (speculative): every answer ends with its document
 * ("stop"), parses, and validates against its schema, and the streamed answer is the plain one
 * (greedy); a keyword outside the subset is a 400 whose error names it, before anything runs. */
TEST(serve_response_format_through_the_sdk) {
    NEED_SDK();
#define SF_SCHEMA "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"version\":{\"type\":\"string\"}," \
                  "\"priority\":{\"enum\":[\"required\",\"optional\"]},\"installed_size_kb\":{\"type\":\"integer\"}}," \
                  "\"required\":[\"name\",\"version\"],\"additionalProperties\":false}"
#define SF_CHAT(rf, stream) "{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"user\",\"content\":" \
                            "\"Convert this description into JSON with the keys name, version.\\n\\nVersion 1.6-2 of jq is available.\"}],\"max_tokens\":200,\"temperature\":0," \
                            "\"response_format\":" rf ",\"stream\":" stream "}}"
#define SF_OBJECT "{\"type\":\"json_object\"}"
#define SF_SCHEMA_RF "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"person\",\"schema\":" SF_SCHEMA "}}"
    const char *in = tmp("rf-in.json"), *out = tmp("rf-out.json");
    CHECK(write_file(in, "[" SF_CHAT(SF_OBJECT, "false") "," SF_CHAT(SF_OBJECT, "true") "," SF_CHAT(SF_SCHEMA_RF, "false") ","
                         SF_CHAT(SF_SCHEMA_RF, "true") ","
                         SF_CHAT("{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"n\",\"schema\":{\"type\":\"object\","
                                 "\"properties\":{\"n\":{\"type\":\"integer\",\"not\":{\"const\":0}}}}}}", "false") "]"));
    server s;
    START(s, "-m " TARGET " -d " DRAFT " -t 1");
    char err[PF_ERR_LEN];
    pf_json_doc *d = client_json(&s, out, err, "sdk %s %s 1", in, out);
    SCHECK(s, d, "%s", err);
    for (int i = 0; i < 4; i++) {
        const char *text = str(item(d, (size_t)i), "text"), *fr = str(item(d, (size_t)i), "finish_reason");
        SCHECK(s, is_true(item(d, (size_t)i), "ok") && text, "request %d failed: %s", i, str(item(d, (size_t)i), "message"));
        SCHECK(s, fr && !strcmp(fr, "stop"), "request %d: finish_reason %s (the document did not end)", i, fr ? fr : "-");
        if (i < 2) {
            pf_json_doc *j = pf_json_parse(text, strlen(text), err);
            SCHECK(s, j && pf_json_root(j)->type == PF_JSON_OBJECT, "json_object %d: '%s' is not an object", i, text);
            pf_json_free(j);
        } else {
            SCHECK(s, pf_schema_valid_text(SF_SCHEMA, text, strlen(text)), "json_schema %d: '%s' does not validate", i, text);
        }
    }
    SCHECK(s, !strcmp(str(item(d, 0), "text"), str(item(d, 1), "text")) &&
                  !strcmp(str(item(d, 2), "text"), str(item(d, 3), "text")),
           "streamed answers differ from the plain ones");
    const pf_json *e = pf_json_get(item(d, 4), "error");
    const char *msg = str(e, "message"), *param = str(e, "param");
    SCHECK(s, !is_true(item(d, 4), "ok") && num(item(d, 4), "status") == 400, "unsupported keyword: status %g",
           num(item(d, 4), "status"));
    SCHECK(s, msg && strstr(msg, "'not'") && param && !strcmp(param, "response_format"), "error: %s (param %s)",
           msg ? msg : "-", param ? param : "-");
    CHECK(server_stop(&s) == 0);
    /* the same requests at once as rows of one batch (speculating under their masks): the same answers */
    const char *bin = tmp("rf-batch-in.json"), *bout = tmp("rf-batch-out.json");
    CHECK(write_file(bin, "[" SF_CHAT(SF_OBJECT, "false") "," SF_CHAT(SF_OBJECT, "true") "," SF_CHAT(SF_SCHEMA_RF, "false")
                          "," SF_CHAT(SF_SCHEMA_RF, "true") ","
                          "{\"endpoint\":\"chat\",\"body\":{\"model\":\"pf\",\"messages\":[{\"role\":\"user\","
                          "\"content\":\"hi\"}],\"max_tokens\":2,\"response_format\":{\"type\":\"json_schema\","
                          "\"json_schema\":{\"name\":\"d\",\"schema\":{\"type\":\"object\",\"properties\":"
                          "{\"description\":{\"type\":\"string\",\"minLength\":20}},\"required\":[\"description\"]}}}}}]"));
    START(s, "-m " TARGET " -d " DRAFT " --parallel 4 -t 1");
    pf_json_doc *b = client_json(&s, bout, err, "sdk %s %s 4", bin, bout);
    SCHECK(s, b, "%s", err);
    for (int i = 0; i < 4; i++) {
        const char *got = str(item(b, (size_t)i), "text"), *want = str(item(d, (size_t)i), "text");
        SCHECK(s, got && !strcmp(got, want), "batched request %d: '%s', alone '%s'", i, got ? got : "(error)", want);
        SCHECK(s, num(pf_json_get(item(b, (size_t)i), "pocketflash"), "session") == 4, "request %d not in the batch", i);
    }
    /* a budget that cannot hold the schema's shortest document: the batch's refusal names max_tokens */
    const char *bparam = str(pf_json_get(item(b, 4), "error"), "param");
    SCHECK(s, num(item(b, 4), "status") == 400 && bparam && !strcmp(bparam, "max_tokens"), "budget: status %g, param %s",
           num(item(b, 4), "status"), bparam ? bparam : "-");
    pf_json_free(b);
    pf_json_free(d);
    CHECK(server_stop(&s) == 0);
#undef SF_SCHEMA
#undef SF_CHAT
#undef SF_OBJECT
#undef SF_SCHEMA_RF
}

/* ---- each failure kind as its HTTP status (docs/server.md#errors; the library's side is
 * tests/api/test_status_api.c, run's tests/test_status.c) ---- */

/* POST body to path on a fresh connection (Connection: close) into resp; the response's status. */
static int raw_post(int port, const char *path, const char *body, char *resp, size_t n) {
    int fd = raw_connect(port);
    if (fd < 0) return -1;
    char head[256];
    int k = snprintf(head, sizeof head,
                     "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n", path, strlen(body));
    raw_send(fd, head, (size_t)k);
    raw_send(fd, body, strlen(body));
    size_t got = raw_read(fd, resp, n - 1);
    resp[got] = 0;
    close(fd);
    return !strncmp(resp, "HTTP/1.1 ", 9) ? atoi(resp + 9) : -1;
}

/* An OpenAI error object with this code (NULL: any) whose message holds msg. */
static bool error_object(const char *resp, const char *code, const char *msg) {
    const char *body = strstr(resp, "\r\n\r\n");
    char want[80] = "";
    if (code) snprintf(want, sizeof want, "\"code\":\"%s\"", code);
    return body && strstr(body, "{\"error\":{\"message\":") && strstr(body, "\"type\":") && (!code || strstr(body, want)) &&
           strstr(body, msg);
}

typedef struct {
    int port;
    char resp[8192];
    int status;
} pending;

static void *post_long(void *arg) {
    pending *p = arg;
    p->status = raw_post(p->port, "/v1/completions",
                         "{\"prompt\":\"Once upon a time\",\"max_tokens\":100000,\"ignore_eos\":true}", p->resp,
                         sizeof p->resp);
    return NULL;
}

TEST(status_server_kinds) {
    server s;
    CHECK(server_start(&s, "-m " TARGET " -d " DRAFT " -t 1"));
    static char resp[8192], body[48000];
    /* a bad argument: 400 naming the field */
    int st = raw_post(s.port, "/v1/completions", "{\"prompt\":\"hi\",\"max_tokens\":2,\"spec\":\"dflash\",\"block\":99}",
                      resp, sizeof resp);
    SCHECK(s, st == 400 && error_object(resp, NULL, "99 is outside 2..64") && strstr(resp, "\"param\":\"block\""),
           "bad block: %d %.400s", st, resp);
    /* a prompt over the context: 400, context_length_exceeded */
    int k = snprintf(body, sizeof body, "{\"max_tokens\":2,\"prompt\":\"");
    while (k + 10 < (int)sizeof body - 10) k += snprintf(body + k, sizeof body - (size_t)k, "apple ");
    snprintf(body + k, sizeof body - (size_t)k, "\"}");
    st = raw_post(s.port, "/v1/completions", body, resp, sizeof resp);
    SCHECK(s, st == 400 && error_object(resp, "context_length_exceeded", "does not fit the context"), "context: %d %.400s",
           st, resp);
    /* cancelled: the server stops while a generation runs; its client hears 503, code cancelled */
    pending p = {.port = s.port};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, post_long, &p) == 0);
    int busy = 0, queued = 0;
    for (int i = 0; i < 2400 && busy < 1; i++) { /* polled until the job runs (the bound ends a hang) */
        raw_health(s.port, &busy, &queued);
        if (busy < 1) usleep(50000);
    }
    kill(s.pid, SIGTERM);
    pthread_join(th, NULL);
    int exit_st = server_stop(&s);
    CHECKF(busy == 1 && p.status == 503 && error_object(p.resp, "cancelled", "request cancelled"),
           "running request on stop: busy %d, %d %.400s", busy, p.status, p.resp);
    CHECK(exit_st == 0);
}

/* ---- tool calls (docs/server.md#tool-calls) ---- */

/* The parameters (compact JSON, malloc'd) of the tool named name in request r's tools; NULL when
 * none ("{}" for a tool without parameters: no arguments). */
static char *tool_params(const pf_json *r, const char *name, const char *src, size_t src_len) {
    const pf_json *tools = pf_json_get(pf_json_get(r, "body"), "tools");
    for (size_t i = 0; tools && tools->type == PF_JSON_ARRAY && i < tools->u.arr.n; i++) {
        const pf_json *fn = pf_json_get(&tools->u.arr.items[i], "function");
        if (!pf_json_str_eq(pf_json_get(fn, "name"), name)) continue;
        const pf_json *p = pf_json_get(fn, "parameters");
        if (!p) return strdup("{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}");
        pf_sbuf b = {0};
        pf_json_compact(&b, p, src, src_len);
        return b.p;
    }
    return NULL;
}

/* Result i is one call of a tool of request i (of `only`, when given) whose arguments validate
 * against its parameters (eval/schema_valid.h; and python3-jsonschema through `check`, a file of
 * [schema, instance] pairs); why says what is wrong. */
static bool one_call(const pf_json *res, const pf_json *req, const char *src, size_t src_len, const char *only,
                     FILE *check, char *why) {
    const pf_json *calls = pf_json_get(res, "tool_calls");
    if (!is_true(res, "ok")) return snprintf(why, 300, "failed: %s", str(res, "message")), false;
    if (!calls || calls->type != PF_JSON_ARRAY || calls->u.arr.n != 1)
        return snprintf(why, 300, "not one call (finish_reason %s, text '%.200s')", str(res, "finish_reason"),
                        str(res, "text") ? str(res, "text") : "null"), false;
    const pf_json *c = &calls->u.arr.items[0], *fn = pf_json_get(c, "function");
    const char *id = str(c, "id"), *name = str(fn, "name"), *args = str(fn, "arguments");
    const char *fr = str(res, "finish_reason");
    if (!fr || strcmp(fr, "tool_calls")) return snprintf(why, 300, "finish_reason %s", fr ? fr : "-"), false;
    if (!id || strncmp(id, "call_", 5) || !pf_json_str_eq(pf_json_get(c, "type"), "function") || !name || !args)
        return snprintf(why, 300, "call without id, type, name or arguments"), false;
    if (only && strcmp(name, only)) return snprintf(why, 300, "called %s, not %s", name, only), false;
    char *params = tool_params(req, name, src, src_len);
    if (!params) return snprintf(why, 300, "called %s, which is not a listed tool", name), false;
    bool ok = pf_schema_valid_text(params, args, strlen(args));
    if (!ok) snprintf(why, 300, "%s arguments '%.120s' do not validate", name, args);
    if (ok && check) fprintf(check, "%s[%s, %s]", ftell(check) > 1 ? "," : "", params, args);
    free(params);
    return ok;
}

/* The call of result i as "name arguments" for comparisons. */
static void call_text(const pf_json *res, char *out, size_t n) {
    const pf_json *calls = pf_json_get(res, "tool_calls");
    const pf_json *fn = calls && calls->type == PF_JSON_ARRAY && calls->u.arr.n ? pf_json_get(&calls->u.arr.items[0], "function") : NULL;
    snprintf(out, n, "%s %s", str(fn, "name") ? str(fn, "name") : "-", str(fn, "arguments") ? str(fn, "arguments") : "-");
}

/* Tool calls through the official SDK on a server with a draft (tests/serve/tool_requests.json):
 * under tool_choice "required" and a named function every reply, plain and streamed, is one call
 * of a listed tool (the named one) whose arguments validate against its parameters (the project's
 * validator and python3-jsonschema), with finish_reason "tool_calls"; the streamed call (id and
 * name first, then argument pieces) equals the plain one, and the speculative one equals plain
 * decoding's (greedy); a history with a call and its result continues (auto, and required); auto
 * replies are either text or well-formed calls; bad tools and tool_choice values are 400s naming
 * the field. */
TEST(serve_tool_calls_through_the_sdk) {
    NEED_SDK();
    const char *in = "tests/serve/tool_requests.json", *out = tmp("tools-out.json"), *pairs = tmp("tools-check.json");
    char err[PF_ERR_LEN];
    size_t src_len = 0;
    char *src = test_slurp(in, &src_len);
    pf_json_doc *reqs = src ? pf_json_parse(src, src_len, err) : NULL;
    CHECKF(reqs, "%s does not read", in);
    server s;
    START(s, "-m " TARGET " -d " DRAFT " -t 1");
    pf_json_doc *d = client_json(&s, out, err, "sdk %s %s 1", in, out);
    SCHECK(s, d, "%s", err);
    FILE *check = fopen(pairs, "w");
    SCHECK(s, check, "cannot write %s", pairs);
    fputs("[", check);
    char why[300];
    static const struct { int i; const char *only; } calls[] = {{0, NULL}, {1, NULL}, {2, "search"}, {3, "search"},
                                                                {4, NULL}, {5, "search"}, {7, NULL}};
    for (size_t k = 0; k < sizeof calls / sizeof calls[0]; k++) {
        int i = calls[k].i;
        bool ok = one_call(item(d, (size_t)i), item(reqs, (size_t)i), src, src_len, calls[k].only, check, why);
        if (!ok) fclose(check);
        SCHECK(s, ok, "request %d: %s", i, why);
    }
    fputs("]", check);
    fclose(check);
    SCHECK(s, !pf_json_get(item(d, 0), "text") || pf_json_get(item(d, 0), "text")->type == PF_JSON_NULL,
           "a reply that is only a call has content %s", str(item(d, 0), "text"));
    for (int i = 1; i <= 7; i += 2)
        if (i != 5) SCHECK(s, is_true(item(d, (size_t)i), "calls_in_order"), "request %d: streamed call deltas out of order", i);
    static const int same[][2] = {{0, 1}, {2, 3}, {0, 4}, {2, 5}};
    for (size_t k = 0; k < sizeof same / sizeof same[0]; k++) {
        char a[600], b[600];
        call_text(item(d, (size_t)same[k][0]), a, sizeof a);
        call_text(item(d, (size_t)same[k][1]), b, sizeof b);
        SCHECK(s, !strcmp(a, b), "requests %d and %d differ: '%s' vs '%s'", same[k][0], same[k][1], a, b);
    }
    /* the history with a tool result, auto: an answer of either kind */
    for (int i = 6; i <= 9; i += i == 6 ? 2 : 1) {
        const pf_json *r = item(d, (size_t)i), *tc = pf_json_get(r, "tool_calls");
        const char *fr = str(r, "finish_reason");
        SCHECK(s, is_true(r, "ok") && fr, "request %d failed: %s", i, str(r, "message"));
        if (tc && tc->type == PF_JSON_ARRAY) {
            SCHECK(s, !strcmp(fr, "tool_calls"), "request %d: calls with finish_reason %s", i, fr);
            for (size_t k = 0; k < tc->u.arr.n; k++) {
                const char *args = str(pf_json_get(&tc->u.arr.items[k], "function"), "arguments");
                pf_json_doc *a = args ? pf_json_parse(args, strlen(args), err) : NULL;
                SCHECK(s, a && pf_json_root(a)->type == PF_JSON_OBJECT, "request %d: arguments '%s'", i, args ? args : "-");
                pf_json_free(a);
            }
        } else {
            SCHECK(s, str(r, "text") && (!strcmp(fr, "stop") || !strcmp(fr, "length")), "request %d: finish_reason %s", i, fr);
        }
    }
    static const struct { int i; const char *param, *needle; } bad[] = {
        {10, "tools", "tools[0].function.name is required"},
        {11, "tools", "tools[0].function.parameters must be"},
        {12, "tool_choice", "'missing'"},
        {13, "tools", "prefixItems"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        const pf_json *r = item(d, (size_t)bad[k].i), *e = pf_json_get(r, "error");
        const char *msg = str(e, "message"), *param = str(e, "param");
        SCHECK(s, !is_true(r, "ok") && num(r, "status") == 400 && msg && strstr(msg, bad[k].needle) && param &&
                      !strcmp(param, bad[k].param),
               "request %d: status %g, message %s, param %s", bad[k].i, num(r, "status"), msg ? msg : "-",
               param ? param : "-");
    }
    pf_json_free(d);
    CHECK(server_stop(&s) == 0);
    pf_json_free(reqs);
    free(src);
    /* an independent validator over the same calls */
    if (test_sh("python3 -c 'import jsonschema' >/dev/null 2>&1") != 0) {
        printf("    (python3-jsonschema not installed: the calls were checked by eval/schema_valid.c only)\n");
        return;
    }
    char cmd[800];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys,jsonschema\n"
             "for s, i in json.load(open(sys.argv[1])): jsonschema.validate(i, s)' %s", pairs);
    CHECKF(test_sh(cmd) == 0, "python3-jsonschema refused a call's arguments (%s)", pairs);
}
