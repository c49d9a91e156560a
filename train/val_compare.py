"""Held-out loss per task type of several targets, in nats per byte of the reference answers.

  val_compare.py MODEL.gguf [MODEL.gguf ...] [--json OUT]

The old and the new stand-in targets have different tokenizers (5,855 of their 8,192 tokens in
common), so a loss per token does not compare; the sum of a reference answer's token losses over its
UTF-8 bytes does (both read the same text). Each model is read from its GGUF (weights and tokenizer),
scored on the eval's references (eval/tasks/TYPE.jsonl, and the long inputs of
work/tune/long_eval.jsonl where present) in the training chat format, the closing <|im_end|>
included; an item longer than a model's context is skipped for that model and counted in `skipped`.
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prepare_data as D  # noqa: E402
from export_target import model_from_gguf  # noqa: E402
from qwen_bpe import QwenBPE  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LONG = os.path.join(HERE, "work", "tune", "long_eval.jsonl")


def tokenizer_of(meta):
    toks = meta["tokenizer.ggml.tokens"]
    specials = [t for t, k in zip(toks, meta["tokenizer.ggml.token_type"]) if k == 3]
    return QwenBPE(toks, [tuple(m.split(" ", 1)) for m in meta["tokenizer.ggml.merges"]], specials)


def items():
    out = D.load_eval()
    if os.path.exists(LONG):
        out += [json.loads(x) for x in open(LONG, encoding="utf-8")]
    return out


@torch.no_grad()
def score(path, evals):
    model, meta = model_from_gguf(path, torch.float32)
    tok, ctx = tokenizer_of(meta), meta["qwen3.context_length"]
    nll, nbytes, skipped = {}, {}, {}
    for e in evals:
        ids, resp = [], []
        for text, is_resp in D.chatml_parts(e["prompt"], e["reference"]):
            t = tok.encode(text)
            ids += t
            resp += [is_resp] * len(t)
        if len(ids) > ctx:
            skipped[e["type"]] = skipped.get(e["type"], 0) + 1
            continue
        x = torch.tensor([ids])
        ce = F.cross_entropy(model(x)[0, :-1].float(), x[0, 1:], reduction="none")
        mask = torch.tensor(resp[1:], dtype=torch.bool)
        nll[e["type"]] = nll.get(e["type"], 0.0) + float(ce[mask].sum())
        nbytes[e["type"]] = nbytes.get(e["type"], 0) + len((e["reference"] + "<|im_end|>\n").encode("utf-8"))
    res = {t: round(nll[t] / nbytes[t], 4) for t in nll}
    res["all"] = round(sum(nll.values()) / sum(nbytes.values()), 4)
    return {"nats_per_byte": res, "skipped": skipped, "context": ctx}


def main():
    args = sys.argv[1:]
    out = None
    if "--json" in args:
        k = args.index("--json")
        out, args = args[k + 1], args[:k] + args[k + 2:]
    if not args:
        sys.exit(__doc__)
    evals = items()
    res = {os.path.basename(p): score(p, evals) for p in args}
    types = sorted({t for r in res.values() for t in r["nats_per_byte"] if t != "all"}) + ["all"]
    print("| model | context | " + " | ".join(types) + " | items over the context |")
    print("|---" * (len(types) + 3) + "|")
    for name, r in res.items():
        over = ", ".join(f"{t} {n}" for t, n in sorted(r["skipped"].items())) or "none"
        print(f"| {name} | {r['context']} | " + " | ".join(f"{r['nats_per_byte'].get(t, float('nan')):.3f}" for t in types)
              + f" | {over} |")
    if out:
        json.dump(res, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
