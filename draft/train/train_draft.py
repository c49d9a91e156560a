"""Train a DFlash (v1) or DFlash2 (v2) draft on the target's own responses (dflash.md §5).

  train_draft.py train --version 1 --run work/drafts/v1 [--rows N] [--resume]
  train_draft.py train --version 2 --run work/drafts/v2 --init work/drafts/v1/final.pt [--rows N] [--resume]
  train_draft.py probe            fp32 vs bf16-autocast step time on real batches
  train_draft.py accept --ckpt work/drafts/v1/final.pt [--data eval]   offline teacher-forced acceptance

Frozen target embedding/head (read back from models/pf-target-f16.gguf). Random anchors over response
positions; block = [token at anchor, MASK x (B-1)]; rows 1..B-1 supervised with the true tokens
(weight exp(-(k-1)/gamma)); a block sees context strictly before its anchor, itself fully, no other
block. AdamW lr 6e-4, betas (0.9, 0.95), 4% warm-up, cosine decay, grad clip 1.0. The budget is in
supervised block rows (N sequences x A anchors x (B-1) rows per step); batches are a pure function of
(seed, step) so a resumed run sees exactly the same data.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dflash_model import (DRAFT_BLOCK, DRAFT_GAMMA, DRAFT_LAYERS, DraftConfig, DFlashDraft,  # noqa: E402
                          block_loss, build_target_layer_ids, propose)
import train_lib as L  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
DR = os.path.join(HERE, "work", "drafts")
# torch threads per process: PF_TORCH_THREADS, default 1. Measured on the shared 2-core AMD EPYC under
# load ~14: 1 thread bf16 2.9 s/step, fp32 4.4 s/step; 2 threads bf16 11-12 s/step (the second thread
# waits at every parallel region while other jobs hold the cores); the recipe runs two processes instead.
THREADS = int(os.environ.get("PF_TORCH_THREADS", "1"))
TYPES = ["extraction", "math", "code", "rewrite", "summary", "qa", "chat"]


class SeqData:
    def __init__(self, name, block):
        ix = np.load(os.path.join(DR, name + "_index.npz"))
        self.off, self.len, self.rstart, self.type = ix["offset"], ix["length"], ix["rstart"], ix["type"]
        self.feats = np.load(os.path.join(DR, name + "_feats.npy"), mmap_mode="r")
        self.toks = np.load(os.path.join(DR, name + "_toks.npy"))
        self.taps = [int(x) for x in ix["taps"]]
        self.B = block
        self.order = np.argsort(self.len, kind="stable")   # length-sorted: batches of similar length
        self.n = len(self.len)

    def n_resp_tokens(self):
        return int((self.len - self.rstart).sum())

    def seq(self, k):
        o, n = self.off[k], self.len[k]
        return self.toks[o:o + n], self.feats[o:o + n]

    def batch(self, step, seed, n_seq, n_anchor):
        rs = np.random.RandomState((seed * 1000003 + step) % (2 ** 31))
        start = rs.randint(0, max(1, self.n - n_seq + 1))
        idx = self.order[start:start + n_seq]
        T = int(self.len[idx].max())
        Fd = self.feats.shape[1]
        feats = np.zeros((len(idx), T, Fd), dtype=np.float32)
        toks = np.zeros((len(idx), T + self.B), dtype=np.int64)
        anchors = np.full((len(idx), n_anchor), -1, dtype=np.int64)
        for r, k in enumerate(idx):
            t, f = self.seq(k)
            n = len(t)
            feats[r, :n] = f
            toks[r, :n] = t
            cand = np.arange(self.rstart[k], n - 1)   # bonus positions with at least one label
            if len(cand) > n_anchor:
                cand = np.sort(rs.choice(cand, n_anchor, replace=False))
            anchors[r, :len(cand)] = cand
        return (torch.from_numpy(feats), torch.from_numpy(toks), torch.from_numpy(self.len[idx].astype(np.int64)),
                torch.from_numpy(anchors))


def load_emb():
    from gguf_writer import read_gguf
    meta, t = read_gguf(os.path.join(ROOT, "models", "pf-target-f16.gguf"))
    return torch.from_numpy(t["token_embd.weight"].astype(np.float32)), meta


def make_opt(model, lr, wd):
    decay, no = [], []
    for n, p in model.named_parameters():
        (decay if p.dim() == 2 else no).append(p)   # norms and the conv bases (identity init) not decayed
    return torch.optim.AdamW([{"params": decay, "weight_decay": wd}, {"params": no, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.95), foreach=True)


def default_config(version, emb, meta, layers=DRAFT_LAYERS, block=DRAFT_BLOCK):
    taps = build_target_layer_ids(meta["qwen3.block_count"], layers)
    return DraftConfig(hidden=emb.shape[1], n_layers=layers, n_heads=meta["qwen3.attention.head_count"],
                       n_kv_heads=meta["qwen3.attention.head_count_kv"],
                       head_dim=meta["qwen3.attention.key_length"], ffn=768,
                       rope_theta=float(meta["qwen3.rope.freq_base"]),
                       eps=float(meta["qwen3.attention.layer_norm_rms_epsilon"]), vocab_size=emb.shape[0],
                       target_hidden=emb.shape[1], tap_layers=taps, block_size=block,
                       mask_id=8185, version=version)


@torch.no_grad()
def warm_start(model, path):
    """Start from an exported draft (an older recipe's file, another shape): every tensor of the same
    name and shape is copied; fc's columns of a target layer both tap are copied (a newly tapped
    layer's are 0); a layer the old draft lacks gets zero output projections (o_proj, down_proj), so it
    adds nothing and the new draft starts computing the old one's function minus the dropped taps."""
    from export_draft import draft_from_gguf
    old, _ = draft_from_gguf(path, torch.float32)
    osd, c, oc = old.state_dict(), model.c, old.c
    assert (c.hidden, c.vocab_size, c.mask_id) == (oc.hidden, oc.vocab_size, oc.mask_id), "incompatible draft"
    copied, Ht = [], c.target_hidden
    for k, v in model.state_dict().items():
        if k == "fc.weight":
            v.zero_()
            for j, L in enumerate(c.tap_layers):
                if L in oc.tap_layers:
                    i = oc.tap_layers.index(L)
                    v[:, j * Ht:(j + 1) * Ht] = osd[k][:, i * Ht:(i + 1) * Ht]
            copied.append(k)
        elif k in osd and osd[k].shape == v.shape:
            v.copy_(osd[k])
            copied.append(k)
    for layer in model.layers[oc.n_layers:]:
        layer.o_proj.weight.zero_()
        layer.down_proj.weight.zero_()
    shared = [L for L in c.tap_layers if L in oc.tap_layers]
    return (f"warm start from {path} ({oc.n_layers} layers, taps {oc.tap_layers}, block {oc.block_size}): "
            f"{len(copied)} of {len(model.state_dict())} tensors copied, shared taps {shared}, "
            f"{max(0, c.n_layers - oc.n_layers)} added layer(s) start as identity")


def train(a):
    L.setup_torch(THREADS)
    os.makedirs(a.run, exist_ok=True)
    log = L.Logger(os.path.join(a.run, "train.log"))
    emb, meta = load_emb()
    assert meta["tokenizer.ggml.tokens"][8185] == "<|fim_pad|>"
    cfgp = os.path.join(a.run, "run_config.json")
    if a.resume and os.path.exists(cfgp):
        run = json.load(open(cfgp))
    else:
        c0 = default_config(a.version, emb, meta, a.layers, a.block)
        run = {"draft": c0.to_dict(), "seed": a.seed, "rows_budget": a.rows, "n_seq": a.n_seq,
               "n_anchor": a.n_anchor, "lr": a.lr, "warmup_frac": 0.04, "wd": a.wd, "gamma": a.gamma,
               "grad_clip": 1.0, "bf16": bool(a.bf16), "max_minutes": a.max_minutes, "sel_weight": a.sel_weight, "init": a.init, "init_gguf": a.init_gguf,
               "data": a.data}
        L.dump_json(cfgp, run)
    c = DraftConfig(**run["draft"])
    torch.manual_seed(run["seed"])
    model = DFlashDraft(c)
    if run["init"]:
        sd = torch.load(run["init"], map_location="cpu")["model"]
        missing, unexpected = model.load_state_dict(sd, strict=False)
        assert not unexpected, unexpected
        log(f"init from {run['init']}; new (identity-initialised) tensors: {len(missing)}")
    if run.get("init_gguf"):
        log(warm_start(model, run["init_gguf"]))
    opt = make_opt(model, run["lr"], run["wd"])
    data = SeqData(run["data"], c.block_size)
    assert data.taps == c.tap_layers, f"features tap {data.taps}, the draft {c.tap_layers}"
    rows_per_step = run["n_seq"] * run["n_anchor"] * (c.block_size - 1)
    total = max(1, run["rows_budget"] // rows_per_step)
    warm = max(1, int(round(run["warmup_frac"] * total)))
    ck = os.path.join(a.run, "ckpt.pt")
    step, extra = 0, {"wall": 0.0, "rows": 0, "ema": {}}
    if a.resume and os.path.exists(ck):
        step, extra = L.load_ckpt(ck, model, opt)
        log(f"resumed at step {step}")
    n_par = sum(p.numel() for p in model.parameters())
    log(f"DFlash{'2' if c.version == 2 else ''} draft: {n_par} params ({n_par / 1e6:.2f}M); {data.n} sequences, "
        f"{data.n_resp_tokens()} response tokens; {total} steps x {rows_per_step} block rows "
        f"({run['n_seq']} seqs x {run['n_anchor']} anchors x {c.block_size - 1}); warm-up {warm}")
    model.train()
    t_last = time.time()
    ema = extra.setdefault("ema", {})
    while step < total:
        lr = L.lr_at(step, total, run["lr"], warm, 0.0)
        L.set_lr(opt, lr)
        feats, toks, lens, anchors = data.batch(step, run["seed"], run["n_seq"], run["n_anchor"])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=run["bf16"]):
            loss, st = block_loss(model, emb, feats, toks, lens, anchors, run["gamma"], run["sel_weight"])
        gn = L.optimizer_step(model, opt, loss, run["grad_clip"])
        step += 1
        now = time.time()
        extra["wall"] += now - t_last
        extra["rows"] += st["rows"]
        t_last = now
        for k, v in st.items():
            if k != "rows":
                ema[k] = v if k not in ema else 0.95 * ema[k] + 0.05 * v
        if run.get("max_minutes") and step == 10 and not run.get("fitted"):
            # fit the budget to the wall-clock allowance once, from the first 10 steps; recorded in
            # run_config.json so that a resumed run keeps the same schedule
            fit = int(run["max_minutes"] * 60 / (extra["wall"] / 10))
            if fit < total:
                total = max(20, fit)
                warm = max(1, int(round(run["warmup_frac"] * total)))
                log(f"budget fitted to {run['max_minutes']} min: {total} steps ({total * rows_per_step} rows)")
            run["fitted"] = True
            run["rows_budget"] = total * rows_per_step
            L.dump_json(cfgp, run)
        if step % 10 == 0 or step == total:
            log(f"step {step}/{total} loss {float(loss):.4f} " + " ".join(f"{k} {v:.4f}" for k, v in ema.items()) +
                f" gnorm {float(gn):.2f} lr {lr:.2e} rows {extra['rows']} wall {extra['wall']:.0f}s "
                f"rows/s {extra['rows'] / max(1e-9, extra['wall']):.0f}")
        if step % a.ckpt_every == 0 or step == total:
            L.save_ckpt(ck, model, opt, step, extra)
    torch.save({"model": model.state_dict(), "config": c.to_dict(), "steps": step, "rows": extra["rows"],
                "wall": extra["wall"], "final_ema": ema, "run": run}, os.path.join(a.run, "final.pt"))
    L.dump_json(os.path.join(a.run, "final.json"), {"params": n_par, "steps": step, "rows": extra["rows"], "wall_s": extra["wall"],
                                                    "final_ema": ema})
    log("DONE " + json.dumps({"steps": step, "rows": extra["rows"], "wall_s": round(extra["wall"]), "ema": ema}))


def probe(a):
    L.setup_torch(THREADS)
    emb, meta = load_emb()
    data = SeqData(a.data, a.block)
    for version in (1, 2):
        for bf16 in (False, True):
            torch.manual_seed(0)
            model = DFlashDraft(default_config(version, emb, meta, a.layers, a.block))
            opt = make_opt(model, 6e-4, 0.01)
            ts = []
            for step in range(a.steps):
                feats, toks, lens, anchors = data.batch(step, 1, a.n_seq, a.n_anchor)
                t0 = time.time()
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                    loss, st = block_loss(model, emb, feats, toks, lens, anchors, DRAFT_GAMMA)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                ts.append(time.time() - t0)
            dt = sum(ts[1:]) / max(1, len(ts) - 1)
            print(f"v{version} bf16={bf16}: {dt:.2f}s/step, {a.n_seq * a.n_anchor * (a.block - 1) / dt:.0f} block rows/s "
                  f"(loss {float(loss):.3f})", flush=True)


@torch.no_grad()
def accept(a):
    """Teacher-forced acceptance on the target's greedy responses: for every anchor (bonus position) the
    draft proposes B-1 tokens exactly as in a speculative round (greedy; v2 with the selector walk), and
    the accepted length is the leading run matching the target's greedy continuation. tau = 1 + mean."""
    L.setup_torch(THREADS)
    emb, _ = load_emb()
    ck = torch.load(a.ckpt, map_location="cpu")
    c = DraftConfig(**ck["config"])
    model = DFlashDraft(c)
    model.load_state_dict(ck["model"])
    model.eval()
    data = SeqData(a.data, c.block_size)
    res = {}
    for B in a.blocks:
        per = {}
        for k in range(data.n):
            t, f = data.seq(k)
            t = torch.from_numpy(t.astype(np.int64))
            f = torch.from_numpy(f.astype(np.float32))
            n = len(t)
            end = n - 1 if not a.max_resp else min(n - 1, int(data.rstart[k]) + a.max_resp)
            anchors = list(range(int(data.rstart[k]), end, a.stride))
            if not anchors:
                continue
            A = len(anchors)
            anc = torch.tensor([anchors])
            h = model.block_hidden(emb, f.unsqueeze(0), anc, t[anc], B)[0]    # [A, B, H]
            lg = DFlashDraft.logits(emb, h[:, 1:]).float()
            if c.version == 2:
                toks = selector_walk(model, h[:, 1:], lg, t[anc][0])
            else:
                toks = lg.argmax(-1)
            for i, an in enumerate(anchors):
                m = 0
                while m < B - 1 and an + 1 + m < n and int(toks[i, m]) == int(t[an + 1 + m]):
                    m += 1
                ty = TYPES[int(data.type[k])]
                per.setdefault(ty, []).append(1 + m)
        res[B] = {ty: float(np.mean(v)) for ty, v in per.items()}
        res[B]["all"] = float(np.mean([x for v in per.values() for x in v]))
        print(f"B={B}: " + " ".join(f"{k}={v:.2f}" for k, v in res[B].items()), flush=True)
    if a.out:
        L.dump_json(a.out, {str(k): v for k, v in res.items()})


def selector_walk(model, h, lg, bonus):
    """Greedy selector walk for A blocks at once: h [A, B-1, H], lg [A, B-1, V], bonus [A]."""
    c = model.c
    unary, cand = torch.topk(lg, c.sel_top_k, dim=-1)
    g = model.sel_hidden(h)
    prev = bonus.clone()
    out = []
    for t in range(h.shape[1]):
        ag = model.sel_pred[prev] * g[:, t]
        sc = unary[:, t] + (model.sel_succ[cand[:, t]] * ag.unsqueeze(1)).sum(-1)
        j = sc.argmax(-1)
        prev = cand[:, t].gather(1, j.unsqueeze(1)).squeeze(1)
        out.append(prev)
    return torch.stack(out, dim=1)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("train")
    p.add_argument("--version", type=int, default=1)
    p.add_argument("--run", required=True)
    p.add_argument("--init", default=None)
    p.add_argument("--init-gguf", default=None, help="warm start from an exported draft file (warm_start)")
    p.add_argument("--data", default="train")
    p.add_argument("--rows", type=int, default=1_500_000)
    p.add_argument("--n-seq", type=int, default=16)
    p.add_argument("--n-anchor", type=int, default=16)
    p.add_argument("--lr", type=float, default=6e-4)
    p.add_argument("--wd", type=float, default=0.01)
    p.add_argument("--gamma", type=float, default=DRAFT_GAMMA)
    p.add_argument("--layers", type=int, default=DRAFT_LAYERS, help="draft layers (taps: z-lab's rule)")
    p.add_argument("--block", type=int, default=DRAFT_BLOCK, help="training block size")
    p.add_argument("--sel-weight", type=float, default=1.0)
    p.add_argument("--bf16", type=int, default=1)
    p.add_argument("--seed", type=int, default=20261130)
    p.add_argument("--ckpt-every", type=int, default=50)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--max-minutes", type=float, default=0,
                   help="shrink the row budget (once, after 10 steps) to fit this many minutes")
    p = sub.add_parser("probe")
    p.add_argument("--data", default="train")
    p.add_argument("--layers", type=int, default=DRAFT_LAYERS)
    p.add_argument("--block", type=int, default=DRAFT_BLOCK)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--n-seq", type=int, default=16)
    p.add_argument("--n-anchor", type=int, default=16)
    p = sub.add_parser("accept")
    p.add_argument("--ckpt", required=True)
    p.add_argument("--data", default="eval")
    p.add_argument("--blocks", type=int, nargs="+", default=[16])
    p.add_argument("--stride", type=int, default=1)
    p.add_argument("--out", default=None)
    p.add_argument("--max-resp", type=int, default=0, help="only anchors within the first N response tokens")
    a = ap.parse_args()
    {"train": train, "probe": probe, "accept": accept}[a.cmd](a)


if __name__ == "__main__":
    main()
