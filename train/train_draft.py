"""Train a DFlash (v1) or DFlash2 (v2) draft on the target's own responses (dflash.md §5).

  train_draft.py train --version 1 --run work/drafts/v1 [--rows N] [--resume]
  train_draft.py train --version 2 --run work/drafts/v2 --init work/drafts/v1/final.pt [--rows N] [--resume]
  train_draft.py branch --run R --out R-anneal --decay-steps N   an annealing copy of a constant-rate run
  train_draft.py probe            fp32 vs bf16-autocast step time on real batches
  train_draft.py accept --ckpt work/drafts/v1/final.pt [--data eval]   offline teacher-forced acceptance

Frozen target embedding/head (read back from the target GGUF: $PF_TARGET, else models/pf-target-f16.gguf). Random anchors over response
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
import shutil
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dflash_model import (DRAFT_BLOCK, DRAFT_GAMMA, DRAFT_LAYERS, DraftConfig, DFlashDraft,  # noqa: E402
                          block_loss, build_target_layer_ids, propose)
import train_lib as L  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, ".."))
DR = os.environ.get("PF_DRAFT_WORK") or os.path.join(HERE, "work", "drafts")   # make_drafts.sh sets it
# torch threads per process: PF_TORCH_THREADS, default 2 (one niced process takes both cores when they
# are idle; run it with OMP_WAIT_POLICY=passive so a waiting thread yields instead of spinning).
THREADS = int(os.environ.get("PF_TORCH_THREADS", "2"))
TYPES = ["extraction", "math", "code", "rewrite", "summary", "qa", "chat", "long"]   # draft_data.SEQ_TYPES


class SeqData:
    """Sequences of the target's responses with their tapped features (<name>_feats.npy, all the layers
    `taps` computed) and, when present, the target's top-k next-token distribution after every row
    (<name>_topk_ids.npy / _topk_logp.npy, for distillation). select(taps) picks a draft's columns."""

    def __init__(self, name, block):
        ix = np.load(os.path.join(DR, name + "_index.npz"))
        self.off, self.len, self.rstart, self.type = ix["offset"], ix["length"], ix["rstart"], ix["type"]
        self.feats = np.load(os.path.join(DR, name + "_feats.npy"), mmap_mode="r")
        self.toks = np.load(os.path.join(DR, name + "_toks.npy"))
        self.taps = [int(x) for x in ix["taps"]]
        self.cols = None
        tk = os.path.join(DR, name + "_topk_ids.npy")
        self.tk_ids = np.load(tk, mmap_mode="r") if os.path.exists(tk) else None
        self.tk_lp = np.load(os.path.join(DR, name + "_topk_logp.npy"), mmap_mode="r") if self.tk_ids is not None else None
        self.B = block
        self.order = np.argsort(self.len, kind="stable")   # length-sorted: batches of similar length
        self.n = len(self.len)

    def select(self, taps):
        """Read only the columns of these tapped layers (each must have been computed)."""
        missing = [t for t in taps if t not in self.taps]
        assert not missing, f"the features tap {self.taps}; the draft needs {taps}"
        if taps != self.taps:
            H = self.feats.shape[1] // len(self.taps)
            self.cols = np.concatenate([np.arange(self.taps.index(t) * H, (self.taps.index(t) + 1) * H) for t in taps])
        return self

    def n_resp_tokens(self):
        return int((self.len - self.rstart).sum())

    def seq(self, k):
        o, n = self.off[k], self.len[k]
        f = self.feats[o:o + n]
        return self.toks[o:o + n], (f if self.cols is None else f[:, self.cols])

    def batch(self, step, seed, n_seq, n_anchor, teacher=False, hard=0.0, hard_pow=1.0):
        """hard: the share of each sequence's anchors drawn where the target was unsure of the bonus
        token (weight 1 - p_target(bonus), from the top-k distribution of the row before it), the
        rest uniformly: rounds of speculative decoding start after the draft's misses, which come
        where the target is unsure, so this moves training towards the anchors rounds meet.
        hard_pow sharpens the weight to (1 - p)^hard_pow."""
        rs = np.random.RandomState((seed * 1000003 + step) % (2 ** 31))
        start = rs.randint(0, max(1, self.n - n_seq + 1))
        idx = self.order[start:start + n_seq]
        T = int(self.len[idx].max())
        Fd = self.feats.shape[1] if self.cols is None else len(self.cols)
        feats = np.zeros((len(idx), T, Fd), dtype=np.float32)
        toks = np.zeros((len(idx), T + self.B), dtype=np.int64)
        anchors = np.full((len(idx), n_anchor), -1, dtype=np.int64)
        if teacher:
            K = self.tk_ids.shape[1]
            t_ids = np.zeros((len(idx), T, K), dtype=np.int64)
            t_lp = np.full((len(idx), T, K), -1e4, dtype=np.float32)
        for r, k in enumerate(idx):
            t, f = self.seq(k)
            n = len(t)
            feats[r, :n] = f
            toks[r, :n] = t
            if teacher:
                o = self.off[k]
                t_ids[r, :n] = self.tk_ids[o:o + n]
                t_lp[r, :n] = self.tk_lp[o:o + n]
            cand = np.arange(self.rstart[k], n - 1)   # bonus positions with at least one label
            if len(cand) > n_anchor and hard > 0:
                cand = self.hard_anchors(rs, k, t, cand, n_anchor, hard, hard_pow)
            elif len(cand) > n_anchor:
                cand = np.sort(rs.choice(cand, n_anchor, replace=False))
            anchors[r, :len(cand)] = cand
        out = (torch.from_numpy(feats), torch.from_numpy(toks), torch.from_numpy(self.len[idx].astype(np.int64)),
               torch.from_numpy(anchors))
        return out + ((torch.from_numpy(t_ids), torch.from_numpy(t_lp)),) if teacher else out + (None,)

    def hard_anchors(self, rs, k, t, cand, n_anchor, hard, hard_pow):
        rows = self.off[k] + cand - 1               # row a-1 holds the target's distribution of token a
        hit = self.tk_ids[rows] == t[cand][:, None]
        lp = np.where(hit, self.tk_lp[rows], -np.inf).max(1)
        w = (1.0 - np.exp(lp)) ** hard_pow + 1e-3  # a bonus outside the top-k: p ~ 0, weight ~ 1
        n_h = int(round(hard * n_anchor))
        pick = rs.choice(cand, n_h, replace=False, p=w / w.sum())
        rest = np.setdiff1d(cand, pick)
        return np.sort(np.concatenate([pick, rs.choice(rest, n_anchor - n_h, replace=False)]))


def load_emb():
    from gguf_writer import read_gguf
    meta, t = read_gguf(L.target_gguf())
    return torch.from_numpy(t["token_embd.weight"].astype(np.float32)), meta


def make_opt(model, lr, wd):
    decay, no = [], []
    for n, p in model.named_parameters():
        (decay if p.dim() == 2 else no).append(p)   # norms and the conv bases (identity init) not decayed
    return torch.optim.AdamW([{"params": decay, "weight_decay": wd}, {"params": no, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.95), foreach=True)


def default_config(version, emb, meta, layers=DRAFT_LAYERS, block=DRAFT_BLOCK, taps=None, ffn=768):
    taps = taps or build_target_layer_ids(meta["qwen3.block_count"], layers)
    return DraftConfig(hidden=emb.shape[1], n_layers=layers, n_heads=meta["qwen3.attention.head_count"],
                       n_kv_heads=meta["qwen3.attention.head_count_kv"],
                       head_dim=meta["qwen3.attention.key_length"], ffn=ffn,
                       rope_theta=float(meta["qwen3.rope.freq_base"]),
                       eps=float(meta["qwen3.attention.layer_norm_rms_epsilon"]), vocab_size=emb.shape[0],
                       target_hidden=emb.shape[1], tap_layers=taps, block_size=block,
                       mask_id=L.mask_token_id(meta["tokenizer.ggml.tokens"]), version=version)


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


@torch.no_grad()
def init_from_target(model):
    """The draft's layers start as the target's UPPER layers (draft layer i <- target layer
    n_target - n_draft + i): the same width, heads and FFN, so the draft begins with computation the
    target does on top of the rows it taps. Norms, projections and QK-norms are copied; the conv and
    selector keep their identity / zero initialisation."""
    from gguf_writer import read_gguf
    _, t = read_gguf(L.target_gguf())
    n_t = max(int(k.split(".")[1]) for k in t if k.startswith("blk.")) + 1
    names = {"attn_norm.weight": "attn_norm.weight", "q_proj.weight": "attn_q.weight", "k_proj.weight": "attn_k.weight",
             "v_proj.weight": "attn_v.weight", "o_proj.weight": "attn_output.weight", "q_norm.weight": "attn_q_norm.weight",
             "k_norm.weight": "attn_k_norm.weight", "ffn_norm.weight": "ffn_norm.weight",
             "gate_proj.weight": "ffn_gate.weight", "up_proj.weight": "ffn_up.weight", "down_proj.weight": "ffn_down.weight"}
    src = list(range(n_t - len(model.layers), n_t))
    for i, layer in enumerate(model.layers):
        sd = layer.state_dict()
        for ours, theirs in names.items():
            w = torch.from_numpy(t[f"blk.{src[i]}.{theirs}"].astype(np.float32))
            assert sd[ours].shape == w.shape, f"draft {ours} {tuple(sd[ours].shape)} vs target {tuple(w.shape)}"
            sd[ours].copy_(w)
    return f"layers initialised from target layers {src}"


def lr_wsd(step, total, peak, warm, decay_frac):
    """Warm-up, then constant, then a linear decay to 0 over the last decay_frac of the budget: a run
    stopped early has trained at full rate (its EMA weights are what gets evaluated and exported)."""
    if step < warm:
        return peak * (step + 1) / warm
    d0 = int(total * (1 - decay_frac))
    return peak if step < d0 else peak * max(0.0, (total - step) / max(1, total - d0))


class EMA:
    """Exponential moving average of the parameters (what the learning curve and the export read)."""

    def __init__(self, model, decay):
        self.decay = decay
        self.p = {k: v.detach().clone() for k, v in model.state_dict().items()}

    @torch.no_grad()
    def update(self, model):
        for k, v in model.state_dict().items():
            self.p[k].mul_(self.decay).add_(v.detach(), alpha=1 - self.decay)

    def model(self, c):
        m = DFlashDraft(c)
        m.load_state_dict(self.p)
        return m.eval()


CURVE_ROWS = [250_000 * 2 ** i for i in range(12)]   # 0.25M, 0.5M, 1M, ... 512M


def train(a):
    L.setup_torch(THREADS)
    os.makedirs(a.run, exist_ok=True)
    log = L.Logger(os.path.join(a.run, "train.log"))
    emb, meta = load_emb()
    cfgp = os.path.join(a.run, "run_config.json")
    if a.resume and os.path.exists(cfgp):
        run = json.load(open(cfgp))
    else:
        taps = [int(x) for x in a.taps.split(",")] if a.taps else None
        c0 = default_config(a.version, emb, meta, a.layers, a.block, taps, a.ffn)
        run = {"draft": c0.to_dict(), "seed": a.seed, "rows_budget": a.rows, "n_seq": a.n_seq,
               "n_anchor": a.n_anchor, "lr": a.lr, "warmup_frac": a.warmup_frac, "wd": a.wd, "gamma": a.gamma,
               "grad_clip": 1.0, "bf16": bool(a.bf16), "max_minutes": a.max_minutes, "sel_weight": a.sel_weight,
               "init": a.init, "init_gguf": a.init_gguf, "init_target": bool(a.init_target), "data": a.data,
               "mix": a.mix,
               "distill": a.distill, "schedule": a.schedule, "decay_frac": a.decay_frac, "ema": a.ema,
               "eval_data": a.eval_data, "anchor_hard": a.anchor_hard, "anchor_pow": a.anchor_pow,
               "curve_rows": [int(float(x) * 1e6) for x in a.curve_rows.split(",")] if a.curve_rows else None}
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
    if run.get("init_target"):
        log(init_from_target(model))
    opt = make_opt(model, run["lr"], run["wd"])
    data = SeqData(run["data"], c.block_size).select(c.tap_layers)
    # --mix NAME:F: a share F of the steps draw their batch from the features set NAME instead,
    # spread evenly over the run (step s is a mix step when floor((s+1)F) > floor(sF))
    mix_name, mix_frac = (run["mix"].split(":")[0], float(run["mix"].split(":")[1])) if run.get("mix") else (None, 0.0)
    mix = SeqData(mix_name, c.block_size).select(c.tap_layers) if mix_name else None
    distill = run.get("distill", 0.0)
    assert not distill or data.tk_ids is not None, f"--distill needs {run['data']}_topk_ids.npy (taps --topk)"
    assert not run.get("anchor_hard") or data.tk_ids is not None, \
        f"--anchor-hard needs {run['data']}_topk_ids.npy (taps --topk)"
    rows_per_step = run["n_seq"] * run["n_anchor"] * (c.block_size - 1)
    total = max(1, run["rows_budget"] // rows_per_step)
    warm = max(1, int(round(run["warmup_frac"] * total)))
    ck = os.path.join(a.run, "ckpt.pt")
    step, extra = 0, {"wall": 0.0, "rows": 0, "ema": {}}
    ema_w = EMA(model, run["ema"]) if run.get("ema") else None
    if a.resume and os.path.exists(ck):
        step, extra = L.load_ckpt(ck, model, opt)
        if ema_w is not None:
            ema_w.p = torch.load(ck, map_location="cpu")["ema_weights"]
        log(f"resumed at step {step} ({extra['rows']} rows, {extra['wall'] / 3600:.2f} h)")
    n_par = sum(p.numel() for p in model.parameters())
    log(f"DFlash{'2' if c.version == 2 else ''} draft: {n_par} params ({n_par / 1e6:.2f}M), {c.n_layers} layers, "
        f"taps {c.tap_layers}, ffn {c.ffn}; {data.n} sequences, {data.n_resp_tokens()} response tokens"
        + (f" (+ {mix_name}: {mix.n} sequences, {mix.n_resp_tokens()} response tokens, {mix_frac:.0%} of the steps)" if mix else "")
        + f"; {total} steps x "
        f"{rows_per_step} block rows ({run['n_seq']} seqs x {run['n_anchor']} anchors x {c.block_size - 1}); "
        f"warm-up {warm}; distill {distill}; schedule {run.get('schedule', 'cosine')}; {THREADS} threads")
    eval_data = SeqData(run["eval_data"], c.block_size).select(c.tap_layers) if run.get("eval_data") else None
    curve_p = os.path.join(a.run, "curve.jsonl")
    done_curve = {json.loads(l)["rows"] for l in open(curve_p)} if os.path.exists(curve_p) else set()

    def save():
        L.save_ckpt(ck, model, opt, step, extra)
        if ema_w is not None:   # the EMA weights ride in the same file (rewritten whole)
            blob = torch.load(ck, map_location="cpu")
            blob["ema_weights"] = ema_w.p
            torch.save(blob, ck + ".tmp")
            os.replace(ck + ".tmp", ck)

    def eval_curve(rows):
        m = ema_w.model(c) if ema_w is not None else model.eval()
        t0 = time.time()
        res = eval_accept(m, emb, eval_data, [4, 8], stride=2)
        model.train()
        row = {"rows": rows, "step": step, "wall_h": round(extra["wall"] / 3600, 3), **res}
        with open(curve_p, "a") as f:
            f.write(json.dumps(row) + "\n")
        log(f"curve at {rows} rows: acc1(B=4) {res['acc1_4']:.3f} tau B=4 {res['tau_4']:.3f} B=8 {res['tau_8']:.3f} "
            f"({time.time() - t0:.0f}s)")

    model.train()
    t_last, t_ckpt = time.time(), time.time()
    ema = extra.setdefault("ema", {})
    while step < total:
        if run.get("schedule") == "wsd":
            lr = lr_wsd(step, total, run["lr"], warm, run["decay_frac"])
        else:
            lr = L.lr_at(step, total, run["lr"], warm, 0.0)
        L.set_lr(opt, lr)
        src = mix if mix is not None and int((step + 1) * mix_frac) > int(step * mix_frac) else data
        feats, toks, lens, anchors, teacher = src.batch(step, run["seed"], run["n_seq"], run["n_anchor"],
                                                         teacher=bool(distill), hard=run.get("anchor_hard", 0.0),
                                                         hard_pow=run.get("anchor_pow", 1.0))
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=run["bf16"]):
            loss, st = block_loss(model, emb, feats, toks, lens, anchors, run["gamma"], run["sel_weight"],
                                  teacher, distill)
        gn = L.optimizer_step(model, opt, loss, run["grad_clip"])
        if ema_w is not None:
            ema_w.update(model)
        step += 1
        now = time.time()
        extra["wall"] += now - t_last
        rows_before = extra["rows"]
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
            rate = extra["rows"] / max(1e-9, extra["wall"])
            log(f"step {step}/{total} loss {float(loss):.4f} " + " ".join(f"{k} {v:.4f}" for k, v in ema.items()) +
                f" gnorm {float(gn):.2f} lr {lr:.2e} rows {extra['rows']} / {total * rows_per_step} "
                f"wall {extra['wall']:.0f}s rows/s {rate:.0f} eta {(total - step) * rows_per_step / max(1, rate) / 3600:.1f}h")
        if now - t_ckpt >= a.ckpt_minutes * 60 or step == total:
            save()
            t_ckpt = time.time()
        if eval_data is not None:
            for r in run.get("curve_rows") or CURVE_ROWS:
                if rows_before < r <= extra["rows"] and r not in done_curve:
                    save()
                    eval_curve(r)
                    done_curve.add(r)
    final_sd = ema_w.p if ema_w is not None else model.state_dict()
    torch.save({"model": final_sd, "config": c.to_dict(), "steps": step, "rows": extra["rows"],
                "wall": extra["wall"], "final_ema": ema, "run": run}, os.path.join(a.run, "final.pt"))
    L.dump_json(os.path.join(a.run, "final.json"), {"params": n_par, "steps": step, "rows": extra["rows"], "wall_s": extra["wall"],
                                                    "final_ema": ema})
    if eval_data is not None:
        eval_curve(extra["rows"])
    log("DONE " + json.dumps({"steps": step, "rows": extra["rows"], "wall_s": round(extra["wall"]), "ema": ema}))


def snapshot(a):
    """A final.pt-style file from a running or stopped run's checkpoint (its EMA weights when kept), so
    a draft can be exported at any stop while the training goes on."""
    run = json.load(open(os.path.join(a.run, "run_config.json")))
    ck = torch.load(os.path.join(a.run, "ckpt.pt"), map_location="cpu")
    sd = ck.get("ema_weights", ck["model"])
    torch.save({"model": sd, "config": run["draft"], "steps": ck["step"], "rows": ck["extra"]["rows"],
                "wall": ck["extra"]["wall"], "run": run}, a.out)
    print(f"snapshot of {a.run} at step {ck['step']}, {ck['extra']['rows']} rows -> {a.out}", flush=True)


def branch(a):
    """An annealing branch of a warmup-stable-decay run: a copy of its checkpoint whose budget ends
    --decay-steps after the checkpoint, the rate decaying linearly to 0 over exactly those steps. The
    run itself is untouched and goes on at constant rate; `train --run OUT --resume` trains the branch
    (its curve is measured once, at the end)."""
    ck = torch.load(os.path.join(a.run, "ckpt.pt"), map_location="cpu")
    run = json.load(open(os.path.join(a.run, "run_config.json")))
    c = DraftConfig(**run["draft"])
    rows_per_step = run["n_seq"] * run["n_anchor"] * (c.block_size - 1)
    step, total = ck["step"], ck["step"] + a.decay_steps
    run["rows_budget"] = total * rows_per_step
    run["decay_frac"] = a.decay_steps / total
    while int(total * (1 - run["decay_frac"])) < step:   # float rounding: the decay starts at `step`
        run["decay_frac"] -= 1e-9
    run["curve_rows"] = [10 ** 12]                        # no intermediate points: the end is measured
    run["branched_from"] = {"run": a.run, "step": step, "rows": ck["extra"]["rows"]}
    if a.mix:
        run["mix"] = a.mix
    os.makedirs(a.out, exist_ok=True)
    shutil.copyfile(os.path.join(a.run, "ckpt.pt"), os.path.join(a.out, "ckpt.pt"))
    L.dump_json(os.path.join(a.out, "run_config.json"), run)
    print(f"branch of {a.run} at step {step} ({ck['extra']['rows']} rows) -> {a.out}: decay over "
          f"{a.decay_steps} steps to step {total}", flush=True)


def probe(a):
    L.setup_torch(THREADS)
    emb, meta = load_emb()
    data = SeqData(a.data, a.block).select(build_target_layer_ids(meta["qwen3.block_count"], a.layers))
    for version in (1, 2):
        for bf16 in (False, True):
            torch.manual_seed(0)
            model = DFlashDraft(default_config(version, emb, meta, a.layers, a.block))
            opt = make_opt(model, 6e-4, 0.01)
            ts = []
            for step in range(a.steps):
                feats, toks, lens, anchors, _ = data.batch(step, 1, a.n_seq, a.n_anchor)
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
def eval_accept(model, emb, data, blocks, stride=1, max_resp=0):
    """Teacher-forced acceptance on the target's greedy responses: for every anchor (bonus position) the
    draft proposes B-1 tokens exactly as in a speculative round (greedy; v2 with the selector walk), and
    the accepted length is the leading run matching the target's greedy continuation. Returns
    {tau_B, acc1_B (first position right), tau_B_<type>} for each B; tau = 1 + mean accepted.
    With stride 1 (every anchor) also the rounds greedy speculative decoding would run: the committed
    text is the target's greedy text whatever is accepted, so the draft's proposal at an anchor is the
    teacher-forced one, and the rounds walk the anchors from the response's start, each next anchor
    after the accepted drafts and the bonus: rtau_B, racc1_B, rtau_B_<type>. Rounds start after the
    draft's misses, so they see the harder positions more often than the mean over all anchors."""
    c = model.c
    res = {}
    for B in blocks:
        per, first, rper, rfirst = {}, [], {}, []
        for k in range(data.n):
            t, f = data.seq(k)
            t = torch.from_numpy(t.astype(np.int64))
            f = torch.from_numpy(np.asarray(f, dtype=np.float32))
            n = len(t)
            end = n - 1 if not max_resp else min(n - 1, int(data.rstart[k]) + max_resp)
            anchors = list(range(int(data.rstart[k]), end, stride))
            if not anchors:
                continue
            anc = torch.tensor([anchors])
            h = model.block_hidden(emb, f.unsqueeze(0), anc, t[anc], B)[0]    # [A, B, H]
            lg = DFlashDraft.logits(emb, h[:, 1:]).float()
            toks = selector_walk(model, h[:, 1:], lg, t[anc][0]) if c.version == 2 else lg.argmax(-1)
            kept = {}
            for i, an in enumerate(anchors):
                m = 0
                while m < B - 1 and an + 1 + m < n and int(toks[i, m]) == int(t[an + 1 + m]):
                    m += 1
                kept[an] = m
                per.setdefault(TYPES[int(data.type[k])], []).append(1 + m)
                first.append(m > 0)
            an = int(data.rstart[k])
            while stride == 1 and an in kept:
                rper.setdefault(TYPES[int(data.type[k])], []).append(1 + kept[an])
                rfirst.append(kept[an] > 0)
                an += kept[an] + 1
        res[f"tau_{B}"] = float(np.mean([x for v in per.values() for x in v]))
        res[f"acc1_{B}"] = float(np.mean(first))
        res.update({f"tau_{B}_{ty}": float(np.mean(v)) for ty, v in per.items()})
        if rfirst:
            res[f"rtau_{B}"] = float(np.mean([x for v in rper.values() for x in v]))
            res[f"racc1_{B}"] = float(np.mean(rfirst))
            res.update({f"rtau_{B}_{ty}": float(np.mean(v)) for ty, v in rper.items()})
    return res


def accept(a):
    """Offline acceptance of a trained checkpoint (see eval_accept)."""
    L.setup_torch(THREADS)
    emb, _ = load_emb()
    if a.ckpt.endswith(".gguf"):   # an exported draft (the committed one, say), in float32
        from export_draft import draft_from_gguf
        model, _ = draft_from_gguf(a.ckpt, torch.float32)
        c = model.c
    else:
        ck = torch.load(a.ckpt, map_location="cpu")
        c = DraftConfig(**ck["config"])
        model = DFlashDraft(c)
        model.load_state_dict(ck["model"])
    model.eval()
    data = SeqData(a.data, c.block_size).select(c.tap_layers)
    res = eval_accept(model, emb, data, a.blocks, a.stride, a.max_resp)
    for B in a.blocks:
        print(f"B={B}: " + " ".join(f"{k}={v:.3f}" for k, v in res.items()
                                    if k.startswith((f"tau_{B}", f"rtau_{B}")) or k in (f"acc1_{B}", f"racc1_{B}")),
              flush=True)
    if a.out:
        L.dump_json(a.out, res)


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
    p.add_argument("--mix", default="", help="NAME:F: a share F of the steps train on the features set NAME")
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
    p.add_argument("--ckpt-minutes", type=float, default=10, help="checkpoint every this many minutes of training")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--taps", default="", help="0-based target layers the draft reads (default: z-lab's rule)")
    p.add_argument("--ffn", type=int, default=768, help="draft FFN width (the target's, 1024, for --init-target)")
    p.add_argument("--init-target", action="store_true", help="draft layers start as the target's upper layers")
    p.add_argument("--distill", type=float, default=0.0, help="weight of the target top-k distillation term")
    p.add_argument("--anchor-hard", type=float, default=0.0,
                   help="share of anchors drawn where the target is unsure of the bonus token (SeqData.batch)")
    p.add_argument("--anchor-pow", type=float, default=1.0, help="--anchor-hard's weight is (1 - p)^this")
    p.add_argument("--schedule", default="cosine", choices=["cosine", "wsd"])
    p.add_argument("--decay-frac", type=float, default=0.1, help="wsd: the final linear decay's share of the budget")
    p.add_argument("--warmup-frac", type=float, default=0.04)
    p.add_argument("--ema", type=float, default=0.0, help="EMA decay of the weights evaluated and exported (0: none)")
    p.add_argument("--eval-data", default="", help="features set for the learning curve (e.g. eval)")
    p.add_argument("--curve-rows", default="", help="millions of rows at which the curve is measured "
                   "(default 0.25, 0.5, 1, 2, 4, ...; each point costs a pass over the eval features)")
    p.add_argument("--max-minutes", type=float, default=0,
                   help="shrink the row budget (once, after 10 steps) to fit this many minutes")
    p = sub.add_parser("snapshot")
    p.add_argument("--run", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("branch")
    p.add_argument("--run", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--decay-steps", type=int, required=True)
    p.add_argument("--mix", default="", help="NAME:F: the branch trains a share F of its steps on the features set NAME")
    p = sub.add_parser("probe")
    p.add_argument("--data", default="train")
    p.add_argument("--layers", type=int, default=DRAFT_LAYERS)
    p.add_argument("--block", type=int, default=DRAFT_BLOCK)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--n-seq", type=int, default=16)
    p.add_argument("--n-anchor", type=int, default=16)
    p = sub.add_parser("accept")
    p.add_argument("--ckpt", required=True, help="a checkpoint (.pt) or an exported draft (.gguf)")
    p.add_argument("--data", default="eval")
    p.add_argument("--blocks", type=int, nargs="+", default=[16])
    p.add_argument("--stride", type=int, default=1)
    p.add_argument("--out", default=None)
    p.add_argument("--max-resp", type=int, default=0, help="only anchors within the first N response tokens")
    a = ap.parse_args()
    {"train": train, "probe": probe, "accept": accept, "snapshot": snapshot, "branch": branch}[a.cmd](a)


if __name__ == "__main__":
    main()
