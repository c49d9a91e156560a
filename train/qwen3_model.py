"""Qwen3-architecture decoder in plain PyTorch (1.13-compatible), written to match target.md exactly.

pre-norm RMSNorm (eps 1e-6, weight as-is), q/k/v/o without bias, QK-norm (per-head RMSNorm, weight
[head_dim], applied BEFORE RoPE), NEOX RoPE (rotate-half, theta 1e6), GQA (query head h reads KV
head h // (n_head / n_kv_head)), SwiGLU FFN, final RMSNorm, tied embeddings (no output matrix).

Reusable pieces for drafts (DFlash): `embed()`, `run_layers()` (returns the residual-stream states
after any requested layers), `head()` (final norm + tied projection), `rope_cos_sin()`, `Block`.
"""
import math
from dataclasses import dataclass, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Qwen3Config:
    vocab_size: int = 8192
    hidden: int = 256
    n_layers: int = 8
    n_heads: int = 4
    n_kv_heads: int = 2
    head_dim: int = 64
    ffn: int = 768
    rope_theta: float = 1e6
    eps: float = 1e-6
    context_length: int = 512

    def to_dict(self):
        return asdict(self)


def _atleast_f32(x):
    """Upcast bf16/fp16 to float32 (norms, softmax); keep float32/float64 as they are."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = _atleast_f32(x)
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * self.weight.to(xf.dtype)).to(x.dtype)


def rope_cos_sin(positions, head_dim, theta, dtype=torch.float32):
    """positions: LongTensor of any shape ([T] here, [N, A*B] for draft blocks). Returns cos, sin of
    shape positions.shape + [head_dim] (NEOX / rotate-half layout). The drafts use it too."""
    half = head_dim // 2
    inv = theta ** (-torch.arange(0, half, dtype=torch.float64) * 2.0 / head_dim)
    ang = positions.to(torch.float64).unsqueeze(-1) * inv
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos().to(dtype), ang.sin().to(dtype)


def apply_rope(x, cos, sin):
    """x: [..., hd]; rotate-half pairing (i, i + hd/2)."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    rot = torch.cat([-x2, x1], dim=-1)
    return x * cos + rot * sin


def project_kv(mod, x, cos, sin):
    """k (k_norm, then RoPE) and v as [B, n_kv_heads, T, head_dim] for x [B, T, hidden]: `mod` has k_proj,
    v_proj, k_norm and its config as mod.c (Attention here, the DFlash draft's layers)."""
    c = mod.c
    B, T, _ = x.shape
    k = mod.k_norm(mod.k_proj(x).view(B, T, c.n_kv_heads, c.head_dim)).transpose(1, 2)
    v = mod.v_proj(x).view(B, T, c.n_kv_heads, c.head_dim).transpose(1, 2)
    return apply_rope(k, cos.to(k.dtype), sin.to(k.dtype)), v


def project_qkv(mod, x, cos, sin):
    """q (q_norm, then RoPE) as [B, n_heads, T, head_dim] with project_kv's k and v; `mod` also has q_proj
    and q_norm."""
    c = mod.c
    B, T, _ = x.shape
    q = mod.q_norm(mod.q_proj(x).view(B, T, c.n_heads, c.head_dim)).transpose(1, 2)
    k, v = project_kv(mod, x, cos, sin)
    return apply_rope(q, cos.to(q.dtype), sin.to(q.dtype)), k, v


def repeat_kv(k, v, n_heads):
    """GQA: each KV head repeated for the query heads that read it (query head h reads KV head h // rep)."""
    rep = n_heads // k.shape[1]
    if rep > 1:
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
    return k, v


def swiglu(mod, u):
    """The SwiGLU FFN of a module with gate_proj, up_proj and down_proj."""
    return mod.down_proj(F.silu(mod.gate_proj(u)) * mod.up_proj(u))


class Attention(nn.Module):
    def __init__(self, c: Qwen3Config):
        super().__init__()
        self.c = c
        self.q_proj = nn.Linear(c.hidden, c.n_heads * c.head_dim, bias=False)
        self.k_proj = nn.Linear(c.hidden, c.n_kv_heads * c.head_dim, bias=False)
        self.v_proj = nn.Linear(c.hidden, c.n_kv_heads * c.head_dim, bias=False)
        self.o_proj = nn.Linear(c.n_heads * c.head_dim, c.hidden, bias=False)
        self.q_norm = RMSNorm(c.head_dim, c.eps)
        self.k_norm = RMSNorm(c.head_dim, c.eps)

    def qkv(self, u, cos, sin):
        """q, k, v as [B, n_heads, T, head_dim] for u [B, T, hidden]: QK-norm, RoPE, KV heads repeated (GQA)."""
        q, k, v = project_qkv(self, u, cos, sin)
        k, v = repeat_kv(k, v, self.c.n_heads)
        return q, k, v

    def forward(self, u, cos, sin, mask):
        B, T, _ = u.shape
        c = self.c
        q, k, v = self.qkv(u, cos, sin)
        s = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(c.head_dim))
        s = s + mask.to(s.dtype)
        p = torch.softmax(_atleast_f32(s), dim=-1).to(v.dtype)
        a = torch.matmul(p, v).transpose(1, 2).reshape(B, T, c.n_heads * c.head_dim)
        return self.o_proj(a)


class MLP(nn.Module):
    def __init__(self, c: Qwen3Config):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden, c.ffn, bias=False)
        self.up_proj = nn.Linear(c.hidden, c.ffn, bias=False)
        self.down_proj = nn.Linear(c.ffn, c.hidden, bias=False)

    def forward(self, u):
        return swiglu(self, u)


class Block(nn.Module):
    def __init__(self, c: Qwen3Config):
        super().__init__()
        self.attn_norm = RMSNorm(c.hidden, c.eps)
        self.attn = Attention(c)
        self.ffn_norm = RMSNorm(c.hidden, c.eps)
        self.mlp = MLP(c)

    def forward(self, x, cos, sin, mask):
        x = x + self.attn(self.attn_norm(x), cos, sin, mask)
        x = x + self.mlp(self.ffn_norm(x))
        return x


def causal_mask(T, device=None):
    m = torch.full((T, T), float("-inf"), device=device)
    return torch.triu(m, diagonal=1)


class Qwen3(nn.Module):
    def __init__(self, c: Qwen3Config):
        super().__init__()
        assert c.n_heads % c.n_kv_heads == 0
        self.c = c
        self.tok_embed = nn.Embedding(c.vocab_size, c.hidden)
        self.blocks = nn.ModuleList([Block(c) for _ in range(c.n_layers)])
        self.norm = RMSNorm(c.hidden, c.eps)
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)

    # ---- reusable pieces ---------------------------------------------------------------
    def embed(self, ids):
        return self.tok_embed(ids)

    def run_layers(self, x, positions=None, tap_layers=(), mask=None):
        """Run all blocks on residual stream x [B,T,H]. Returns (x_final, {layer: state after it})."""
        T = x.shape[1]
        if positions is None:
            positions = torch.arange(T)
        cos, sin = rope_cos_sin(positions, self.c.head_dim, self.c.rope_theta, dtype=x.dtype)
        if mask is None:
            mask = causal_mask(T)
        taps = {}
        for i, blk in enumerate(self.blocks):
            x = blk(x, cos, sin, mask)
            if i in tap_layers:
                taps[i] = x
        return x, taps

    def head(self, x):
        """final RMSNorm + tied output projection."""
        h = self.norm(x)
        return F.linear(h, self.tok_embed.weight.to(h.dtype))

    def forward(self, ids, tap_layers=()):
        x, taps = self.run_layers(self.embed(ids), tap_layers=tap_layers)
        logits = self.head(x)
        return (logits, taps) if tap_layers else logits

    def hidden_states(self, ids, layers):
        """Residual-stream states after the given layer indices (for DFlash drafts); the layers past the
        last tapped one are not run (they cannot change it)."""
        x = self.embed(ids)
        T = x.shape[1]
        cos, sin = rope_cos_sin(torch.arange(T), self.c.head_dim, self.c.rope_theta, dtype=x.dtype)
        mask = causal_mask(T)
        taps = {}
        for i, blk in enumerate(self.blocks[:max(layers) + 1]):
            x = blk(x, cos, sin, mask)
            taps[i] = x
        return [taps[i] for i in layers]


def count_params(model):
    return sum(p.numel() for p in model.parameters())
