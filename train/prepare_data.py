"""Prune Qwen3's vocabulary to the corpus and tokenize the corpus.

1. Encode the whole corpus (training examples, eval prompts/references, chat-template text) with
   the FULL Qwen3 vocabulary and count token uses.
2. Keep the N most used normal tokens plus all 256 byte tokens, closed under merge parents (every
   kept token's producing merge has both parents kept), choosing N so that the normal-token count is
   VOCAB - 26; the 26 Qwen3 added tokens go at the END in their original order.
   A merge is kept iff both parents and its result are kept; ranks keep the original order.
3. Re-encode with the pruned tokenizer, build ChatML sequences with per-token loss weights and
   pack them into fixed windows (each window starts at an example boundary; tail padded with
   <|endoftext|>, weight 0).
Outputs under work/data/ and the pruned tokenizer at models/pf-tokenizer.json.
"""
import json
import os
import sys
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qwen_bpe import QwenBPE, BYTE_ENCODER  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.join(HERE, "work")
ROOT = os.path.abspath(os.path.join(HERE, ".."))
TYPES = ["extraction", "math", "code", "rewrite", "summary", "qa", "chat"]
VOCAB = 8192
CTX = int(os.environ.get("PF_CTX", "512"))
PROMPT_WEIGHT = 0.1
FULL_TOKENIZER = os.path.join(WORK, "x", "qwen3tok", "models", "tokenizer.json")
PRUNED_PATH = os.path.join(ROOT, "models", "pf-tokenizer.json")


def chatml_parts(prompt, response):
    """(text, is_response) spans of the training chat format (plain ChatML, no system, no think)."""
    return [("<|im_start|>user\n" + prompt + "<|im_end|>\n<|im_start|>assistant\n", False),
            (response + "<|im_end|>\n", True)]


def read_by_type(folder):
    """The items of folder/TYPE.jsonl for every TYPE in TYPES, in that order."""
    out = []
    for t in TYPES:
        for line in open(os.path.join(folder, t + ".jsonl"), encoding="utf-8"):
            out.append(json.loads(line))
    return out


def load_examples():
    return read_by_type(os.path.join(WORK, "corpus"))


def load_eval():
    return read_by_type(os.path.join(ROOT, "eval", "tasks"))


def prune(full, counts, n_normal):
    # producing merge of each token (lowest rank wins)
    producer = {}
    for a, b in full.merges:
        r = a + b
        if r not in producer:
            producer[r] = (a, b)
    byte_toks = set(BYTE_ENCODER.values())
    special = set(full.specials)
    ranked = [full.tokens[i] for i, _ in counts.most_common() if full.tokens[i] not in special]

    def closure(cands):
        kept = set(byte_toks)
        stack = list(cands)
        while stack:
            t = stack.pop()
            if t in kept:
                continue
            if t not in producer:
                continue  # unreachable by merges (never produced by encoding)
            kept.add(t)
            stack.extend(producer[t])
        return kept

    lo, hi = 0, len(ranked)
    while lo < hi:  # largest prefix whose closure fits
        mid = (lo + hi + 1) // 2
        if len(closure(ranked[:mid])) <= n_normal:
            lo = mid
        else:
            hi = mid - 1
    kept = closure(ranked[:lo])
    # fill any remaining slots with the next most used tokens whose closure still fits
    i = lo
    while len(kept) < n_normal and i < len(ranked):
        c = closure(list(kept) + [ranked[i]])
        if len(c) <= n_normal:
            kept = c
        i += 1
    normal = sorted(kept, key=lambda t: full.token_to_id[t])
    tokens = normal + list(full.specials)
    keep = set(normal)
    merges = [(a, b) for a, b in full.merges if a in keep and b in keep and (a + b) in keep]
    print(f"pruned: {len(normal)} normal + {len(full.specials)} special = {len(tokens)} tokens, "
          f"{len(merges)} merges (top-{lo} by count + closure)", flush=True)
    return QwenBPE(tokens, merges, full.specials)


def encode_example(tok, e, resp_key):
    ids, w = [], []
    for text, is_resp in chatml_parts(e["prompt"], e[resp_key]):
        t = tok.encode(text)
        ids += t
        w += [1.0 if is_resp else PROMPT_WEIGHT] * len(t)
    return ids, w


def main():
    os.makedirs(os.path.join(WORK, "data"), exist_ok=True)
    examples = load_examples()
    evals = load_eval()
    eval_only = "--eval-only" in sys.argv
    if not os.path.exists(PRUNED_PATH) or "--reprune" in sys.argv:
        full = QwenBPE.from_tokenizer_json(FULL_TOKENIZER)
        counts = Counter()
        for k, e in enumerate(examples):
            for text, _ in chatml_parts(e["prompt"], e["response"]):
                counts.update(full.encode(text))
            if k % 20000 == 0:
                print("count", k, len(examples), flush=True)
        for e in evals:
            counts.update(full.encode(e["prompt"]))
            counts.update(full.encode(e["reference"]))
        print("full-vocab corpus tokens:", sum(counts.values()), "distinct:", len(counts), flush=True)
        tok = prune(full, counts, VOCAB - len(full.specials))
        os.makedirs(os.path.dirname(PRUNED_PATH), exist_ok=True)
        tok.save(PRUNED_PATH)
        del full
    tok = QwenBPE.load(PRUNED_PATH)
    pad = tok.token_to_id["<|endoftext|>"]

    if eval_only:
        write_eval(tok, evals)
        return
    # training windows
    seqs = []
    for k, e in enumerate(examples):
        ids, w = encode_example(tok, e, "response")
        seqs.append((ids[:CTX], w[:CTX], TYPES.index(e["type"])))
        if k % 20000 == 0:
            print("encode", k, flush=True)
    order = np.random.RandomState(7).permutation(len(seqs))
    wins_ids, wins_w, wins_t = [], [], []
    cur_i, cur_w, cur_t = [], [], []
    for j in order:
        ids, w, t = seqs[j]
        if len(cur_i) + len(ids) > CTX:
            wins_ids.append(cur_i + [pad] * (CTX - len(cur_i)))
            wins_w.append(cur_w + [0.0] * (CTX - len(cur_w)))
            wins_t.append(cur_t + [-1] * (CTX - len(cur_t)))
            cur_i, cur_w, cur_t = [], [], []
        cur_i += ids
        cur_w += w
        cur_t += [t] * len(ids)
    if cur_i:
        wins_ids.append(cur_i + [pad] * (CTX - len(cur_i)))
        wins_w.append(cur_w + [0.0] * (CTX - len(cur_w)))
        wins_t.append(cur_t + [-1] * (CTX - len(cur_t)))
    X = np.array(wins_ids, dtype=np.int16 if VOCAB < 32768 else np.int32)
    W = np.array(wins_w, dtype=np.float16)
    T = np.array(wins_t, dtype=np.int8)
    np.save(os.path.join(WORK, "data", "train_ids.npy"), X)
    np.save(os.path.join(WORK, "data", "train_w.npy"), W)
    np.save(os.path.join(WORK, "data", "train_type.npy"), T)
    ntok = int((T >= 0).sum())
    print(f"train windows {len(X)} x {CTX}; real tokens {ntok} ({ntok / X.size:.1%} fill); "
          f"response tokens {int((W == 1).sum())}", flush=True)
    per = Counter()
    for ids, w, t in seqs:
        per[TYPES[t]] += len(ids)
    print("tokens per type:", dict(per), flush=True)

    write_eval(tok, evals)


def write_eval(tok, evals):
    # validation = held-out eval items (prompt + reference), one example per row
    val = []
    for e in evals:
        ids, w = encode_example(tok, e, "reference")
        val.append({"type": e["type"], "ids": ids[:CTX], "w": w[:CTX]})
    json.dump(val, open(os.path.join(WORK, "data", "val.json"), "w"))
    # tokenizer agreement data: Python encoder ids of every eval prompt (raw prompt text)
    with open(os.path.join(ROOT, "eval", "tasks", "token_ids.jsonl"), "w", encoding="utf-8") as f:
        for e in evals:
            f.write(json.dumps({"id": e["id"], "ids": tok.encode(e["prompt"]),
                                "chatml_ids": tok.encode(chatml_parts(e["prompt"], "")[0][0])}) + "\n")
    print("done", flush=True)


if __name__ == "__main__":
    main()
