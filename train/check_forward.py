"""Independent check of the PyTorch model against target.md's forward pass, written directly from
the pseudo-code with numpy (float64, token by token with a KV cache, reading the GGUF tensors).

  check_forward.py [models/pf-target-f16.gguf]
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_writer as G  # noqa: E402
from export_target import model_from_gguf, chatml  # noqa: E402
from qwen_bpe import QwenBPE  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, ".."))


def rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope_neox(x, pos, theta):
    hd = x.shape[-1]
    half = hd // 2
    i = np.arange(half)
    ang = pos * theta ** (-2.0 * i / hd)
    c, s = np.cos(ang), np.sin(ang)
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def numpy_logits(path, ids):
    meta, T = G.read_gguf(path)
    W = {k: v.astype(np.float64) for k, v in T.items()}
    L = meta["qwen3.block_count"]
    nh, nkv = meta["qwen3.attention.head_count"], meta["qwen3.attention.head_count_kv"]
    hd = meta["qwen3.attention.key_length"]
    eps = meta["qwen3.attention.layer_norm_rms_epsilon"]
    theta = meta["qwen3.rope.freq_base"]
    Kc = [[] for _ in range(L)]
    Vc = [[] for _ in range(L)]
    out = []
    for pos, tok in enumerate(ids):
        x = W["token_embd.weight"][tok].copy()
        for l in range(L):
            b = f"blk.{l}."
            u = rmsnorm(x, W[b + "attn_norm.weight"], eps)
            q = (W[b + "attn_q.weight"] @ u).reshape(nh, hd)
            k = (W[b + "attn_k.weight"] @ u).reshape(nkv, hd)
            v = (W[b + "attn_v.weight"] @ u).reshape(nkv, hd)
            q = rmsnorm(q, W[b + "attn_q_norm.weight"], eps)
            k = rmsnorm(k, W[b + "attn_k_norm.weight"], eps)
            q, k = rope_neox(q, pos, theta), rope_neox(k, pos, theta)
            Kc[l].append(k)
            Vc[l].append(v)
            K, V = np.stack(Kc[l]), np.stack(Vc[l])  # [t, nkv, hd]
            a = np.zeros((nh, hd))
            for h in range(nh):
                g = h // (nh // nkv)
                s = K[:, g, :] @ q[h] / np.sqrt(hd)
                p = np.exp(s - s.max())
                p /= p.sum()
                a[h] = p @ V[:, g, :]
            x = x + W[b + "attn_output.weight"] @ a.reshape(-1)
            u = rmsnorm(x, W[b + "ffn_norm.weight"], eps)
            gt = W[b + "ffn_gate.weight"] @ u
            x = x + W[b + "ffn_down.weight"] @ ((gt / (1 + np.exp(-gt))) * (W[b + "ffn_up.weight"] @ u))
        out.append(W["token_embd.weight"] @ rmsnorm(x, W["output_norm.weight"], eps))
    return np.stack(out)


def main():
    torch.set_num_threads(1)
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "models", "pf-target-f16.gguf")
    tok = QwenBPE.load(os.path.join(ROOT, "models", "pf-tokenizer.json"))
    ids = tok.encode(chatml("计算 12、7 的和。 Then say hello in English."))
    ref = numpy_logits(path, ids)
    model, _ = model_from_gguf(path, torch.float64)
    with torch.no_grad():
        got = model(torch.tensor([ids]))[0].numpy()
    d = np.abs(ref - got).max()
    print(f"{len(ids)} tokens: max |numpy - torch| logit difference = {d:.3e}")
    assert d < 1e-8, d
    print("OK")


if __name__ == "__main__":
    main()
