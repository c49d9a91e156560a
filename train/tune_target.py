"""Tuning of the pretrained target on the task set (prepare_tune.py), resumable.

  tune_target.py train     from work/pretrain/final.pt (PF_INIT=path for another checkpoint) to
                           work/tune/run/final.pt; budget in window tokens (TUNE_RUN)
Each step takes a batch of 512-token windows or one of 2,048-token windows (prepare_tune.py), the
long ones at every step s with s * long_share crossing an integer, long_share being the long windows'
share of the set's tokens, so both kinds are spread evenly over the run. The run has phases, each a
tuning set from its first step on (s counted from there): the math in place-value form first, then
in column form (tune_math.py says why); the switch is at the step the shipped target's run switched,
so the recipe repeats it. The loop is the pretraining's (bf16 autocast where the CPU has it, PF_DEVICE=cuda on a GPU,
checkpoints every ckpt_minutes, exact resume; a weights-only snapshot beside each, which
committed as snapshots/tune.pt resumes the run on another machine); the loss is weighted (responses 1, prompts 0.1) and the
eval reports the response loss of every eval type, the long inputs included.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qwen3_model import Qwen3, Qwen3Config, count_params  # noqa: E402
import pretrain_target as PT  # noqa: E402
import train_lib as L  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TUNE = os.path.join(HERE, "work", "tune")
RUN = os.path.join(HERE, "work", "tune", "run")

TUNE_RUN = {
    "seed": 20261208,
    "init": os.path.join(HERE, "work", "pretrain", "final.pt"),
    "batch": {"short": 16, "long": 4},   # 16 x 512 or 4 x 2,048 tokens a step
    "token_budget": 16_000_000,    # window tokens, padding included
    "peak_lr": 6e-4,
    "warmup_steps": 50,
    "min_lr_ratio": 0.1,
    "weight_decay": 0.1,
    "grad_clip": 1.0,
    "eval_every": 250,
    "ckpt_minutes": 10,
    # [first step, tuning set under work/tune/]: the shipped run switched its math at its checkpoint of step 794
    "phases": [[0, "data"], [794, "data_column"]],
}


def train():
    L.setup_torch(2)
    dev = PT.device()
    bf16 = PT.use_bf16(dev)
    os.makedirs(RUN, exist_ok=True)
    cfg_path = os.path.join(RUN, "run_config.json")
    cfg = json.load(open(cfg_path)) if os.path.exists(cfg_path) else dict(TUNE_RUN, init=os.environ.get("PF_INIT", TUNE_RUN["init"]))
    cfg.setdefault("phases", TUNE_RUN["phases"])   # a run begun before the phases had one set
    L.dump_json(cfg_path, cfg)
    log = L.Logger(os.path.join(RUN, "train.log"))
    torch.manual_seed(cfg["seed"])
    init = torch.load(cfg["init"], map_location="cpu")
    c = Qwen3Config(**init["config"])
    model = Qwen3(c)
    model.load_state_dict({k: v.float() for k, v in init["model"].items()})
    model.to(dev)
    opt = L.make_optimizer(model, cfg["peak_lr"], cfg["weight_decay"])
    phases = [(start, {k: L.WindowData(os.path.join(TUNE, d, k), cfg["seed"]) for k in ("short", "long")})
              for start, d in cfg["phases"]]
    val = json.load(open(os.path.join(TUNE, cfg["phases"][0][1], "val.json")))
    form_val = os.path.join(TUNE, cfg["phases"][-1][1], "val_form.json")   # the last phase's math form
    form_val = json.load(open(form_val)) if os.path.exists(form_val) else []
    tok = json.load(open(os.path.join(HERE, "work", "pre", "tokenizer.json"), encoding="utf-8"))["tokens"]
    digit_ids = {i for i, t in enumerate(tok) if t.isdigit()}
    tok_per_step = cfg["batch"]["short"] * phases[0][1]["short"].T
    total = cfg["token_budget"] // tok_per_step

    def batch(s):
        """(windows, kind, the step's index within its kind and phase) of step s."""
        start, data = [p for p in phases if p[0] <= s][-1]
        tokens = {k: data[k].n * data[k].T for k in data}
        share = tokens["long"] / (tokens["long"] + tokens["short"])
        j = s - start
        kind, k = ("long", int(j * share)) if int((j + 1) * share) - int(j * share) else ("short", j - int(j * share))
        return data[kind], kind, k
    ck = os.path.join(RUN, "ckpt.pt")
    step, extra = L.resume_run(ck, "tune", model, opt, log, expect={"seed": cfg["seed"], "total": total})
    log(f"init {cfg['init']} ({init.get('tokens')} pretraining tokens); params {count_params(model)}; "
        f"{total} steps x {tok_per_step} tokens; device {dev} bf16 {bf16}; phases " +
        "; ".join(f"from step {s}: {d} ({p['short'].n} x 512 + {p['long'].n} x 2048 windows)"
                  for (s, d), (_, p) in zip(cfg["phases"], phases)))

    def batch_loss(step):
        windows, kind, k = batch(step)
        ids, w = windows.batch(k, cfg["batch"][kind])
        ids, w = ids.to(dev), w.to(dev)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
            logits = model(ids)
        return L.weighted_lm_loss(logits, ids, w)[0], ids.numel(), ""

    def evaluate(step, final):
        v = L.eval_per_task(lambda x: model(x.to(dev)).float().cpu(), val, bf16=bf16,
                            max_items=None if final else 8)
        log(f"val step {step}: " + " ".join(f"{k}={x:.3f}" for k, x in v.items()))
        if form_val:
            items = form_val if final else form_val[:16]
            v = L.eval_per_task(lambda x: model(x.to(dev)).float().cpu(), items, bf16=bf16)
            right, n = digits_right(items)
            log(f"val step {step}, held-out math in its trained form: " +
                " ".join(f"{k}={x:.3f}" for k, x in v.items() if k != "all") +
                f"; digits right (teacher-forced) {right}/{n} = {right / max(1, n):.3f}")

    @torch.no_grad()
    def digits_right(items):
        """Of the answers' digit tokens, how many the model's argmax gets right given the text before."""
        right = n = 0
        for e in items:
            ids = torch.tensor([e["ids"]])
            pred = model(ids.to(dev)).float().cpu()[0, :-1].argmax(-1)
            for p, t, w in zip(pred.tolist(), e["ids"][1:], e["w"][1:]):
                if w >= 1.0 and t in digit_ids:
                    n += 1
                    right += p == t
        return right, n

    def snapshot(step):
        L.save_snapshot(os.path.join(RUN, "snapshot.pt"), model, c.to_dict(), step, extra, seed=cfg["seed"], total=total)

    step = L.train_loop(model, opt, cfg, total, step, extra, batch_loss, log, ck, evaluate,
                        lr_scale=L.rewarm_scale(extra), on_ckpt=snapshot, log_every=10, ema_decay=0.95)
    torch.save({"model": model.state_dict(), "config": c.to_dict(), "steps": step,
                "tokens": extra["tokens"], "wall": extra["wall"], "init": cfg["init"]},
               os.path.join(RUN, "final.pt"))
    log("DONE")


if __name__ == "__main__":
    {"train": train}[sys.argv[1]]()
