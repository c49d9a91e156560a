"""Export the trained target to GGUF (F16 matrices, F32 norms), then build the reference file from
the EXPORTED weights (read back from the GGUF, computed in float64).

  export_target.py [CHECKPOINT] [--tokenizer JSON] [--val VAL.json] [--what TEXT]
CHECKPOINT: default work/target/final.pt, else work/target/ckpt.pt; a checkpoint that carries its
own config and token count (pretraining snapshots, the tuned target) needs no run_config.json.
--tokenizer: the vocabulary the model was trained with (default models/pf-tokenizer.json);
--val: the held-out task items for the per-task loss (default work/data/val.json);
--what: the training it had, for the GGUF's description; --models DIR: a trial export into DIR (the
GGUF, its reference file, the per-task loss and the samples), nothing in the repository changed.
Writes models/pf-target-f16.gguf, models/pf-target-ref.json, work/target/samples.json.
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qwen3_model import Qwen3, Qwen3Config  # noqa: E402
from qwen_bpe import QwenBPE  # noqa: E402
import gguf_writer as G  # noqa: E402
import train_lib as L  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, ".."))
WORK = os.path.join(HERE, "work")
MODELS = os.path.join(ROOT, "models")
TYPES = ["extraction", "math", "code", "rewrite", "summary", "qa", "chat"]

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}")


def chatml(prompt):
    return "<|im_start|>user\n" + prompt + "<|im_end|>\n<|im_start|>assistant\n"


def tensor_map(c):
    """torch state-dict name -> GGUF name."""
    m = {"tok_embed.weight": "token_embd.weight", "norm.weight": "output_norm.weight"}
    for i in range(c.n_layers):
        b = f"blocks.{i}."
        g = f"blk.{i}."
        m.update({b + "attn_norm.weight": g + "attn_norm.weight",
                  b + "attn.q_proj.weight": g + "attn_q.weight",
                  b + "attn.k_proj.weight": g + "attn_k.weight",
                  b + "attn.v_proj.weight": g + "attn_v.weight",
                  b + "attn.o_proj.weight": g + "attn_output.weight",
                  b + "attn.q_norm.weight": g + "attn_q_norm.weight",
                  b + "attn.k_norm.weight": g + "attn_k_norm.weight",
                  b + "ffn_norm.weight": g + "ffn_norm.weight",
                  b + "mlp.gate_proj.weight": g + "ffn_gate.weight",
                  b + "mlp.up_proj.weight": g + "ffn_up.weight",
                  b + "mlp.down_proj.weight": g + "ffn_down.weight"})
    return m


def write_gguf(path, c, state, tok, name, train_info):
    w = G.GGUFWriter()
    w.add("general.architecture", G.T_STRING, "qwen3")
    w.add("general.name", G.T_STRING, name)
    w.add("general.alignment", G.T_U32, G.ALIGNMENT)
    w.add("general.file_type", G.T_U32, 1)  # mostly F16
    w.add("general.description", G.T_STRING, train_info)
    w.add("qwen3.block_count", G.T_U32, c.n_layers)
    w.add("qwen3.context_length", G.T_U32, c.context_length)
    w.add("qwen3.embedding_length", G.T_U32, c.hidden)
    w.add("qwen3.feed_forward_length", G.T_U32, c.ffn)
    w.add("qwen3.attention.head_count", G.T_U32, c.n_heads)
    w.add("qwen3.attention.head_count_kv", G.T_U32, c.n_kv_heads)
    w.add("qwen3.attention.key_length", G.T_U32, c.head_dim)
    w.add("qwen3.attention.value_length", G.T_U32, c.head_dim)
    w.add("qwen3.rope.freq_base", G.T_F32, float(c.rope_theta))
    w.add("qwen3.attention.layer_norm_rms_epsilon", G.T_F32, float(c.eps))
    w.add("tokenizer.ggml.model", G.T_STRING, "gpt2")
    w.add("tokenizer.ggml.pre", G.T_STRING, "qwen2")
    w.add_array("tokenizer.ggml.tokens", G.T_STRING, tok.tokens)
    special = set(tok.specials)
    w.add_array("tokenizer.ggml.token_type", G.T_I32, [3 if t in special else 1 for t in tok.tokens])
    w.add_array("tokenizer.ggml.merges", G.T_STRING, [a + " " + b for a, b in tok.merges])
    w.add("tokenizer.ggml.eos_token_id", G.T_U32, tok.token_to_id["<|im_end|>"])
    w.add("tokenizer.ggml.padding_token_id", G.T_U32, tok.token_to_id["<|endoftext|>"])
    w.add("tokenizer.ggml.bos_token_id", G.T_U32, tok.token_to_id["<|endoftext|>"])
    w.add("tokenizer.ggml.add_bos_token", G.T_BOOL, False)
    w.add("tokenizer.chat_template", G.T_STRING, CHAT_TEMPLATE)
    assert len(tok.tokens) == c.vocab_size
    names = tensor_map(c)
    order = ["tok_embed.weight"]
    for i in range(c.n_layers):
        b = f"blocks.{i}."
        order += [b + x for x in ["attn_norm.weight", "attn.q_proj.weight", "attn.k_proj.weight",
                                  "attn.v_proj.weight", "attn.o_proj.weight", "attn.q_norm.weight",
                                  "attn.k_norm.weight", "ffn_norm.weight", "mlp.gate_proj.weight",
                                  "mlp.up_proj.weight", "mlp.down_proj.weight"]]
    order.append("norm.weight")
    assert set(order) == set(state.keys()), set(state.keys()) ^ set(order)
    for k in order:
        t = state[k].detach().float().numpy()
        w.add_tensor(names[k], t, G.GGML_F16 if t.ndim == 2 else G.GGML_F32)
    w.write(path)


def model_from_gguf(path, dtype=torch.float64):
    meta, tens = G.read_gguf(path)
    c = Qwen3Config(vocab_size=len(meta["tokenizer.ggml.tokens"]), hidden=meta["qwen3.embedding_length"],
                    n_layers=meta["qwen3.block_count"], n_heads=meta["qwen3.attention.head_count"],
                    n_kv_heads=meta["qwen3.attention.head_count_kv"], head_dim=meta["qwen3.attention.key_length"],
                    ffn=meta["qwen3.feed_forward_length"], rope_theta=meta["qwen3.rope.freq_base"],
                    eps=meta["qwen3.attention.layer_norm_rms_epsilon"],
                    context_length=meta["qwen3.context_length"])
    m = Qwen3(c)
    inv = {v: k for k, v in tensor_map(c).items()}
    sd = {inv[n]: torch.from_numpy(a.astype(np.float32)) for n, a in tens.items()}
    m.load_state_dict(sd)
    return m.to(dtype).eval(), meta


@torch.no_grad()
def greedy(model, ids, n, stop_id):
    out = []
    cur = list(ids)
    for _ in range(n):
        logits = model(torch.tensor([cur]))[0, -1]
        nxt = int(torch.argmax(logits))
        out.append(nxt)
        cur.append(nxt)
        if nxt == stop_id:
            break
    return out


def pick_ref_prompts(tok):
    want = [("extraction", "en"), ("math", "zh"), ("code", "en"), ("rewrite", "zh"),
            ("summary", "en"), ("qa", "en"), ("chat", "zh"), ("math", "en")]
    out = []
    for t, lang in want:
        items = [json.loads(l) for l in open(os.path.join(ROOT, "eval", "tasks", t + ".jsonl"), encoding="utf-8")]
        items = [e for e in items if e["lang"] == lang] or items
        items.sort(key=lambda e: (len(tok.encode(chatml(e["prompt"]))), e["id"]))
        out.append(items[len(items) // 4])  # a short-ish (25th percentile) prompt, deterministic
    return out


def load_checkpoint(ck):
    """(config, state dict, steps, tokens) of a checkpoint; the first target's carry no config (its
    run_config.json has it)."""
    blob = torch.load(ck, map_location="cpu")
    steps = blob.get("steps", blob.get("step"))
    if "config" in blob:
        return Qwen3Config(**blob["config"]), blob["model"], steps, blob.get("tokens"), blob
    run_cfg = json.load(open(os.path.join(WORK, "target", "run_config.json")))
    return (Qwen3Config(**run_cfg["model"]), blob["model"], steps,
            steps * run_cfg["batch_windows"] * run_cfg["ctx"], blob)


def main():
    torch.set_num_threads(2)
    torch.set_flush_denormal(True)
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint", nargs="?")
    ap.add_argument("--tokenizer", default=os.path.join(MODELS, "pf-tokenizer.json"))
    ap.add_argument("--val", default=os.path.join(WORK, "data", "val.json"))
    ap.add_argument("--models", default=MODELS, help="folder for the GGUF and its reference file")
    ap.add_argument("--what", default="the project's Debian/npm-derived task corpus")
    args = ap.parse_args()
    ck = args.checkpoint
    if ck is None:
        ck = os.path.join(WORK, "target", "final.pt")
        if not os.path.exists(ck):
            ck = os.path.join(WORK, "target", "ckpt.pt")
    c, state, steps, tokens, blob = load_checkpoint(ck)
    state = {k: v.float() for k, v in state.items()}
    tok = QwenBPE.load(args.tokenizer)
    info = (f"pocketflash stand-in target; trained from scratch on {tokens} tokens ({steps} steps) of "
            f"{args.what}; checkpoint {os.path.basename(ck)}")
    trial = os.path.abspath(args.models) != MODELS   # a trial export: nothing under the repository changes
    os.makedirs(args.models, exist_ok=True)
    gg = os.path.join(args.models, "pf-target-f16.gguf")
    write_gguf(gg, c, state, tok, "pf-target", info)
    print("wrote", gg, os.path.getsize(gg), "bytes", flush=True)

    model, meta = model_from_gguf(gg, torch.float64)
    assert meta["tokenizer.ggml.tokens"] == tok.tokens
    # sanity: exported (fp16-rounded) model vs training-precision model
    m32 = Qwen3(c)
    m32.load_state_dict(state)
    m32.eval()
    im_end = tok.token_to_id["<|im_end|>"]
    refs = []
    for e in pick_ref_prompts(tok):
        ids = tok.encode(chatml(e["prompt"]))
        with torch.no_grad():
            lg = model(torch.tensor([ids]))[0]
            lg32 = m32(torch.tensor([ids]))[0].double()
        diff = float((lg - lg32).abs().max())
        top = []
        for pos in range(len(ids)):
            v, i = torch.topk(lg[pos], 20)
            top.append([[int(a), round(float(b), 6)] for a, b in zip(i, v)])
        cont = greedy(model, ids, 64, im_end)
        stop = cont.index(im_end) if im_end in cont else None
        refs.append({"id": e["id"], "type": e["type"], "lang": e["lang"], "prompt": e["prompt"],
                     "prompt_ids": ids, "top20": top, "greedy_ids": cont,
                     "greedy_stop_index": stop, "greedy_text": tok.decode([x for x in cont if x != im_end])})
        print(f"{e['id']}: {len(ids)} prompt tokens, max |logit(gguf f64) - logit(ckpt f32)| = {diff:.4f}; "
              f"greedy -> {tok.decode(cont)[:100]!r}", flush=True)
    ref = {"model": "models/pf-target-f16.gguf",
           "model_sha256": hashlib.sha256(open(gg, "rb").read()).hexdigest(),
           "note": ("Computed in float64 with PyTorch from the weights READ BACK from the GGUF (F16 matrices "
                    "upcast exactly, F32 norms). Prompts are ChatML-wrapped (no system prompt): "
                    "'<|im_start|>user\\n{prompt}<|im_end|>\\n<|im_start|>assistant\\n'. top20[p] = the 20 largest "
                    "(token id, logit) of the next-token logits after prompt position p. greedy_ids: 64-token "
                    "greedy continuation, full recompute each step, argmax (lowest id on ties), stops early at "
                    "<|im_end|> (included; greedy_stop_index is its index, null if none)."),
           "eos_token_id": im_end, "prompts": refs}
    rp = os.path.join(args.models, "pf-target-ref.json")
    json.dump(ref, open(rp, "w", encoding="utf-8"), ensure_ascii=False, separators=(",", ":"))
    print("wrote", rp, os.path.getsize(rp), "bytes", flush=True)

    # per-task validation loss (response tokens of the held-out eval items) of the EXPORTED weights
    model32, _ = model_from_gguf(gg, torch.float32)
    val = json.load(open(args.val))
    v = L.eval_per_task(model32, val)
    res = {"val_loss_response_tokens": {k: round(x, 4) for k, x in v.items()}, "steps": steps,
           "tokens": tokens, "wall_s": round(blob.get("wall", blob.get("extra", {}).get("wall", 0.0)), 1),
           "checkpoint": os.path.basename(ck), "eval_items": len(val)}
    L.dump_json(os.path.join(args.models if trial else HERE, "target_val.json"), res)
    print("val:", res, flush=True)

    # one sample per task type for the README (greedy, up to 80 tokens, exported weights in float32)
    samples = []
    for t in TYPES:
        e = json.loads(open(os.path.join(ROOT, "eval", "tasks", t + ".jsonl"), encoding="utf-8").readline())
        cont = greedy(model32, tok.encode(chatml(e["prompt"])), 80, im_end)
        samples.append({"id": e["id"], "prompt": e["prompt"], "reference": e["reference"],
                        "output": tok.decode([x for x in cont if x != im_end])})
    json.dump(samples, open(os.path.join(args.models if trial else os.path.join(WORK, "target"), "samples.json"), "w",
                            encoding="utf-8"),
              ensure_ascii=False, indent=1)
    print("samples written", flush=True)


if __name__ == "__main__":
    main()
