"""The pretraining token stream: the tokenizer pruned for pretraining text + task data, then every
document of work/pre/docs.jsonl encoded and laid end to end.

  prepare_pretrain.py vocab     the pinned tokenizer (pretrain_tokenizer.json) -> work/pre/tokenizer.json;
                                without it (or with --rebuild): count Qwen3 tokens over a sample of the
                                documents and all task examples, prune to 8,192
  prepare_pretrain.py manifest  train/pretrain_manifest.json: sha256 of every downloaded input,
                                the tokenizer and the stream; the mix (mix.json, stream.json)
  prepare_pretrain.py encode    encode every document (2 processes) -> work/pre/stream.u16 (uint16
                                ids, documents separated by <|endoftext|>), work/pre/val.u16 (every
                                200th document of each source, never trained on), work/pre/stream.json
                                (tokens per source, repeats by the mix's weights; val_index: [source, first token,
                                tokens] of val.u16)
"""
import collections
import json
import multiprocessing
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qwen_bpe import QwenBPE  # noqa: E402
import prepare_data as D  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PRE = os.path.join(HERE, "work", "pre")
TOKENIZER = os.path.join(PRE, "tokenizer.json")
# The tokenizer the pretraining's weights were trained with, committed: a rebuild counts over Debian's
# live package descriptions, which change from day to day, and a vocabulary pruned from other counts
# moves token ids under the committed snapshot.
PINNED = os.path.join(HERE, "pretrain_tokenizer.json")
VOCAB = 8192
# How many times each source's documents enter the stream (1 = once). Sources of one kind of text
# that would otherwise dominate it are taken in part: a weight w < 1 keeps the first w of its
# documents in a seeded order.
WEIGHTS = {"classical-zh": 0.5, "gcide": 0.6, "glibc-code": 0.6, "nlp-corpus": 1.0,
           "descriptions-zh": 2.0, "debian-handbook-zh": 2.0, "debian-reference-zh": 2.0,
           "maint-guide-zh": 2.0, "man-zh": 2.0, "libreoffice-help-zh": 1.0}
VAL_EVERY = 200
SEED = 20261205


def docs():
    with open(os.path.join(PRE, "docs.jsonl"), encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


def vocab():
    if os.path.exists(PINNED) and "--rebuild" not in sys.argv:
        shutil.copyfile(PINNED, TOKENIZER)
        print(f"tokenizer: the pinned {os.path.basename(PINNED)}", flush=True)
        return
    full = QwenBPE.from_tokenizer_json(D.FULL_TOKENIZER)
    counts = collections.Counter()
    for k, d in enumerate(docs()):
        if k % 4 == 0:
            counts.update(full.encode(d["text"], allow_special=False))
        if k % 20000 == 0:
            print("count docs", k, sum(counts.values()), flush=True)
    n_pre = sum(counts.values())
    for e in D.load_examples():
        for text, _ in D.chatml_parts(e["prompt"], e["response"]):
            counts.update(full.encode(text))
    for e in D.load_eval():
        counts.update(full.encode(e["prompt"]))
        counts.update(full.encode(e["reference"]))
    print(f"full-vocab tokens: pretraining sample {n_pre}, task data {sum(counts.values()) - n_pre}, "
          f"distinct {len(counts)}", flush=True)
    tok = D.prune(full, counts, VOCAB - len(full.specials))
    tok.save(TOKENIZER)


_TOK = None


def _encode(text):
    global _TOK
    if _TOK is None:
        _TOK = QwenBPE.load(TOKENIZER)
    return np.array(_TOK.encode(text, allow_special=False) + [_TOK.token_to_id["<|endoftext|>"]],
                    dtype=np.uint16)


def encode():
    all_docs = list(docs())
    per_src = collections.defaultdict(list)
    for i, d in enumerate(all_docs):
        per_src[d["src"]].append(i)
    val_ids = {ix for ixs in per_src.values() for ix in ixs[::VAL_EVERY]}
    with multiprocessing.Pool(2) as pool:
        enc = pool.map(_encode, (d["text"] for d in all_docs), chunksize=64)
    rng = np.random.RandomState(SEED)
    pieces, stats = [], {}
    val, val_index, at = [], [], 0
    for src, ixs in per_src.items():
        train = [i for i in ixs if i not in val_ids]
        v = [enc[i] for i in ixs if i in val_ids]
        n = int(sum(len(x) for x in v))
        val += v
        val_index.append([src, at, n])
        at += n
        w = WEIGHTS.get(src, 1.0)
        whole, part = int(w), w - int(w)
        order = list(rng.permutation(train))
        chosen = train * whole + order[:int(round(part * len(train)))]
        pieces += [(src, i) for i in chosen]
        ntok = sum(len(enc[i]) for i in train)
        stats[src] = {"docs": len(ixs), "tokens": ntok, "weight": w,
                      "stream_tokens": sum(len(enc[i]) for _, i in pieces if _ == src),
                      "chars": sum(len(all_docs[i]["text"]) for i in train)}
        print(src, stats[src], flush=True)
    order = rng.permutation(len(pieces))
    stream = np.concatenate([enc[pieces[j][1]] for j in order])
    stream.tofile(os.path.join(PRE, "stream.u16.tmp"))
    os.replace(os.path.join(PRE, "stream.u16.tmp"), os.path.join(PRE, "stream.u16"))
    np.concatenate(val).tofile(os.path.join(PRE, "val.u16"))
    out = {"stream_tokens": int(len(stream)), "val_tokens": int(sum(len(v) for v in val)),
           "unique_train_tokens": sum(s["tokens"] for s in stats.values()), "sources": stats,
           "val_index": val_index, "val_every": VAL_EVERY, "seed": SEED}
    json.dump(out, open(os.path.join(PRE, "stream.json"), "w"), indent=1)
    print(f"stream {len(stream)} tokens ({out['unique_train_tokens']} unique), val {out['val_tokens']}", flush=True)


def manifest():
    import glob
    import subprocess
    from write_manifest import sha

    inputs = {os.path.basename(p): sha(p) for p in sorted(glob.glob(os.path.join(PRE, "debs", "*.deb")) +
                                                           glob.glob(os.path.join(PRE, "npm", "*.tgz")))}
    opencc = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "opencc"], capture_output=True,
                            text=True).stdout.strip()
    stream = json.load(open(os.path.join(PRE, "stream.json")))
    out = {"description": "inputs and mix of the target's pretraining corpus (train/make_pretrain.sh)",
           "inputs_sha256": inputs, "opencc": opencc,
           "python_stdlib": "the build machine's /usr/lib/python3.11 (python3.11 package)",
           "tokenizer_sha256": sha(TOKENIZER), "stream_sha256": sha(os.path.join(PRE, "stream.u16")),
           "extraction": json.load(open(os.path.join(PRE, "mix.json"))),
           "stream": {k: v for k, v in stream.items() if k != "val_index"}}
    with open(os.path.join(HERE, "pretrain_manifest.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    {"vocab": vocab, "encode": encode, "manifest": manifest}[sys.argv[1]]()
