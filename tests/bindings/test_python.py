"""The Python binding's checks, run by tests/test_bindings.c with the machine's python3:
    test_python.py MODE LIB TARGET DRAFT OUTFILE [ARGS]
text: generate (streamed, speculative and plain) and chat, written to OUTFILE for the C test to
compare with `pocketflash run`; errors: bad paths and bad arguments raise PocketFlashError with the
library's message (written to OUTFILE); sizes: the ctypes structures' sizes equal ARGS (the C
compiler's sizeof); freed: closed objects refuse calls, and sessions opened and closed in a loop do
not grow the process as the same sessions kept open do; plan: each line of ARGS[0] ("strategy block
profile task draft", '-' for none) resolved by Session.plan, its plan line or "error: MESSAGE"
written to OUTFILE, one per line (the C plan table test compares them with every other front end);
batch: Session.generate_batch gives each request generate's / chat's text and token count (plain,
structured, speculating, both), a speculating request its own rounds, and a callback's stop ends
only its request; load: Model's load parameters (scalar kernels, no packing,
no huge pages) give the default load's text, and a bad one raises. Exits 1 with one line on a
failed check."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bindings", "python"))
import pocketflash as pf  # noqa: E402

mode, lib, target, draft_path, out = sys.argv[1:6]
args = sys.argv[6:]
PROMPT = "The capital of France is"
CHAT = "A shop sells 12 apples for 3 dollars each. How much do they cost?"


def check(cond, what):
    if not cond:
        print("FAIL: " + what)
        sys.exit(1)


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


pf.load_library(lib)
if mode == "text":
    with pf.Model(target) as m, m.load_draft(draft_path) as d, m.session(threads=1) as s:
        pieces = []
        spec = s.generate(PROMPT, max_tokens=48, draft=d, on_text=pieces.append)
        check("".join(pieces) == spec and len(pieces) > 1, "streamed pieces %r do not make up %r" % (pieces, spec))
        check(s.stats.n_gen > 1 and s.stats.rounds > 0 and s.stats.tau >= 1.0 and 0 <= s.stats.acceptance <= 1,
              "speculative stats: %r" % s.stats)
        plain = s.generate(PROMPT, max_tokens=48, strategy="plain")
        check(s.stats.rounds == 0 and s.stats.spec == "plain", "plain decoding reported rounds: %r" % s.stats)
        check(plain == spec, "plain %r != speculative %r" % (plain, spec))
        fixed = s.generate(PROMPT, max_tokens=48, draft=d, strategy="dflash", block=3)
        check(s.stats.block == 3 and s.stats.spec == "dflash" and s.stats.drafter == "dflash2" and fixed == spec,
              "dflash block 3: %r, %r" % (fixed, s.stats))
        stopped = s.generate(PROMPT, max_tokens=48, draft=d, on_text=lambda piece: True)
        check(s.stats.stop == "callback" and spec.startswith(stopped), "stop from the callback: %r" % s.stats)
        reply = s.chat([{"role": "user", "content": CHAT}], max_tokens=48, draft=d)
    with open(out, "w", encoding="utf-8") as f:
        f.write(spec + "\n\x00" + reply + "\n")
elif mode == "errors":
    lines = []
    try:
        pf.Model("/nonexistent/model.gguf")
        check(False, "a bad model path did not raise")
    except pf.PocketFlashError as e:
        check(e.status == "io", "status %s" % e.status)
        lines.append(str(e))
    with pf.Model(target) as m:
        try:
            m.load_draft(target)  # a target is not a draft
            check(False, "a target loaded as a draft did not raise")
        except pf.PocketFlashError as e:
            check(e.status == "format", "a target as a draft: status %s" % e.status)
            lines.append(str(e))
        with m.session() as s:
            try:
                s.generate(PROMPT, strategy="dflash", block=1)
                check(False, "block 1 did not raise")
            except pf.PocketFlashError as e:
                check(e.status == "arg", "block 1: status %s" % e.status)
                lines.append(str(e))
            try:
                s.generate(PROMPT, strategy="bogus")
                check(False, "an unknown strategy did not raise")
            except pf.PocketFlashError:
                pass
            try:
                s.generate(PROMPT, on_text=lambda piece: 1 / 0)
                check(False, "the callback's exception was lost")
            except ZeroDivisionError:
                pass
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
elif mode == "tools":
    import json
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "The forecast for a city.",
              "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 24}},
                             "required": ["city"], "additionalProperties": False}}},
             {"type": "function", "function": {"name": "noop"}}]
    user = [{"role": "user", "content": "What is the weather in Paris?"}]
    with pf.Model(target) as m, m.load_draft(draft_path) as d, m.session(threads=1) as s:
        replies = []
        for choice in ("required", {"type": "function", "function": {"name": "get_weather"}}):
            spec = s.chat(user, max_tokens=96, draft=d, tools=tools, tool_choice=choice)
            plain = s.chat(user, max_tokens=96, strategy="plain", tools=tools, tool_choice=choice)
            check(spec == plain, "speculative %r != plain %r" % (spec, plain))
            content, calls = pf.parse_tool_calls(spec)
            check(content is None and len(calls) == 1, "not one call: %r" % spec)
            args = json.loads(calls[0]["arguments"])
            check(calls[0]["name"] in ("get_weather", "noop") and isinstance(args, dict), "call %r" % calls[0])
            if calls[0]["name"] == "get_weather":
                check(set(args) == {"city"} and isinstance(args["city"], str) and len(args["city"]) <= 24,
                      "arguments %r" % args)
            if isinstance(choice, dict):
                check(calls[0]["name"] == "get_weather", "named get_weather, called %r" % calls[0]["name"])
            replies.append(spec)
        # the call and its result as history: the conversation goes on
        history = user + [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function", "function": calls[0]}]},
            {"role": "tool", "tool_call_id": "call_0", "content": "sunny"}]
        after = s.chat(history, max_tokens=24, draft=d, tools=tools)
        check(isinstance(after, str), "no reply after the tool result")
        check(pf.parse_tool_calls("just text") == ("just text", []), "text without calls")
        try:
            s.chat(user, tools=tools, tool_choice={"type": "function", "function": {"name": "missing"}})
            check(False, "an unknown tool_choice name did not raise")
        except pf.PocketFlashError as e:
            check(e.status == "arg" and "missing" in str(e), "unknown name: %s %s" % (e.status, e))
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(replies) + "\n")
elif mode == "load":
    with pf.Model(target) as m, m.session(threads=1) as s:
        want = s.generate(PROMPT, max_tokens=8)
    with pf.Model(target, kernels="scalar", repack=False, hugepages=False) as m, m.session(threads=1) as s:
        got = s.generate(PROMPT, max_tokens=8)
    check(got == want, "scalar, unpacked %r != default %r" % (got, want))
    for kw in ({"kernels": "bogus"}, {"repack": "yes"}):
        try:
            pf.Model(target, **kw)
            check(False, "%r did not raise" % kw)
        except pf.PocketFlashError as e:
            check(e.status == "arg", "%r: status %s" % (kw, e.status))
elif mode == "sizes":
    for a in args:
        name, size = a.split("=")
        got = pf.ctypes.sizeof(pf.STRUCT_SIZES[name])
        check(got == int(size), "sizeof %s: ctypes %d, C %s" % (name, got, size))
elif mode == "freed":
    m = pf.Model(target)
    d = m.load_draft(draft_path)
    with m.session() as s:
        s.generate(PROMPT, max_tokens=4, draft=d)
    check(s.closed, "the session is open after its with block")
    try:
        s.generate(PROMPT)
        check(False, "a closed session generated")
    except pf.PocketFlashError as e:
        check("closed" in str(e), str(e))
    n = 24

    def cycle(keep):
        held = []
        for _ in range(n):
            t = m.session(ctx=1024)
            t.generate(PROMPT, max_tokens=4, draft=d)
            if keep:
                held.append(t)
            else:
                t.close()
        return held

    cycle(False)
    base = rss_kb()
    cycle(False)
    freed = rss_kb() - base
    held = cycle(True)
    kept = rss_kb() - base - freed
    check(kept > 4 * max(freed, 1024), "kept sessions grew %d kB, closed ones %d kB: no difference to test" % (kept, freed))
    check(freed < kept / 4, "closed sessions grew the process by %d kB (open ones %d kB)" % (freed, kept))
    m.close()  # closes the held sessions and the draft first
    check(all(t.closed for t in held) and d.closed and m.closed, "Model.close left its children open")
    print("freed: closed %d kB, kept open %d kB for %d sessions" % (freed, kept, n))
elif mode == "batch":
    qs = [{"prompt": PROMPT, "max_tokens": 24},
          {"messages": [{"role": "user", "content": CHAT}], "max_tokens": 32},
          {"prompt": CHAT, "chat": True, "max_tokens": 20, "temp": 0.8, "seed": 5},
          {"prompt": "Once upon a time", "max_tokens": 28}]
    with pf.Model(target) as m, m.session(threads=1) as s:
        want, want_n = [], []
        for q in qs:
            opts = {k: v for k, v in q.items() if k not in ("prompt", "messages")}
            want.append(s.chat(q["messages"], **opts) if "messages" in q else s.generate(q["prompt"], **opts))
            want_n.append(s.stats.n_gen)
            s.reset()
        got = s.generate_batch(qs, slots=3)
        check(got == want, "batch %r != solo %r" % (got, want))
        check([st.n_gen for st in s.batch_stats] == want_n, "batch n_gen %r != %r" % (s.batch_stats, want_n))
        seen = []
        got = s.generate_batch(qs[:2], slots=2, on_text=lambda i, piece: seen.append(i) or i == 0)
        check(got[1] == want[1] and want[0].startswith(got[0]) and s.batch_stats[0].stop == "callback",
              "on_text's stop: %r, %r" % (got, s.batch_stats[0]))
        try:
            s.generate_batch([{"prompt": PROMPT, "bogus": 1}])
            check(False, "an unknown field did not raise")
        except pf.PocketFlashError as e:
            check("bogus" in str(e), str(e))
    total = {"type": "object", "properties": {"total": {"type": "integer"}}, "required": ["total"]}
    mixed = [{"prompt": CHAT, "chat": True, "max_tokens": 40, "json_schema": total},
             {"prompt": PROMPT, "max_tokens": 32, "draft": None, "stop_at_eot": False},
             {"messages": [{"role": "user", "content": CHAT}], "max_tokens": 40, "draft": None, "strategy": "dflash",
              "block": 3, "json_object": True}]
    with pf.Model(target) as m, m.load_draft(draft_path) as d, m.session(threads=1) as s:
        for q in mixed[1:]:
            q["draft"] = d
        want, want_st = [], []
        for q in mixed:
            opts = {k: v for k, v in q.items() if k not in ("prompt", "messages")}
            want.append(s.chat(q["messages"], **opts) if "messages" in q else s.generate(q["prompt"], **opts))
            want_st.append(s.stats)
            s.reset()
        got = s.generate_batch(mixed, slots=3)
        check(got == want, "structured and speculating batch %r != solo %r" % (got, want))
        got_st = s.batch_stats
        check([(a.n_gen, a.spec, a.block) for a in got_st] == [(a.n_gen, a.spec, a.block) for a in want_st],
              "batch stats %r != solo %r" % (got_st, want_st))
        check(got[0].startswith("{") and got[2].startswith("{") and got_st[1].rounds > 0 and got_st[2].rounds > 0,
              "structured %r, speculating %r" % (got, got_st))
    with open(out, "w", encoding="utf-8") as f:
        f.write("\x00".join(got) + "\n")
elif mode == "plan":
    lines = []
    with pf.Model(target) as m, m.load_draft(draft_path) as d, m.session(threads=1) as s:
        for row in open(args[0]).read().splitlines():
            strategy, block, profile, task, with_draft = [None if f == "-" else f for f in row.split(" ")]
            try:
                lines.append(s.plan(draft=d if with_draft else None, strategy=strategy, block=int(block),
                                    profile=profile, task=task))
            except pf.PocketFlashError as e:
                lines.append("error: " + str(e))
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
else:
    check(False, "unknown mode " + mode)
