"""Pretraining of the stand-in target on the running-text stream (prepare_pretrain.py), resumable.

  pretrain_target.py probe [SHAPE ...]   tokens/s of candidate shapes at context 512 and 2048
  pretrain_target.py train               run / resume the budgeted run (PRETRAIN_RUN below)

The run goes in two phases over the same token stream: windows of 512 tokens for the first
(1 - long_share) of the budget, then windows of 2,048 (the context the model is exported with).
Every step's batch is a function of the step alone (a seeded permutation of the stream's windows), so
a resumed run sees exactly the batches an unbroken one would. A checkpoint (model, optimizer, step,
RNG) is written every ckpt_minutes of training and a weights-only snapshot beside it; the log prints
tokens/s, loss and the held-out losses (the pretraining validation documents by source, and the task
eval items' response tokens) at every eval.
Device: CPU by default (2 threads, bf16 autocast where the CPU has native bf16); PF_DEVICE=cuda runs
the same steps on a GPU.
"""
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qwen3_model import Qwen3, Qwen3Config, count_params  # noqa: E402
from qwen_bpe import QwenBPE  # noqa: E402
import prepare_data as D  # noqa: E402
import train_lib as L  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PRE = os.path.join(HERE, "work", "pre")
RUN = os.path.join(HERE, "work", "pretrain")
SHAPES = {
    "h384_l6": dict(hidden=384, n_layers=6, n_heads=6, n_kv_heads=2, head_dim=64, ffn=1024),
    "h320_l8": dict(hidden=320, n_layers=8, n_heads=5, n_kv_heads=1, head_dim=64, ffn=896),
    "h512_l8": dict(hidden=512, n_layers=8, n_heads=8, n_kv_heads=2, head_dim=64, ffn=1408),
}

PRETRAIN_RUN = {
    "seed": 20261205,
    "shape": "h384_l6",
    "model": dict(vocab_size=8192, rope_theta=1e6, eps=1e-6, context_length=2048, **SHAPES["h384_l6"]),
    "token_budget": 48_000_000,
    "long_share": 0.06,            # the last 6% of the budget in 2,048-token windows
    "phases": [{"ctx": 512, "batch": 16}, {"ctx": 2048, "batch": 4}],   # 8,192 tokens a step in both
    "peak_lr": 1.5e-3,
    "warmup_steps": 200,
    "min_lr_ratio": 0.1,
    "weight_decay": 0.1,
    "grad_clip": 1.0,
    "eval_every": 500,
    "ckpt_minutes": 10,
}


def device():
    return torch.device(os.environ.get("PF_DEVICE", "cpu"))


def use_bf16(dev):
    if dev.type == "cuda":
        return True
    flags = open("/proc/cpuinfo").read()
    return "avx512_bf16" in flags or "amx_bf16" in flags


class Stream:
    """The token stream as windows of ctx + 1 tokens; batch(step) by a seeded permutation per ctx."""

    def __init__(self, path, seed):
        self.ids = np.memmap(path, dtype=np.uint16, mode="r")
        self.seed = seed
        self.perm = {}

    def batch(self, k, ctx, bsz):
        n = (len(self.ids) - 1) // ctx
        epoch, j = divmod(k * bsz, n)
        key = (ctx, epoch)
        if key not in self.perm:
            self.perm = {key: np.random.RandomState(self.seed + ctx + 7919 * epoch).permutation(n)}
        rows = [self.ids[w * ctx:w * ctx + ctx + 1] for w in self.perm[key][j:j + bsz]]
        rows = [r for r in rows if len(r) == ctx + 1]
        return torch.from_numpy(np.stack(rows).astype(np.int64))


def schedule(cfg):
    """[(first step, steps, ctx, batch)] of the phases, and the total number of steps."""
    out, step = [], 0
    shares = [1 - cfg["long_share"], cfg["long_share"]]
    for ph, share in zip(cfg["phases"], shares):
        n = int(cfg["token_budget"] * share) // (ph["ctx"] * ph["batch"])
        out.append((step, n, ph["ctx"], ph["batch"]))
        step += n
    return out, step


def lm_loss(logits, ids):
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(), ids[:, 1:].reshape(-1))


@torch.no_grad()
def eval_stream(model, val_ids, index, dev, bf16, ctx=512, per_src=4):
    """Mean loss over up to per_src windows of each source's validation documents."""
    out, tot, cnt = {}, 0.0, 0
    for src, start, n in index:
        losses = []
        for k in range(min(per_src, max(0, (n - 1) // ctx))):
            ids = torch.from_numpy(val_ids[start + k * ctx:start + k * ctx + ctx + 1].astype(np.int64))[None]
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
                logits = model(ids.to(dev))
            losses.append(float(lm_loss(logits, ids.to(dev))))
        if losses:
            out[src] = sum(losses) / len(losses)
            tot += sum(losses)
            cnt += len(losses)
    out["all"] = tot / max(1, cnt)
    return out


def task_val(tok_path):
    """The task eval items encoded with this tokenizer (prompt weight 0.1, response 1), 2,048 tokens max."""
    tok = QwenBPE.load(tok_path)
    val = []
    for e in D.load_eval():
        ids, w = D.encode_example(tok, e, "reference")
        val.append({"type": e["type"], "ids": ids[:2048], "w": w[:2048]})
    return val


def probe():
    L.setup_torch(2)
    dev = device()
    names = sys.argv[2:] or list(SHAPES)
    rng = np.random.RandomState(0)
    for name in names:
        for ctx, bsz in ((512, 16), (2048, 4)):
            torch.manual_seed(0)
            m = Qwen3(Qwen3Config(vocab_size=8192, **SHAPES[name])).to(dev)
            opt = L.make_optimizer(m, 1e-3)
            times = []
            for _ in range(int(os.environ.get("PF_PROBE_STEPS", "4"))):
                ids = torch.from_numpy(rng.randint(0, 8166, size=(bsz, ctx + 1))).to(dev)
                t0 = time.time()
                with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=use_bf16(dev)):
                    loss = lm_loss(m(ids), ids)
                L.optimizer_step(m, opt, loss, 1.0)
                times.append(time.time() - t0)
            dt = sum(times[1:]) / len(times[1:])
            print(f"{name} {count_params(m) / 1e6:.2f}M ctx {ctx}: {bsz * ctx / dt:.0f} tok/s (step {dt:.2f}s)",
                  flush=True)


def train():
    L.setup_torch(2)
    dev = device()
    bf16 = use_bf16(dev)
    os.makedirs(RUN, exist_ok=True)
    cfg_path = os.path.join(RUN, "run_config.json")
    cfg = json.load(open(cfg_path)) if os.path.exists(cfg_path) else PRETRAIN_RUN
    L.dump_json(cfg_path, cfg)
    log = L.Logger(os.path.join(RUN, "train.log"))
    torch.manual_seed(cfg["seed"])
    c = Qwen3Config(**cfg["model"])
    model = Qwen3(c).to(dev)
    opt = L.make_optimizer(model, cfg["peak_lr"], cfg["weight_decay"])
    stream = Stream(os.path.join(PRE, "stream.u16"), cfg["seed"])
    meta = json.load(open(os.path.join(PRE, "stream.json")))
    val_ids = np.fromfile(os.path.join(PRE, "val.u16"), dtype=np.uint16)
    tval = task_val(os.path.join(PRE, "tokenizer.json"))
    phases, total = schedule(cfg)
    ck = os.path.join(RUN, "ckpt.pt")
    step, extra = L.resume_run(ck, "pretrain", model, opt, log)
    log(f"params {count_params(model)} ({count_params(model) / 1e6:.2f}M); {total} steps "
        f"{[(p[1], p[2], p[3]) for p in phases]} (steps, ctx, batch); stream {len(stream.ids)} tokens; "
        f"device {dev} bf16 {bf16}")
    def batch_loss(step):
        first, n, ctx, bsz = next(p for p in phases if p[0] <= step < p[0] + p[1])
        ids = stream.batch(step - first, ctx, bsz).to(dev)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
            logits = model(ids)
        return lm_loss(logits, ids), ids.shape[0] * (ids.shape[1] - 1), f"ctx {ctx} "

    def snapshot(step):
        L.save_snapshot(os.path.join(RUN, "snapshot.pt"), model, c.to_dict(), step, extra)

    def evaluate(step, final):
        t0 = time.time()
        v = eval_stream(model, val_ids, meta["val_index"], dev, bf16)
        tv = L.eval_per_task(lambda x: model(x.to(dev)).float().cpu(), tval, bf16=bf16,
                             max_items=None if final else 8)
        log(f"val step {step} tokens {extra['tokens']}: pretrain " + " ".join(f"{k}={x:.3f}" for k, x in v.items()))
        log(f"val step {step} tokens {extra['tokens']}: tasks " + " ".join(f"{k}={x:.3f}" for k, x in tv.items()) +
            f" ({time.time() - t0:.0f}s)")

    step = L.train_loop(model, opt, cfg, total, step, extra, batch_loss, log, ck, evaluate,
                        lr_scale=L.rewarm_scale(extra), on_ckpt=snapshot)
    torch.save({"model": model.state_dict(), "config": c.to_dict(), "steps": step,
                "tokens": extra["tokens"], "wall": extra["wall"]}, os.path.join(RUN, "final.pt"))
    log("DONE")


def finish():
    """work/pretrain/final.pt from the committed snapshot when that is the run's last step, so a new
    machine goes on to the tuning without rebuilding the token stream; exit status 1 otherwise."""
    snap_path = L.committed_snapshot("pretrain")
    cfg_path = os.path.join(RUN, "run_config.json")
    cfg = json.load(open(cfg_path)) if os.path.exists(cfg_path) else PRETRAIN_RUN
    snap = torch.load(snap_path, map_location="cpu") if snap_path else None
    if snap is None or snap["step"] != schedule(cfg)[1]:
        print("pretraining: no committed snapshot of the run's last step; the run goes on", flush=True)
        sys.exit(1)
    os.makedirs(RUN, exist_ok=True)
    torch.save({"model": {k: v.float() for k, v in snap["model"].items()}, "config": snap["config"],
                "steps": snap["step"], "tokens": snap["tokens"], "wall": snap.get("wall", 0.0)},
               os.path.join(RUN, "final.pt.tmp"))
    os.replace(os.path.join(RUN, "final.pt.tmp"), os.path.join(RUN, "final.pt"))
    print(f"pretraining: final.pt from the committed snapshot (step {snap['step']}, {snap['tokens']} tokens)", flush=True)


if __name__ == "__main__":
    {"probe": probe, "train": train, "finish": finish}[sys.argv[1]]()
