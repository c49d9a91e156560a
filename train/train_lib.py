"""Shared training loop pieces (target now, DFlash drafts later).

Budget in TOKENS (window tokens processed), fixed seeds, deterministic data order derived from
(seed, epoch), checkpoint + exact resume (model, optimizer, step, RNG), log to a file.
"""
import json
import math
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

TYPES = ["extraction", "math", "code", "rewrite", "summary", "qa", "chat"]
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
MASK_TOKEN = "<|fim_pad|>"   # the block's masked rows (dflash.mask_token_id): Qwen3 vocabularies have it


def target_gguf():
    """The target the drafts are trained for: $PF_TARGET (make drafts TARGET=...), else the stand-in."""
    return os.environ.get("PF_TARGET") or os.path.join(ROOT, "models", "pf-target-f16.gguf")


def mask_token_id(tokens):
    """The id of MASK_TOKEN in a target's vocabulary (one error line when the vocabulary lacks it)."""
    try:
        return tokens.index(MASK_TOKEN)
    except ValueError:
        raise SystemExit(f"{target_gguf()}: the vocabulary has no {MASK_TOKEN} token for the draft's masked rows")


def setup_torch(threads=2):
    torch.set_num_threads(threads)
    torch.set_flush_denormal(True)


class WindowData:
    """Packed fixed-length windows: ids [N,T], weights [N,T]; batches by a seeded permutation."""

    def __init__(self, data_dir, seed):
        self.ids = np.load(os.path.join(data_dir, "train_ids.npy"))
        self.w = np.load(os.path.join(data_dir, "train_w.npy"))
        self.n, self.T = self.ids.shape
        self.seed = seed

    def batch(self, step, bsz):
        """Deterministic batch for a global step (independent of resume point)."""
        per_epoch = self.n // bsz
        epoch, k = divmod(step, per_epoch)
        perm = np.random.RandomState(self.seed + 1000 * epoch).permutation(self.n)
        idx = np.sort(perm[k * bsz:(k + 1) * bsz])
        ids = torch.from_numpy(self.ids[idx].astype(np.int64))
        w = torch.from_numpy(self.w[idx].astype(np.float32))
        return ids, w


def weighted_lm_loss(logits, ids, w):
    """Next-token CE; target position t+1 carries weight w[t+1]. Returns (loss, weight sum)."""
    lg = logits[:, :-1].reshape(-1, logits.shape[-1]).float()
    tgt = ids[:, 1:].reshape(-1)
    ww = w[:, 1:].reshape(-1)
    ce = F.cross_entropy(lg, tgt, reduction="none")
    s = ww.sum().clamp_min(1e-6)
    return (ce * ww).sum() / s, s


def lr_at(step, total, peak, warmup, min_ratio=0.1):
    if step < warmup:
        return peak * (step + 1) / warmup
    p = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * p)))


def set_lr(opt, lr):
    for g in opt.param_groups:
        g["lr"] = lr


def optimizer_step(model, opt, loss, grad_clip):
    """Backward, gradients clipped to grad_clip, one optimizer step; returns the norm before clipping."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    opt.step()
    return gn


@torch.no_grad()
def eval_per_task(model_fn, val, bf16=False, max_items=None):
    """val: list of {"type","ids","w"}; loss on RESPONSE tokens only (w == 1). Returns {type: loss}."""
    tot, cnt = {}, {}
    for k, e in enumerate(val):
        if max_items and cnt.get(e["type"], 0) >= max_items:
            continue
        ids = torch.tensor([e["ids"]])
        w = torch.tensor([[1.0 if x >= 1.0 else 0.0 for x in e["w"]]])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model_fn(ids)
        lg = logits[0, :-1].float()
        ce = F.cross_entropy(lg, ids[0, 1:], reduction="none")
        ww = w[0, 1:]
        tot[e["type"]] = tot.get(e["type"], 0.0) + float((ce * ww).sum())
        cnt[e["type"]] = cnt.get(e["type"], 0) + float(ww.sum())
    out = {t: tot[t] / cnt[t] for t in tot}
    out["all"] = sum(tot.values()) / sum(cnt.values())
    return out


class Logger:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)

    def __call__(self, *a):
        s = " ".join(str(x) for x in a)
        print(s, flush=True)
        self.f.write(time.strftime("%H:%M:%S ") + s + "\n")


def save_ckpt(path, model, opt, step, extra):
    tmp = path + ".tmp"
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                "rng": torch.get_rng_state(), "extra": extra}, tmp)
    os.replace(tmp, path)


def load_ckpt(path, model, opt):
    ck = torch.load(path, map_location="cpu")
    model.load_state_dict(ck["model"])
    if opt is not None:
        opt.load_state_dict(ck["opt"])
    torch.set_rng_state(ck["rng"])
    return ck["step"], ck.get("extra", {})


def train_loop(model, opt, cfg, total, step, extra, batch_loss, log, ckpt_path, evaluate,
               lr_scale=None, on_ckpt=None, log_every=20, ema_decay=0.98):
    """The step loop every recipe shares, from `step` to `total`.

    batch_loss(step) -> (loss, tokens in the batch, a label for the log line); evaluate(step, final)
    runs with the model in eval mode. cfg gives peak_lr, warmup_steps, min_lr_ratio, grad_clip,
    eval_every, and ckpt_minutes (wall time between checkpoints) or ckpt_every (steps). extra holds
    what a resume must carry ("wall", "tokens") and is saved with every checkpoint; on_ckpt(step)
    runs after each. lr_scale(step) multiplies the schedule's LR (a re-warmup)."""
    model.train()
    t_last = t_ckpt = time.time()
    ema = None
    extra.setdefault("wall", 0.0)
    extra.setdefault("tokens", 0)
    while step < total:
        lr = lr_at(step, total, cfg["peak_lr"], cfg["warmup_steps"], cfg["min_lr_ratio"])
        if lr_scale is not None:
            lr *= lr_scale(step)
        set_lr(opt, lr)
        loss, n_tokens, label = batch_loss(step)
        gn = optimizer_step(model, opt, loss, cfg["grad_clip"])
        step += 1
        extra["tokens"] += n_tokens
        now = time.time()
        extra["wall"] += now - t_last
        t_last = now
        ema = loss.item() if ema is None else ema_decay * ema + (1 - ema_decay) * loss.item()
        if step % log_every == 0:
            log(f"step {step}/{total} {label}tokens {extra['tokens']} loss {loss.item():.4f} ema {ema:.4f} "
                f"gnorm {float(gn):.2f} lr {lr:.2e} wall {extra['wall']:.0f}s "
                f"tok/s {extra['tokens'] / max(1e-9, extra['wall']):.0f} ({100.0 * step / total:.1f}%)")
        due = (step % cfg["ckpt_every"] == 0) if "ckpt_every" in cfg else (now - t_ckpt > 60 * cfg["ckpt_minutes"])
        if due or step == total:
            save_ckpt(ckpt_path, model, opt, step, extra)
            if on_ckpt is not None:
                on_ckpt(step)
            t_ckpt = time.time()
        if step % cfg["eval_every"] == 0 or step == total:
            model.eval()
            evaluate(step, step == total)
            model.train()
            t_last = time.time()
    return step


def make_optimizer(model, lr, wd=0.1, betas=(0.9, 0.95)):
    decay, no_decay = [], []
    for n, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if p.dim() < 2 else decay).append(p)
    return torch.optim.AdamW([{"params": decay, "weight_decay": wd},
                              {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=betas)


def dump_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)


# Weights-only snapshots committed to the repository, so that a run resumes on a new machine (from
# its step, with fresh optimizer moments and a short re-warmup) instead of starting over. The file
# stays out of the tree (the committed model files are kept small): snapshots/NAME.commit names the
# commit that holds snapshots/NAME.pt, and the resume reads it from git's history.
SNAPSHOTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "snapshots")
REWARM_STEPS = 50


def committed_snapshot(name):
    """The committed snapshot NAME's path (written out of git's history when only its commit is
    named), or None when there is none."""
    path, at = os.path.join(SNAPSHOTS, name + ".pt"), os.path.join(SNAPSHOTS, name + ".commit")
    if not os.path.exists(path):
        if not os.path.exists(at):
            return None
        rev = open(at).read().strip()
        blob = subprocess.run(["git", "show", f"{rev}:train/snapshots/{name}.pt"], cwd=SNAPSHOTS, check=True,
                              capture_output=True).stdout
        with open(path + ".tmp", "wb") as f:
            f.write(blob)
        os.replace(path + ".tmp", path)
    return path


def save_snapshot(path, model, config, step, extra, **more):
    """A weights-only F16 snapshot of the run at step (what committed_snapshot gives back)."""
    torch.save(dict({"model": {k: v.half() for k, v in model.state_dict().items()}, "config": config,
                     "step": step, "tokens": extra["tokens"], "wall": extra["wall"]}, **more), path + ".tmp")
    os.replace(path + ".tmp", path)


def resume_from_snapshot(snap, model, extra):
    """Loads a snapshot's weights into model and its step into extra (with the re-warmup's start);
    returns the step."""
    model.load_state_dict({k: v.float() for k, v in snap["model"].items()})
    extra.update(wall=snap.get("wall", 0.0), tokens=snap["tokens"], rewarm_from=snap["step"])
    return snap["step"]


def resume_run(ck, name, model, opt, log, expect=None):
    """(step, extra) a run starts from: its own checkpoint ck (exact), else the committed snapshot
    NAME (weights only; expect: the run's identity, e.g. seed and steps, which the snapshot must
    carry), else step 0."""
    extra = {"wall": 0.0, "tokens": 0}
    if os.path.exists(ck):
        step, extra = load_ckpt(ck, model, opt)
        log(f"resumed at step {step}")
        return step, extra
    path = committed_snapshot(name)
    if path is None:
        return 0, extra
    snap = torch.load(path, map_location="cpu")
    for k, v in (expect or {}).items():
        if snap.get(k) != v:
            sys.exit(f"snapshots/{name}: taken from another run ({k} {snap.get(k)}; this run: {v})")
    step = resume_from_snapshot(snap, model, extra)
    log(f"resumed from the committed snapshot at step {step} (weights only: optimizer moments anew, "
        f"{REWARM_STEPS} steps of re-warmup)")
    return step, extra


def rewarm_scale(extra):
    """lr_scale for train_loop: a linear re-warmup over REWARM_STEPS after a snapshot resume."""
    return lambda step: (min(1.0, (step - extra["rewarm_from"] + 1) / REWARM_STEPS)
                         if "rewarm_from" in extra else 1.0)
