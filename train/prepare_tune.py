"""The tuning set of the pretrained target: task examples in ChatML, packed into 2,048-token windows
with the pretraining tokenizer.

  prepare_tune.py [FORM]   work/tune/DIR/{short,long}/{train_ids,train_w,train_type}.npy and val.json,
                           the math in tune_math.py's FORM: `place` into data/ (the tuning's first
                           phase), `column` into data_column/ (its second; tune_target.py's phases):
                           sequences of up to 512 tokens packed into 512-token windows, longer ones
                           into 2,048 (a 2,048-token window costs twice as much a token here, so only
                           the long inputs pay for it); val_form.json: 64 held-out math problems in
                           FORM (the eval's references keep its own wording)

What goes in (every source item of the eval sets stays out, as build_corpus.py and tune_long.py
choose them):
- the task corpus of build_corpus.py (work/corpus/), all types but math;
- math from tune_math.py (worked arithmetic in FORM), any question equal to an eval prompt dropped; both
  forms draw the same questions;
- long inputs from tune_long.py (man pages, handbook sections, package descriptions; 300-1,500 tokens);
- multi-turn chats: two or three of the examples above as consecutive turns of one conversation, so
  the model sees a history it must answer after (the loss on every assistant turn).
Loss weight 1 on response tokens and the closing <|im_end|>, 0.1 on the rest, 0 on padding.
"""
import json
import os
import random
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qwen_bpe import QwenBPE  # noqa: E402
import prepare_data as D  # noqa: E402
import tune_math  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TUNE = os.path.join(HERE, "work", "tune")
OUT = {"place": os.path.join(TUNE, "data"), "column": os.path.join(TUNE, "data_column")}
TOKENIZER = os.path.join(HERE, "work", "pre", "tokenizer.json")
CTX = 2048
SEED = 20261207
N_MATH = 40000
N_MULTI = 10000
N_MATH_VAL = 64
TYPES = D.TYPES + ["long"]


def examples(rng, form):
    ex = [e for e in D.load_examples() if e["type"] != "math"]
    eval_prompts = {e["prompt"] for e in D.load_eval()}
    seen = set()
    while len(seen) < N_MATH:
        lang = "zh" if rng.random() < 0.45 else "en"
        q, a = tune_math.problem(rng, lang, form)
        if q in seen or q in eval_prompts:
            continue
        seen.add(q)
        ex.append({"type": "math", "lang": lang, "prompt": q, "response": a})
    for line in open(os.path.join(TUNE, "long_train.jsonl"), encoding="utf-8"):
        e = json.loads(line)
        ex.append({"type": "long", "lang": e["lang"], "prompt": e["prompt"], "response": e["response"]})
    return ex, seen | eval_prompts


def held_out_math(form, taken, n=N_MATH_VAL):
    """n math problems in FORM whose questions are neither trained nor eval prompts: the loss on the
    form being learned (the eval's references keep the eval's own wording)."""
    rng, out = random.Random(SEED + 1), []
    while len(out) < n:
        lang = "zh" if rng.random() < 0.45 else "en"
        q, a = tune_math.problem(rng, lang, form)
        if q not in taken:
            taken.add(q)
            out.append({"type": "math_" + form, "prompt": q, "reference": a})
    return out


def encode_turns(tok, turns):
    """ids and weights of a conversation [(prompt, response), ...] in the training chat format."""
    ids, w = [], []
    for prompt, response in turns:
        for text, is_resp in D.chatml_parts(prompt, response):
            t = tok.encode(text)
            ids += t
            w += [1.0 if is_resp else D.PROMPT_WEIGHT] * len(t)
    return ids, w


def pack(seqs, ctx, pad, rs, folder):
    """seqs [(ids, w, type)] in a seeded order, packed whole into windows of ctx; the tail padded."""
    os.makedirs(folder, exist_ok=True)
    wins, cur = ([], [], []), ([], [], [])
    for j in rs.permutation(len(seqs)):
        ids, w, t = seqs[j]
        if len(cur[0]) + len(ids) > ctx:
            for dst, src, fill in zip(wins, cur, (pad, 0.0, -1)):
                dst.append(src + [fill] * (ctx - len(src)))
            cur = ([], [], [])
        cur[0].extend(ids)
        cur[1].extend(w)
        cur[2].extend([t] * len(ids))
    if cur[0]:
        for dst, src, fill in zip(wins, cur, (pad, 0.0, -1)):
            dst.append(src + [fill] * (ctx - len(src)))
    X = np.array(wins[0], dtype=np.int16)
    W = np.array(wins[1], dtype=np.float16)
    T = np.array(wins[2], dtype=np.int8)
    np.save(os.path.join(folder, "train_ids.npy"), X)
    np.save(os.path.join(folder, "train_w.npy"), W)
    np.save(os.path.join(folder, "train_type.npy"), T)
    per = {t: int((T == i).sum()) for i, t in enumerate(TYPES)}
    print(f"{os.path.basename(folder)}: {len(seqs)} sequences in {len(X)} windows of {ctx}; real tokens "
          f"{int((T >= 0).sum())} ({(T >= 0).mean():.1%} fill); response tokens {int((W == 1).sum())}; "
          f"by type {per}", flush=True)


def main():
    form = sys.argv[1] if len(sys.argv) > 1 else "place"
    if form not in OUT:
        sys.exit(f"prepare_tune.py: no math form {form!r} (place, column)")
    out = OUT[form]
    os.makedirs(out, exist_ok=True)
    rng = random.Random(SEED)
    tok = QwenBPE.load(TOKENIZER)
    pad = tok.token_to_id["<|endoftext|>"]
    ex, taken = examples(rng, form)
    seqs = []
    for e in ex:
        ids, w = encode_turns(tok, [(e["prompt"], e["response"])])
        if len(ids) <= CTX:
            seqs.append((ids, w, TYPES.index(e["type"])))
    short = [s for s in seqs if len(s[0]) <= 170]   # three of them still fit a 512-token window
    for _ in range(N_MULTI):
        parts = rng.sample(short, rng.choice([2, 2, 3]))
        ids = sum((p[0] for p in parts), [])
        w = sum((p[1] for p in parts), [])
        seqs.append((ids, w, TYPES.index("chat")))
    rs = np.random.RandomState(SEED)
    for name, ctx, part in (("short", 512, [q for q in seqs if len(q[0]) <= 512]),
                            ("long", CTX, [q for q in seqs if len(q[0]) > 512])):
        pack(part, ctx, pad, rs, os.path.join(out, name))
    val = []
    evals = D.load_eval() + [json.loads(x) for x in open(os.path.join(TUNE, "long_eval.jsonl"), encoding="utf-8")]
    for e in evals:
        ids, w = encode_turns(tok, [(e["prompt"], e["reference"])])
        val.append({"type": e["type"], "ids": ids[:CTX], "w": w[:CTX]})
    form_val = []
    for e in held_out_math(form, taken):
        ids, w = encode_turns(tok, [(e["prompt"], e["reference"])])
        form_val.append({"type": e["type"], "ids": ids, "w": w})
    json.dump(form_val, open(os.path.join(out, "val_form.json"), "w"))
    json.dump(val, open(os.path.join(out, "val.json"), "w"))


if __name__ == "__main__":
    main()
