"""pocketflash from Python: ctypes over the shared library (libpocketflash.so), nothing to compile.

    import pocketflash as pf
    with pf.Model("models/pf-target-f16.gguf") as model, \\
         model.load_draft("models/pf-draft-dflash2.gguf") as draft, \\
         model.session(threads=2) as s:
        text = s.generate("The capital of France is", max_tokens=48, draft=draft,
                          on_text=lambda piece: print(piece, end="", flush=True))
        print(s.stats.tau, s.stats.acceptance, s.stats.decode_tok_s)

The library is found, first match wins: the `lib` argument of Model, $POCKETFLASH_LIB, the
repository's own builds next to this file (build/libpocketflash.so from `make libpocketflash.so`,
then build-cmake/lib/libpocketflash.so), then the dynamic loader's search (an installed
libpocketflash.so.0 / libpocketflash.so, LD_LIBRARY_PATH). A library call that fails raises
PocketFlashError with the library's own message; Model, Draft and Session free what they hold on
close() or at the end of a `with` block (a model closes its drafts and sessions first).

The structures below mirror include/pocketflash.h field for field; the tests compare their sizes
with the C compiler's.
"""
import ctypes
import json
import os
import weakref

__all__ = ["PocketFlashError", "Model", "Draft", "Session", "Stats", "STRATEGIES", "load_library",
           "parse_tool_calls"]

PF_ERR_LEN = 256
STATUS = ["ok", "io", "format", "arg", "context", "utf8", "oom", "internal", "cancelled"]
# pf_spec_kind, by the names the CLI's --spec uses ("ar" is plain decoding's earlier name).
STRATEGIES = {"default": 0, "plain": 1, "ar": 1, "dflash": 2, "ngram": 3, "dec": 4, "adaptive": 5, "hybrid": 6}
STOP = ["eot", "length", "context", "callback"]


class PocketFlashError(RuntimeError):
    """A library call failed: .status is the pf_status name the library returned ("io", "format",
    "arg", "context", "utf8", "oom", "internal", "cancelled"), str() the library's message."""

    def __init__(self, message, status="arg"):
        super().__init__(message)
        self.status = status


class _LoadParams(ctypes.Structure):
    _fields_ = [("kernels", ctypes.c_char_p), ("repack", ctypes.c_int), ("hugepages", ctypes.c_int)]


class _SessionParams(ctypes.Structure):
    _fields_ = [("n_threads", ctypes.c_int), ("n_ctx", ctypes.c_int64), ("kv_q8", ctypes.c_int)]


class _GenParams(ctypes.Structure):
    _fields_ = [
        ("max_tokens", ctypes.c_int), ("temp", ctypes.c_float), ("top_k", ctypes.c_int),
        ("top_p", ctypes.c_float), ("seed", ctypes.c_uint64), ("chat", ctypes.c_bool),
        ("system", ctypes.c_char_p), ("stop_at_eot", ctypes.c_bool), ("draft", ctypes.c_void_p),
        ("spec", ctypes.c_int), ("block", ctypes.c_int), ("ngram_n", ctypes.c_int),
        ("draft_head", ctypes.c_int), ("profile", ctypes.c_char_p), ("task", ctypes.c_char_p),
        ("prompt_cache", ctypes.c_char_p), ("no_special", ctypes.c_bool),
        ("json_schema", ctypes.c_char_p), ("json_object", ctypes.c_bool),
        ("on_token_source", ctypes.c_void_p), ("token_source_user", ctypes.c_void_p),
        ("tools", ctypes.c_char_p), ("tool_choice", ctypes.c_int), ("tool_name", ctypes.c_char_p),
    ]


class _GenStats(ctypes.Structure):
    _fields_ = [
        ("n_prompt", ctypes.c_int), ("n_gen", ctypes.c_int), ("n_reused", ctypes.c_int),
        ("n_cached", ctypes.c_int), ("prefill_s", ctypes.c_double), ("ttft_s", ctypes.c_double),
        ("decode_s", ctypes.c_double), ("stop", ctypes.c_int), ("drafter", ctypes.c_char_p),
        ("spec", ctypes.c_char_p), ("block", ctypes.c_int), ("rounds", ctypes.c_int64), ("round_tokens", ctypes.c_int64),
        ("drafted", ctypes.c_int64), ("accepted", ctypes.c_int64), ("tau", ctypes.c_double),
        ("acceptance", ctypes.c_double), ("draft_s", ctypes.c_double), ("context_s", ctypes.c_double),
        ("verify_s", ctypes.c_double), ("accept_s", ctypes.c_double), ("other_s", ctypes.c_double),
        ("prompt_context_s", ctypes.c_double),
    ]


class _Message(ctypes.Structure):
    _fields_ = [("role", ctypes.c_char_p), ("content", ctypes.c_char_p)]


class _ToolCall(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("arguments", ctypes.c_char_p)]


_TEXT_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_char), ctypes.c_size_t)


class _BatchRequest(ctypes.Structure):
    _fields_ = [
        ("prompt", ctypes.c_void_p), ("len", ctypes.c_size_t), ("messages", ctypes.POINTER(_Message)),
        ("n_messages", ctypes.c_int), ("params", _GenParams), ("on_text", _TEXT_CB), ("user", ctypes.c_void_p),
    ]


_NEXT_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_BatchRequest), ctypes.c_bool)
_DONE_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(_BatchRequest), ctypes.c_int,
                            ctypes.POINTER(_GenStats), ctypes.c_char_p)


class _BatchFeed(ctypes.Structure):
    _fields_ = [("next", _NEXT_CB), ("done", _DONE_CB), ("feed", ctypes.c_void_p)]


STRUCT_SIZES = {"pf_load_params": _LoadParams, "pf_session_params": _SessionParams, "pf_gen_params": _GenParams,
                "pf_gen_stats": _GenStats, "pf_message": _Message, "pf_tool_call": _ToolCall,
                "pf_batch_request": _BatchRequest, "pf_batch_feed": _BatchFeed}
_lib = None


def _candidates():
    env = os.environ.get("POCKETFLASH_LIB")
    if env:
        return [env]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    here = [os.path.join(root, "build", "libpocketflash.so"),
            os.path.join(root, "build-cmake", "lib", "libpocketflash.so")]
    return [p for p in here if os.path.exists(p)] + ["libpocketflash.so.0", "libpocketflash.so"]


def load_library(path=None):
    """The ctypes library (loaded once; `path` names the file for the first load)."""
    global _lib
    if _lib is not None:
        return _lib
    errors = []
    for cand in [path] if path else _candidates():
        try:
            lib = ctypes.CDLL(cand)
            break
        except OSError as e:
            errors.append(str(e))
    else:
        raise PocketFlashError("libpocketflash not found (set POCKETFLASH_LIB or run `make libpocketflash.so`): "
                               + "; ".join(errors), "io")
    P, E = ctypes.c_void_p, ctypes.c_char_p
    sigs = {
        "pf_version": (E, []),
        "pf_load_model": (ctypes.c_int, [E, ctypes.POINTER(P), E]), "pf_free_model": (None, [P]),
        "pf_load_model_with": (ctypes.c_int, [E, ctypes.POINTER(_LoadParams), ctypes.POINTER(P), E]),
        "pf_session_new": (ctypes.c_int, [P, ctypes.POINTER(_SessionParams), ctypes.POINTER(P), E]),
        "pf_session_free": (None, [P]), "pf_session_reset": (None, [P]),
        "pf_load_draft": (ctypes.c_int, [P, E, ctypes.POINTER(P), E]), "pf_free_draft": (None, [P]),
        "pf_draft_block_size": (ctypes.c_int, [P]), "pf_draft_has_dec": (ctypes.c_bool, [P]),
        "pf_gen_params_default": (None, [ctypes.POINTER(_GenParams)]),
        "pf_gen_plan": (ctypes.c_int, [ctypes.POINTER(_GenParams), E, ctypes.c_size_t, E]),
        "pf_generate": (ctypes.c_int, [P, E, ctypes.c_size_t, ctypes.POINTER(_GenParams), _TEXT_CB, P,
                                       ctypes.POINTER(_GenStats), E]),
        "pf_generate_chat": (ctypes.c_int, [P, ctypes.POINTER(_Message), ctypes.c_int, ctypes.POINTER(_GenParams),
                                            _TEXT_CB, P, ctypes.POINTER(_GenStats), E]),
        "pf_parse_tool_calls": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t,
                                               ctypes.POINTER(ctypes.POINTER(_ToolCall)), ctypes.POINTER(ctypes.c_int),
                                               ctypes.POINTER(ctypes.c_size_t), E]),
        "pf_free_tool_calls": (None, [ctypes.POINTER(_ToolCall), ctypes.c_int]),
        "pf_generate_batch": (ctypes.c_int, [P, ctypes.c_int, ctypes.POINTER(_BatchFeed), E]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    _lib = lib
    return lib


def _errbuf():
    return ctypes.create_string_buffer(PF_ERR_LEN)


def _raise(err, status):
    name = STATUS[status] if 0 <= status < len(STATUS) else "internal"
    raise PocketFlashError(err.value.decode("utf-8", "replace") or name, name)


def _made(status, h, err):
    """A constructor's handle, or PocketFlashError with its status."""
    if status != 0 or not h.value:
        _raise(err, status)
    return h.value


class Stats:
    """pf_gen_stats of one call, with decode tokens per second as `pocketflash run` prints it."""

    def __init__(self, st):
        for name, _ in _GenStats._fields_:
            setattr(self, name, getattr(st, name))
        self.drafter = st.drafter.decode() if st.drafter else "plain"   # the drafter
        self.spec = st.spec.decode() if st.spec else "plain"            # the strategy that ran
        self.stop = STOP[st.stop] if 0 <= st.stop < len(STOP) else str(st.stop)
        # (n_gen - 1) / decode_s: decode_s runs from the first generated token to the last
        self.decode_tok_s = (st.n_gen - 1) / st.decode_s if st.decode_s > 0 and st.n_gen > 1 else 0.0

    def __repr__(self):
        return ("Stats(n_prompt=%d, n_gen=%d, spec=%s, drafter=%s, block=%d, tau=%.2f, acceptance=%.2f, decode_tok_s=%.1f)"
                % (self.n_prompt, self.n_gen, self.spec, self.drafter, self.block, self.tau, self.acceptance, self.decode_tok_s))


class _Handle:
    """A library object freed once, by close(), the end of a `with` block or garbage collection."""
    _free = None

    def __init__(self, h):
        self._h = h
        self._finalizer = weakref.finalize(self, getattr(load_library(), self._free), h)

    @property
    def closed(self):
        return self._h is None

    def _handle(self):
        if self._h is None:
            raise PocketFlashError("%s is closed" % type(self).__name__.lower(), "arg")
        return self._h

    def close(self):
        if self._h is not None:
            self._h = None
            self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Model(_Handle):
    """A target model (GGUF or .pfb bundle), read-only and shared by its sessions and drafts.
    kernels, repack and hugepages are pf_load_params': the most capable kernel level to use
    ("scalar", "avx2", ...; None: PF_KERNELS, else the CPU's best), packed copies of the quantized
    matrices and huge pages for them (True / False; None: on unless PF_REPACK=0 / PF_HUGEPAGES=0)."""
    _free = "pf_free_model"

    def __init__(self, path, lib=None, kernels=None, repack=None, hugepages=None):
        L = load_library(lib)
        err = _errbuf()
        h = ctypes.c_void_p()
        toggle = {None: 0, True: 1, False: -1}
        if repack not in toggle or hugepages not in toggle:
            raise PocketFlashError("repack and hugepages take True, False or None", "arg")
        lp = _LoadParams(os.fsencode(kernels) if kernels is not None else None, toggle[repack], toggle[hugepages])
        status = L.pf_load_model_with(os.fsencode(path), ctypes.byref(lp), ctypes.byref(h), err)
        super().__init__(_made(status, h, err))
        self._children = weakref.WeakSet()

    def load_draft(self, path=None):
        """A DFlash / DFlash2 draft for this model (None: the draft inside its .pfb bundle)."""
        return Draft(self, path)

    def session(self, threads=1, ctx=0, kv_q8=False):
        return Session(self, threads, ctx, kv_q8)

    def close(self):
        # sessions before drafts: a session may still point at a draft's context
        for kind in (Session, Draft):
            for c in [c for c in self._children if isinstance(c, kind)]:
                c.close()
        super().close()


class Draft(_Handle):
    _free = "pf_free_draft"

    def __init__(self, model, path=None):
        L, err = load_library(), _errbuf()
        h = ctypes.c_void_p()
        path_b = os.fsencode(path) if path is not None else None
        status = L.pf_load_draft(model._handle(), path_b, ctypes.byref(h), err)
        super().__init__(_made(status, h, err))
        self.model = model  # the model outlives its draft
        model._children.add(self)
        self.block_size = L.pf_draft_block_size(h.value)
        self.has_dec = bool(L.pf_draft_has_dec(h.value))


class Session(_Handle):
    """One conversation's KV cache and worker threads; one thread at a time."""
    _free = "pf_session_free"

    def __init__(self, model, threads=1, ctx=0, kv_q8=False):
        L, err = load_library(), _errbuf()
        p = _SessionParams(n_threads=threads, n_ctx=ctx, kv_q8=1 if kv_q8 else 0)
        h = ctypes.c_void_p()
        status = L.pf_session_new(model._handle(), ctypes.byref(p), ctypes.byref(h), err)
        super().__init__(_made(status, h, err))
        self.model = model
        model._children.add(self)
        self.stats = None
        self._drafts = []  # the drafts its calls used, kept alive as long as it is

    def reset(self):
        load_library().pf_session_reset(self._handle())

    def _params(self, draft, strategy, block, max_tokens, temp, top_k, top_p, seed, stop_at_eot, chat=False,
                system=None, profile=None, task=None, json_schema=None, json_object=False):
        if strategy not in STRATEGIES:
            raise PocketFlashError("unknown strategy %r (one of %s)" % (strategy, ", ".join(STRATEGIES)), "arg")
        p = _GenParams()
        load_library().pf_gen_params_default(ctypes.byref(p))
        p.max_tokens, p.temp, p.top_k, p.top_p, p.seed = max_tokens, temp, top_k, top_p, seed
        p.stop_at_eot, p.chat, p.json_object = stop_at_eot, chat, json_object
        if json_schema is not None and not isinstance(json_schema, str):
            json_schema = json.dumps(json_schema)  # a schema as Python objects (a dict, a boolean)
        keep = []  # bytes the params point at, alive until the call returns
        for field, value in (("system", system), ("profile", profile), ("task", task), ("json_schema", json_schema)):
            if value is not None:
                keep.append(value.encode())
                setattr(p, field, keep[-1])
        if draft is not None:
            p.draft = draft._handle()
            if draft not in self._drafts:
                self._drafts.append(draft)
        p.spec, p.block = STRATEGIES[strategy], block
        return p, keep

    def _run(self, call, on_text):
        pieces, raised = [], []

        def cb(_user, text, n):
            piece = ctypes.string_at(text, n).decode("utf-8")
            pieces.append(piece)
            if on_text is None:
                return 0
            try:
                return 1 if on_text(piece) else 0
            except BaseException as e:  # cancel the generation, raise after the call
                raised.append(e)
                return -1

        st, err = _GenStats(), _errbuf()
        status = call(_TEXT_CB(cb), ctypes.byref(st), err)
        if raised:
            raise raised[0]
        if status != 0:
            _raise(err, status)
        self.stats = Stats(st)
        return "".join(pieces)

    def generate(self, prompt, max_tokens=128, draft=None, strategy="default", block=0, temp=0.0, top_k=0,
                 top_p=1.0, seed=0, chat=False, system=None, stop_at_eot=True, profile=None, task=None,
                 on_text=None, json_schema=None, json_object=False):
        """The text generated after `prompt` (as `pocketflash run -p`); on_text(piece) gets each UTF-8
        piece as it is generated and stops the generation by returning True. With a draft the default
        strategy is the CLI's (dflash with a block, else dec with a Dec head, else adaptive); the text is plain decoding's.
        Structured output (docs/structured-output.md): json_schema (JSON Schema text, or a dict / bool)
        makes the text a JSON document valid against it, json_object=True any JSON object."""
        h = self._handle()
        data = prompt.encode("utf-8")
        p, keep = self._params(draft, strategy, block, max_tokens, temp, top_k, top_p, seed, stop_at_eot, chat,
                               system, profile, task, json_schema, json_object)
        L = load_library()
        return self._run(lambda cb, st, err: L.pf_generate(h, data, len(data), ctypes.byref(p), cb, None, st, err),
                         on_text)

    def plan(self, draft=None, strategy="default", block=0, profile=None, task=None):
        """What these strategy arguments resolve to, without generating: the library's one line
        ("dec block=16", "dflash block=3", ...), the line `pocketflash run --print-plan` prints."""
        p, keep = self._params(draft, strategy, block, 0, 0.0, 0, 1.0, 0, True, profile=profile, task=task)
        out, err = ctypes.create_string_buffer(160), _errbuf()
        status = load_library().pf_gen_plan(ctypes.byref(p), out, len(out), err)
        if status != 0:
            _raise(err, status)
        return out.value.decode()

    def chat(self, messages, max_tokens=128, draft=None, strategy="default", block=0, temp=0.0, top_k=0,
             top_p=1.0, seed=0, stop_at_eot=True, on_text=None, tools=None, tool_choice="auto", profile=None,
             task=None, json_schema=None, json_object=False):
        """The assistant's reply to messages [{"role": ..., "content": ...}, ...] (the model's chat
        template); append it and the next user message for the next turn.

        Tool calling, as OpenAI's API: tools is a list of {"type": "function", "function": {"name",
        "description", "parameters"}}; tool_choice "auto", "none", "required" or {"type":
        "function", "function": {"name": ...}} (the last two hold the reply to one call of a listed
        tool with valid arguments). Messages may have role "tool" (a result, as content) and an
        assistant message may carry "tool_calls" (content may then be None). The reply is the
        model's text; parse_tool_calls(reply) reads its calls. json_schema and json_object: as generate."""
        h = self._handle()
        arr, keep = _messages(messages)
        p, k = self._params(draft, strategy, block, max_tokens, temp, top_k, top_p, seed, stop_at_eot,
                            profile=profile, task=task, json_schema=json_schema, json_object=json_object)
        keep += k + _set_tools(p, tools, tool_choice)
        L = load_library()
        return self._run(lambda cb, st, err: L.pf_generate_chat(h, arr, len(messages), ctypes.byref(p), cb, None, st,
                                                                err), on_text)

    def generate_batch(self, requests, slots=4, on_text=None):
        """Decodes the requests together, at most `slots` at a time, one forward per step for all of
        them (`pocketflash serve --parallel`'s batch): a list of their texts, each exactly what
        generate / chat gives it alone (greedy, and sampled with the same seed). A request is a
        dict: "prompt" (as generate) or "messages" (as chat), and any of the keyword arguments of
        generate (with "messages", chat's: tools and tool_choice too) but on_text: max_tokens,
        sampling (temp, top_k, top_p, seed), chat, system, stop_at_eot, the strategy (draft,
        strategy, block, profile, task: a speculating request's drafts are verified in the same
        forward as the other requests' rows) and structured output (json_schema, json_object: each
        request held to its own document). on_text(i, piece) gets request i's pieces as they come
        and ends that request by returning True. self.batch_stats: each request's Stats (its own
        rounds, tau and acceptance when it speculated). A request that fails (a schema outside the
        supported subset, a strategy that needs a draft without one) raises PocketFlashError after
        all have run, naming the request."""
        h = self._handle()
        L = load_library()
        n = len(requests)
        reqs, keep = [], []
        for r in requests:
            extra = set(r) - _BATCH_KEYS - ({"tools", "tool_choice"} if "messages" in r else set())
            if extra or ("prompt" in r) == ("messages" in r):
                raise PocketFlashError("a batch request needs a prompt or messages (unknown: %s)"
                                       % ", ".join(sorted(extra)), "arg")
            p, k = self._params(r.get("draft"), r.get("strategy", "default"), r.get("block", 0),
                                r.get("max_tokens", 128), r.get("temp", 0.0), r.get("top_k", 0), r.get("top_p", 1.0),
                                r.get("seed", 0), r.get("stop_at_eot", True), r.get("chat", False), r.get("system"),
                                r.get("profile"), r.get("task"), r.get("json_schema"), r.get("json_object", False))
            keep.append(k)
            q = _BatchRequest(params=p)
            if "prompt" in r:
                data = ctypes.create_string_buffer(r["prompt"].encode("utf-8"))
                keep.append(data)
                q.prompt, q.len = ctypes.addressof(data), len(data) - 1
            else:
                arr, k = _messages(r["messages"])
                keep += [arr, k, _set_tools(q.params, r.get("tools"), r.get("tool_choice", "auto"))]
                q.messages, q.n_messages = arr, len(r["messages"])
            reqs.append(q)
        pieces = [[] for _ in range(n)]
        outcome = [None] * n
        raised = []
        taken = [0]

        def text_cb(user, text, length):
            i = user - 1
            piece = ctypes.string_at(text, length).decode("utf-8")
            pieces[i].append(piece)
            if on_text is None:
                return 0
            try:
                return 1 if on_text(i, piece) else 0
            except BaseException as e:  # cancel the request, raise after the call
                raised.append(e)
                return -1

        cb = _TEXT_CB(text_cb)

        def next_cb(_feed, out, _idle):
            if taken[0] == n:
                return 0
            i = taken[0]
            taken[0] += 1
            reqs[i].on_text, reqs[i].user = cb, i + 1
            out[0] = reqs[i]
            return 1

        def done_cb(_feed, r, status, st, err):
            i = r[0].user - 1
            outcome[i] = (status, Stats(st[0]), (err or b"").decode("utf-8", "replace"))

        feed = _BatchFeed(_NEXT_CB(next_cb), _DONE_CB(done_cb), None)
        err = _errbuf()
        status = L.pf_generate_batch(h, slots, ctypes.byref(feed), err)
        if raised:
            raise raised[0]
        if status != 0:
            _raise(err, status)
        self.batch_stats = [o[1] for o in outcome]
        for i, (st, _, msg) in enumerate(outcome):
            if st != 0:
                name = STATUS[st] if 0 <= st < len(STATUS) else "internal"
                raise PocketFlashError("request %d: %s" % (i, msg or name), name)
        return ["".join(p) for p in pieces]


# What a generate_batch request may hold besides "prompt" / "messages": generate's keyword arguments.
_BATCH_KEYS = {"prompt", "messages", "max_tokens", "temp", "top_k", "top_p", "seed", "chat", "system", "stop_at_eot",
               "draft", "strategy", "block", "profile", "task", "json_schema", "json_object"}


def _messages(messages):
    """pf_message array of chat messages, and the bytes it points at (kept alive by the caller)."""
    enc = [(m["role"].encode(), _message_text(m).encode("utf-8")) for m in messages]
    return (_Message * max(1, len(enc)))(*[_Message(r, c) for r, c in enc]), enc


def _set_tools(p, tools, tool_choice):
    """The tools fields of params p from an OpenAI tools list and tool_choice; the bytes they point at."""
    if tools is None:
        return []
    keep = [json.dumps(tools).encode()]
    p.tools = keep[-1]
    p.tool_choice, name = _tool_choice(tool_choice)
    if name is not None:
        keep.append(name.encode())
        p.tool_name = keep[-1]
    return keep


def _message_text(m):
    """A message's content; an assistant message's tool_calls written after it as Qwen3's chat
    template writes them (the library's pf_tool_call_put)."""
    text = m.get("content") or ""
    for call in m.get("tool_calls") or []:
        fn = call.get("function", call)
        args = fn.get("arguments", "{}")
        if not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        if text:
            text += "\n"
        text += '<tool_call>\n{"name": "%s", "arguments": %s}\n</tool_call>' % (fn["name"], args)
    return text


def _tool_choice(choice):
    """pf_tool_choice and the named function of an OpenAI tool_choice."""
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        if choice.get("type") != "function" or not isinstance(name, str):
            raise PocketFlashError("tool_choice must be 'auto', 'none', 'required' or "
                                   "{'type': 'function', 'function': {'name': ...}}", "arg")
        return 3, name
    modes = {"auto": 0, "none": 1, "required": 2}
    if choice not in modes:
        raise PocketFlashError("tool_choice %r is not 'auto', 'none', 'required' or a function" % (choice,), "arg")
    return modes[choice], None


def parse_tool_calls(text):
    """The tool calls of a chat reply (its <tool_call> blocks): (content, calls), content the text
    before the first call (None when empty) and calls [{"name": ..., "arguments": JSON text}]; a
    reply without calls, or whose blocks do not all parse, is (text, [])."""
    L = load_library()
    data = text.encode("utf-8")
    calls, n, content_len, err = ctypes.POINTER(_ToolCall)(), ctypes.c_int(), ctypes.c_size_t(), _errbuf()
    status = L.pf_parse_tool_calls(data, len(data), ctypes.byref(calls), ctypes.byref(n), ctypes.byref(content_len), err)
    if status != 0:
        _raise(err, status)
    out = [{"name": calls[i].name.decode("utf-8"), "arguments": calls[i].arguments.decode("utf-8")}
           for i in range(n.value)]
    L.pf_free_tool_calls(calls, n.value)
    if not out:
        return text, []
    content = data[:content_len.value].decode("utf-8", "replace")
    return (content or None), out


def version():
    return load_library().pf_version().decode()
