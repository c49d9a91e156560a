"""Draft training data: the target's OWN responses to TRAINING prompts, and its tapped features.

  draft_data.py prompts [--n N] [--sampled-frac F] [--max-prompt-tokens T] [--shards S] [--long L]
      picks N training prompts (work/corpus/<type>.jsonl, equal share per task type, seeded), never
      an eval prompt (eval/tasks/*.jsonl are held out by source item when the corpus is built; the
      exact prompt texts are also checked here), and L long inputs (work/tune/long_train.jsonl, those
      that fit the target's context), and writes pocketflash-gen input shards
      work/drafts/prompts_{greedy,sampled}_<k>.jsonl
  draft_data.py userprompts FILE [--sampled-frac F] [--shards S]
      the same shards from a user's own prompt file (JSON lines with "prompt", optional "type")
  draft_data.py evalprompts
      the held-out eval prompts (all types) for the OFFLINE acceptance measurement only
  draft_data.py features <name> <gen.jsonl ...> [--layers N] [--limit N]
      runs the frozen target (read back from models/pf-target-f16.gguf, f32) over prompt+response and
      stores the residual rows after the tapped layers (z-lab's build_target_layer_ids for an N-layer draft): work/drafts/<name>_feats.npy (f16 [tokens, n_taps*H]),
      <name>_toks.npy (i32), <name>_index.npz (offset, length, response start, task type per sequence)
  draft_data.py merge <name> <part> ...
      concatenates feature sets of parallel `features` runs (make_drafts.sh runs two processes)
Generation itself is `pocketflash gen` (see make_drafts.sh).
"""
import argparse
import glob
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qwen_bpe import QwenBPE  # noqa: E402
from dflash_model import DRAFT_LAYERS, build_target_layer_ids  # noqa: E402
from prepare_data import load_eval  # noqa: E402
from train_lib import target_gguf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, ".."))
WORK = os.path.join(HERE, "work")
OUT = os.environ.get("PF_DRAFT_WORK") or os.path.join(WORK, "drafts")   # make_drafts.sh sets it
TYPES = ["extraction", "math", "code", "rewrite", "summary", "qa", "chat"]
SEQ_TYPES = TYPES + ["long"]   # a sequence's type index: the corpus types, then the long inputs
LONG_TRAIN = os.path.join(WORK, "tune", "long_train.jsonl")


def eval_prompts():
    """The eval's prompts, the long inputs' (eval/tasks/long.jsonl) where the eval has them."""
    long = os.path.join(ROOT, "eval", "tasks", "long.jsonl")
    return load_eval() + ([json.loads(x) for x in open(long, encoding="utf-8")] if os.path.exists(long) else [])


def chatml(prompt):
    return "<|im_start|>user\n" + prompt + "<|im_end|>\n<|im_start|>assistant\n"


def cmd_userprompts(a):
    """A user's prompt file (JSON lines with "prompt" and optionally "id" / "type") as the gen shards
    cmd_prompts writes: shuffled with the seed, a --sampled-frac share answered by sampling. A line
    without a prompt, or a file without one, is an error naming the line."""
    os.makedirs(OUT, exist_ok=True)
    chosen = []
    for i, line in enumerate(open(a.file, encoding="utf-8"), 1):
        if not line.strip():
            continue
        try:
            e = json.loads(line)
            prompt = e["prompt"]
            assert isinstance(prompt, str) and prompt
        except (ValueError, KeyError, TypeError, AssertionError):
            raise SystemExit(f"{a.file}:{i}: expected a JSON object with a non-empty \"prompt\" string")
        ty = e.get("type") if e.get("type") in TYPES else "chat"
        chosen.append({"id": f"{ty}-user-{e.get('id', i)}", "prompt": prompt})
    if not chosen:
        raise SystemExit(f"{a.file}: no prompts")
    rs = np.random.RandomState(a.seed)
    chosen = [chosen[i] for i in rs.permutation(len(chosen))]
    write_shards(chosen, a.sampled_frac, a.shards)


def write_shards(chosen, sampled_frac, shards):
    n_s = int(round(len(chosen) * sampled_frac))
    groups = {"sampled": chosen[:n_s], "greedy": chosen[n_s:]}
    for g, items in groups.items():
        for k in range(shards):
            with open(os.path.join(OUT, f"prompts_{g}_{k}.jsonl"), "w", encoding="utf-8") as f:
                for e in items[k::shards]:
                    f.write(json.dumps(e, ensure_ascii=False) + "\n")
    print(f"prompts: {len(chosen)} ({len(groups['greedy'])} greedy, {len(groups['sampled'])} sampled)", flush=True)
    return groups


def held_windows():
    """40-character windows (at 1/4, 1/2, 3/4) of every eval prompt body of at least 60 characters, per
    type: a training prompt that contains one is not used (the corpus build checks eval items against
    training by source item and text; this checks the drafts' prompts again after any rebuild). Templated
    types (extraction, math) share their sentence frames by design and are checked by exact prompt."""
    out = {}
    for e in eval_prompts():
        body = e["prompt"].split("\n", 1)[-1]
        if e["type"] in ("code", "rewrite", "summary", "qa", "chat") and len(body) >= 60:  # natural text, not templates
            out.setdefault(e["type"], set()).update(body[int(len(body) * f) - 20:int(len(body) * f) + 20]
                                                    for f in (0.25, 0.5, 0.75))
    return out


def cmd_prompts(a):
    os.makedirs(OUT, exist_ok=True)
    tok = QwenBPE.load(os.path.join(ROOT, "models", "pf-tokenizer.json"))
    held = {e["prompt"] for e in eval_prompts()}
    rs = np.random.RandomState(a.seed)
    # --weights: a task type's share of N (default equal); types whose corpus runs out give their
    # remainder to nothing (the count printed is what was found)
    w = [float(x) for x in a.weights.split(",")] if a.weights else [1.0] * len(TYPES)
    assert len(w) == len(TYPES), f"--weights needs {len(TYPES)} values ({','.join(TYPES)})"
    per = [int(round(a.n * x / sum(w))) for x in w]
    windows = held_windows()
    chosen = []
    for t, n in zip(TYPES, per):
        items = [json.loads(l) for l in open(os.path.join(WORK, "corpus", t + ".jsonl"), encoding="utf-8")]
        order = rs.permutation(len(items))
        if a.zh_first:   # every Chinese item first (zh is scarce for summary and qa), each language shuffled
            order = np.concatenate([[j for j in order if items[j].get("lang") == "zh"],
                                    [j for j in order if items[j].get("lang") != "zh"]]).astype(np.int64)
        got = 0
        for j in order:
            e = items[j]
            if e["prompt"] in held or any(x in e["prompt"] for x in windows.get(t, ())):
                continue
            if len(tok.encode(chatml(e["prompt"]))) > a.max_prompt_tokens:
                continue
            chosen.append({"id": e["id"], "prompt": e["prompt"]})
            got += 1
            if got == n:
                break
    n_long = 0
    if a.long and os.path.exists(LONG_TRAIN):
        # inputs of 300-1,500 tokens (tune_long.py's training items; its eval sources are held out),
        # as many as fit the target's context with a response after them
        from gguf_writer import read_gguf
        room = min(a.max_long_tokens, read_gguf(target_gguf())[0]["qwen3.context_length"] - 160)
        items = [json.loads(x) for x in open(LONG_TRAIN, encoding="utf-8")]
        for j in rs.permutation(len(items)):
            e = items[j]
            if e["prompt"] in held or len(tok.encode(chatml(e["prompt"]))) > room:
                continue
            chosen.append({"id": e["id"], "prompt": e["prompt"]})
            n_long += 1
            if n_long == a.long:
                break
    order = rs.permutation(len(chosen))
    chosen = [chosen[i] for i in order]
    write_shards(chosen, a.sampled_frac, a.shards)
    print(f"per type {per}, long {n_long}", flush=True)


def cmd_evalprompts(a):
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "eval_prompts.jsonl"), "w", encoding="utf-8") as f:
        for e in eval_prompts():
            f.write(json.dumps({"id": e["id"], "prompt": e["prompt"]}, ensure_ascii=False) + "\n")


def load_target(dtype=torch.float32):
    from export_target import model_from_gguf
    m, meta = model_from_gguf(target_gguf(), dtype)
    for p in m.parameters():
        p.requires_grad_(False)
    return m, meta


def _fast_attention(self, u, cos, sin, mask):
    """qwen3_model.Attention.forward, same arithmetic, with 3-D bmm over contiguous operands (torch 1.13's
    CPU matmul on the transposed 4-D views is ~100x slower here). Patched in this process only."""
    import math
    B, T, _ = u.shape
    c = self.c
    q, k, v = self.qkv(u, cos, sin)
    nh = c.n_heads
    s = torch.bmm(q.reshape(B * nh, T, c.head_dim).contiguous(),
                  k.reshape(B * nh, T, c.head_dim).transpose(1, 2).contiguous())
    s = s.view(B, nh, T, T) * (1.0 / math.sqrt(c.head_dim)) + mask.to(s.dtype)
    p = torch.softmax(s.float(), dim=-1).to(v.dtype)
    a = torch.bmm(p.view(B * nh, T, T), v.reshape(B * nh, T, c.head_dim).contiguous())
    return self.o_proj(a.view(B, nh, T, c.head_dim).transpose(1, 2).reshape(B, T, nh * c.head_dim))


@torch.no_grad()
def target_taps(model, seqs, layers, batch_tokens=8192, bf16=False):
    """seqs: list of id lists -> list of float32 arrays [len, n_taps*H] (causal forward, right-padded batches)."""
    import qwen3_model
    qwen3_model.Attention.forward = _fast_attention
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    out = [None] * len(seqs)
    i = 0
    while i < len(order):
        L = len(seqs[order[i]])
        j = i
        while j < len(order) and (j - i + 1) * len(seqs[order[j]]) <= batch_tokens:
            j += 1
        j = max(j, i + 1)
        idx = order[i:j]
        T = max(len(seqs[k]) for k in idx)
        ids = torch.zeros(len(idx), T, dtype=torch.long)
        for r, k in enumerate(idx):
            ids[r, :len(seqs[k])] = torch.tensor(seqs[k])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            hs = model.hidden_states(ids, layers)
        cat = torch.cat(hs, dim=-1).float().numpy()
        for r, k in enumerate(idx):
            out[k] = cat[r, :len(seqs[k])]
        i = j
        del L
    return out


def read_generations(files, limit, eos, max_seq):
    """(sequences, response starts, task types, ids) of gen outputs, as the drafts train on them: the
    end-of-turn token appended where a response stopped on it, responses under 2 tokens dropped,
    sequences cut to the target's training context."""
    seqs, rstart, types, ids_ = [], [], [], []
    for path in files:
        for i, line in enumerate(open(path, encoding="utf-8")):
            if limit and i >= limit:
                break
            e = json.loads(line)
            p, r = e["prompt_ids"], e["response_ids"]
            if e.get("stop") == "eot" and (not r or r[-1] != eos):
                r = r + [eos]   # gen leaves the end-of-turn token out; the draft should learn to predict it
            if len(r) < 2:
                continue
            seqs.append((p + r)[:max_seq])
            rstart.append(len(p))
            ty = str(e["id"]).split("-")[0]
            types.append(SEQ_TYPES.index(ty) if ty in SEQ_TYPES else SEQ_TYPES.index("chat"))   # a user's prompt: chat
            ids_.append(e["id"])
    return seqs, rstart, types, ids_


def write_index(name, seqs, rstart, types, ids_, taps):
    lens = np.array([len(s) for s in seqs], dtype=np.int64)
    off = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    np.save(os.path.join(OUT, name + "_toks.npy"), np.concatenate([np.array(s, dtype=np.int32) for s in seqs]))
    np.savez(os.path.join(OUT, name + "_index.npz"), offset=off, length=lens, rstart=np.array(rstart),
             type=np.array(types), ids=np.array(ids_), taps=np.array(taps))
    return lens, off


def cmd_seqs(a):
    """The sequences of gen outputs for `pocketflash taps` (the C engine computes the features: the same
    forward the drafts are fed by at run time, ~10x this machine's PyTorch rate): writes <name>_seqs.bin
    ("PFSQ", u32 n, u32 lengths[n], i32 tokens), <name>_toks.npy and <name>_index.npz; prints the
    --layers argument for taps."""
    from gguf_writer import read_gguf
    meta, _ = read_gguf(target_gguf())
    # --taps: the layers to compute (a superset of what several drafts read: train_draft.py picks its
    # columns); default z-lab's rule for --layers draft layers
    taps = ([int(x) for x in a.taps.split(",")] if a.taps else
            build_target_layer_ids(meta["qwen3.block_count"], a.layers))
    seqs, rstart, types, ids_ = read_generations(a.files, a.limit, meta["tokenizer.ggml.eos_token_id"], meta["qwen3.context_length"])
    lens, _ = write_index(a.name, seqs, rstart, types, ids_, taps)
    # --parts K: K consecutive slices (<name>_p<k>_seqs.bin) for K single-thread taps processes, whose
    # outputs joinfeats concatenates (one taps process with -t 2 keeps only ~1 core busy on sequences
    # of ~100 tokens)
    bounds = np.linspace(0, len(seqs), a.parts + 1).astype(int) if a.parts > 1 else [0, len(seqs)]
    for k in range(len(bounds) - 1):
        part = a.name + (f"_p{k}" if a.parts > 1 else "")
        tmp = os.path.join(OUT, part + "_seqs.bin.tmp")
        with open(tmp, "wb") as f:
            f.write(b"PFSQ")
            f.write(np.array([bounds[k + 1] - bounds[k]], dtype="<u4").tobytes())
            f.write(lens[bounds[k]:bounds[k + 1]].astype("<u4").tobytes())
            for s in seqs[bounds[k]:bounds[k + 1]]:
                f.write(np.array(s, dtype="<i4").tobytes())
        os.replace(tmp, os.path.join(OUT, part + "_seqs.bin"))
    resp = int(sum(lens[k] - rstart[k] for k in range(len(seqs))))
    print(f"seqs {a.name}: {len(seqs)} sequences, {int(lens.sum())} tokens ({resp} response), taps "
          f"{','.join(str(t) for t in sorted(set(taps)))}", file=sys.stderr, flush=True)
    print(",".join(str(t) for t in taps))


def cmd_joinfeats(a):
    """Concatenate the taps outputs <name>_p<k>_<suffix>.npy (k < parts, in order; suffix feats, and
    topk_ids / topk_logp when taps wrote the target's top-k) into <name>_<suffix>.npy without loading
    them (header, then the parts' rows copied), check the row count against the index, and remove
    the parts."""
    for suffix in a.suffix:
        join_parts(a.name, a.parts, suffix)


def join_parts(name, n_parts, suffix):
    import shutil
    parts = [os.path.join(OUT, f"{name}_p{k}_{suffix}.npy") for k in range(n_parts)]
    mm = [np.load(p, mmap_mode="r") for p in parts]
    assert all(m.shape[1] == mm[0].shape[1] and m.dtype == mm[0].dtype for m in mm)
    shape = (sum(m.shape[0] for m in mm), mm[0].shape[1])
    n_index = int(np.load(os.path.join(OUT, name + "_index.npz"))["length"].sum())
    assert shape[0] == n_index, f"parts hold {shape[0]} rows, the index {n_index}"
    out = os.path.join(OUT, f"{name}_{suffix}.npy")
    with open(out + ".tmp", "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": np.lib.format.dtype_to_descr(mm[0].dtype),
                                                 "fortran_order": False, "shape": shape})
        for p in parts:
            with open(p, "rb") as g:
                np.lib.format.read_magic(g)
                np.lib.format.read_array_header_1_0(g)
                shutil.copyfileobj(g, f, 1 << 24)
    os.replace(out + ".tmp", out)
    for p in parts:
        os.remove(p)
    print(f"joinfeats {name}_{suffix}: {shape[0]} rows x {shape[1]} from {n_parts} parts", file=sys.stderr, flush=True)


def cmd_features(a):
    torch.set_num_threads(int(os.environ.get("PF_TORCH_THREADS", "1")))  # see train_draft.THREADS
    torch.set_flush_denormal(True)
    t0 = time.time()
    model, meta = load_target()
    # 0-based target layers whose OUTPUT the draft reads (dflash.target_layers = L+1): z-lab's rule
    taps = build_target_layer_ids(meta["qwen3.block_count"], a.layers)
    seqs, rstart, types, ids_ = read_generations(a.files, a.limit, meta["tokenizer.ggml.eos_token_id"], meta["qwen3.context_length"])
    feats = target_taps(model, seqs, taps, bf16=a.bf16)
    lens, off = write_index(a.name, seqs, rstart, types, ids_, taps)
    F = feats[0].shape[1]
    big = np.lib.format.open_memmap(os.path.join(OUT, a.name + "_feats.npy"), mode="w+", dtype=np.float16,
                                    shape=(int(lens.sum()), F))
    for k, f in enumerate(feats):
        big[off[k]:off[k] + lens[k]] = f.astype(np.float16)
    big.flush()
    resp = int(sum(lens[k] - rstart[k] for k in range(len(seqs))))
    print(f"features {a.name}: {len(seqs)} sequences, {int(lens.sum())} tokens ({resp} response), "
          f"{F} features (taps {taps}), {time.time() - t0:.0f}s; max |feat| {max(float(np.abs(f).max()) for f in feats):.1f}",
          flush=True)


def cmd_merge(a):
    """Concatenates feature sets written by parallel `features` runs into one (in the order given)."""
    parts = [(np.load(os.path.join(OUT, n + "_index.npz")), os.path.join(OUT, n + "_feats.npy"),
              np.load(os.path.join(OUT, n + "_toks.npy"))) for n in a.parts]
    taps = [list(ix["taps"]) for ix, _, _ in parts]
    assert all(t == taps[0] for t in taps), f"parts tap different layers: {taps}"
    lens = np.concatenate([ix["length"] for ix, _, _ in parts])
    off = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    F = np.load(parts[0][1], mmap_mode="r").shape[1]
    big = np.lib.format.open_memmap(os.path.join(OUT, a.name + "_feats.npy.tmp"), mode="w+", dtype=np.float16,
                                    shape=(int(lens.sum()), F))
    o = 0
    for _, fp, _ in parts:
        f = np.load(fp, mmap_mode="r")
        big[o:o + len(f)] = f
        o += len(f)
    big.flush()
    del big
    os.replace(os.path.join(OUT, a.name + "_feats.npy.tmp"), os.path.join(OUT, a.name + "_feats.npy"))
    np.save(os.path.join(OUT, a.name + "_toks.npy"), np.concatenate([t for _, _, t in parts]))
    cat = lambda k: np.concatenate([ix[k] for ix, _, _ in parts])  # noqa: E731
    np.savez(os.path.join(OUT, a.name + "_index.npz"), offset=off, length=lens, rstart=cat("rstart"),
             type=cat("type"), ids=cat("ids"), taps=np.array(taps[0]))
    print(f"merged {a.parts} -> {a.name}: {len(lens)} sequences, {int(lens.sum())} tokens", flush=True)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prompts")
    p.add_argument("--n", type=int, default=2400)
    p.add_argument("--sampled-frac", type=float, default=0.25)
    p.add_argument("--max-prompt-tokens", type=int, default=320)
    p.add_argument("--shards", type=int, default=2)
    p.add_argument("--seed", type=int, default=20261130)
    p.add_argument("--weights", default="", help="per-type shares, in the order " + ",".join(TYPES))
    p.add_argument("--zh-first", action="store_true", help="take every Chinese prompt of a type before English ones")
    p.add_argument("--long", type=int, default=0, help="add N long inputs (work/tune/long_train.jsonl, where built)")
    p.add_argument("--max-long-tokens", type=int, default=1536, help="a long input's longest prompt")
    p = sub.add_parser("userprompts")
    p.add_argument("file")
    p.add_argument("--sampled-frac", type=float, default=0.3)
    p.add_argument("--shards", type=int, default=2)
    p.add_argument("--seed", type=int, default=20261130)
    sub.add_parser("evalprompts")
    p = sub.add_parser("seqs")
    p.add_argument("name")
    p.add_argument("files", nargs="+")
    p.add_argument("--layers", type=int, default=DRAFT_LAYERS, help="draft layers: the taps follow z-lab's rule")
    p.add_argument("--limit", type=int, default=0, help="only the first N responses of each file")
    p.add_argument("--parts", type=int, default=1, help="write K consecutive slices for K taps processes")
    p.add_argument("--taps", default="", help="comma-separated 0-based target layers (overrides --layers)")
    p = sub.add_parser("joinfeats")
    p.add_argument("name")
    p.add_argument("parts", type=int)
    p.add_argument("--suffix", nargs="+", default=["feats"], help="the files to join: feats topk_ids topk_logp")
    p = sub.add_parser("features")
    p.add_argument("name")
    p.add_argument("files", nargs="+")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast for the target forward (~3x faster here)")
    p.add_argument("--layers", type=int, default=DRAFT_LAYERS, help="draft layers: the taps follow z-lab's rule")
    p.add_argument("--limit", type=int, default=0, help="only the first N responses of each file")
    p = sub.add_parser("merge")
    p.add_argument("name")
    p.add_argument("parts", nargs="+")
    a = ap.parse_args()
    {"prompts": cmd_prompts, "userprompts": cmd_userprompts, "evalprompts": cmd_evalprompts, "seqs": cmd_seqs, "joinfeats": cmd_joinfeats, "features": cmd_features, "merge": cmd_merge}[a.cmd](a)


if __name__ == "__main__":
    main()
