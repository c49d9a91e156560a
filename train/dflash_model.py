"""DFlash / DFlash2 block draft in PyTorch, computing exactly the function draft/dflash*.c implement.

Context injection (per committed position p, from the target's tapped residual rows):
    ctx_p = rmsnorm(fc @ concat(taps_p)) * enc.output_norm
    per layer: Kctx = rope(k_norm(attn_k @ ctx_p), p),  Vctx = attn_v @ ctx_p
Block forward (B rows [bonus, MASK, ..., MASK] at positions a .. a+B-1, a = the bonus position):
    per layer, per sublayer S (attention, SwiGLU MLP):
        u = rmsnorm(x) * norm
        v1: x += S(u)
        v2: dyn = conv_proj @ u  viewed [2 sides, K taps, G groups];  x += conv(S(conv(u, 0)), 1)
            conv(z, side)[t, c] = sum_tap (base[side, tap, c] + dyn[t, side, tap, c // group]) * z[t - tap, c]
            (taps never reach before the block's row 0)
    attention is NON-causal: every block row sees the context rows strictly before a and all B rows
    of its own block (block K/V come from the conv'd input, like q).
    logits_k = target_head(rmsnorm(x_k) * output_norm), rows k = 1..B-1 predict the token at a + k.
DFlash2 selector: cand_t, unary_t = top-k(logits_t); g_t = selector_hidden @ h_t (h_t the final-normed
row); score_t(prev, j) = unary_t[j] + < pred[prev] * g_t, succ[cand_t[j]] >; greedy walk from the bonus.

Training batches many blocks at once: N sequences x A anchors, one attention over
[context rows ; all blocks] with a mask that gives each block its own context prefix and itself.
"""
import math
from dataclasses import dataclass, asdict, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from qwen3_model import RMSNorm, project_kv, project_qkv, repeat_kv, rope_cos_sin as rope_tables, swiglu


@dataclass
class DraftConfig:
    hidden: int = 384
    n_layers: int = 2
    n_heads: int = 6
    n_kv_heads: int = 2
    head_dim: int = 64
    ffn: int = 768
    rope_theta: float = 1e6
    eps: float = 1e-6
    vocab_size: int = 8192
    target_hidden: int = 384
    tap_layers: list = field(default_factory=lambda: [1, 3, 5])  # 0-based "after layer L"
    block_size: int = 16
    mask_id: int = 8185
    version: int = 1
    conv_k: int = 2
    conv_group: int = 16
    sel_rank: int = 64
    sel_top_k: int = 16

    def to_dict(self):
        return asdict(self)


# The recipe's draft shape (issue #15): 3 layers (the most whose default taps are distinct on the 6-layer
# target; 4 and 5 would tap layer 2 twice or three times), blocks of 8 (the sizes that win on CPUs are 4-8),
# loss weight exp(-(k-1)/gamma) with the DFlash paper's gamma for blocks of 8.
DRAFT_LAYERS = 3
DRAFT_BLOCK = 8
DRAFT_GAMMA = 4.0


def build_target_layer_ids(n_target_layers, n_draft_layers):
    """z-lab's default tap rule (DFlash modeling code): one draft layer taps the middle target layer, more
    taps spread evenly (Python round, half to even) over target layers 1 .. n-3 (0-based, the OUTPUT of that
    layer), so the last layers, and the last one llama.cpp's loader cannot serve, are never tapped."""
    if n_draft_layers == 1:
        return [n_target_layers // 2]
    start, end = 1, n_target_layers - 3
    return [int(round(start + i * (end - start) / (n_draft_layers - 1))) for i in range(n_draft_layers)]


class DraftLayer(nn.Module):
    def __init__(self, c: DraftConfig):
        super().__init__()
        self.c = c
        H = c.hidden
        self.attn_norm = RMSNorm(H, c.eps)
        self.q_proj = nn.Linear(H, c.n_heads * c.head_dim, bias=False)
        self.k_proj = nn.Linear(H, c.n_kv_heads * c.head_dim, bias=False)
        self.v_proj = nn.Linear(H, c.n_kv_heads * c.head_dim, bias=False)
        self.o_proj = nn.Linear(c.n_heads * c.head_dim, H, bias=False)
        self.q_norm = RMSNorm(c.head_dim, c.eps)
        self.k_norm = RMSNorm(c.head_dim, c.eps)
        self.ffn_norm = RMSNorm(H, c.eps)
        self.gate_proj = nn.Linear(H, c.ffn, bias=False)
        self.up_proj = nn.Linear(H, c.ffn, bias=False)
        self.down_proj = nn.Linear(c.ffn, H, bias=False)
        if c.version == 2:
            G = H // c.conv_group
            base = torch.zeros(2, c.conv_k, H)
            base[:, 0, :] = 1.0  # identity tap
            self.attn_conv_base = nn.Parameter(base.clone())
            self.ffn_conv_base = nn.Parameter(base.clone())
            self.attn_conv_proj = nn.Linear(H, 2 * c.conv_k * G, bias=False)
            self.ffn_conv_proj = nn.Linear(H, 2 * c.conv_k * G, bias=False)

    def ctx_kv(self, ctx, cos, sin):
        """ctx [N,T,H] -> K [N,kvh,T,hd] (k_norm + rope at the context positions), V [N,kvh,T,hd]."""
        return project_kv(self, ctx, cos, sin)

    def conv(self, z, base, dyn, side, B):
        """z [N, A*B, H]; dyn [N, A*B, 2, K, G]; taps stay inside each block of B rows."""
        c = self.c
        N, R, H = z.shape
        A = R // B
        zb = z.view(N, A, B, H)
        dy = dyn.view(N, A, B, 2, c.conv_k, -1)
        out = None
        for tap in range(c.conv_k):
            w = base[side, tap].to(z.dtype) + dy[:, :, :, side, tap].repeat_interleave(c.conv_group, dim=-1)
            if tap == 0:
                zs = zb
            else:
                zs = F.pad(zb[:, :, :B - tap], (0, 0, tap, 0))  # z[t - tap], zero before the block start
            term = w * zs
            out = term if out is None else out + term
        return out.reshape(N, R, H)

    def forward(self, x, B, cos_b, sin_b, kc, vc, mask):
        """x [N, R=A*B, H] block rows; kc/vc the context K/V; mask [N, 1, R, T+R] additive."""
        c = self.c
        N, R, H = x.shape
        v2 = c.version == 2
        u = self.attn_norm(x)
        if v2:
            dyn = self.attn_conv_proj(u)
            u = self.conv(u, self.attn_conv_base, dyn, 0, B)
        q, k, v = project_qkv(self, u, cos_b, sin_b)
        K, V = repeat_kv(torch.cat([kc.to(k.dtype), k], dim=2), torch.cat([vc.to(v.dtype), v], dim=2), c.n_heads)
        # 3-D bmm over contiguous operands: torch 1.13's CPU matmul on transposed 4-D views is ~100x slower
        S = K.shape[2]
        qq = q.reshape(N * c.n_heads, R, c.head_dim).contiguous()
        kt = K.reshape(N * c.n_heads, S, c.head_dim).transpose(1, 2).contiguous()
        s = torch.bmm(qq, kt).view(N, c.n_heads, R, S) * (1.0 / math.sqrt(c.head_dim))
        sf = s.to(torch.promote_types(s.dtype, torch.float32))
        p = torch.softmax(sf + mask.to(sf.dtype), dim=-1).to(V.dtype)
        a = torch.bmm(p.reshape(N * c.n_heads, R, S), V.reshape(N * c.n_heads, S, c.head_dim).contiguous())
        a = a.view(N, c.n_heads, R, c.head_dim).transpose(1, 2).reshape(N, R, c.n_heads * c.head_dim)
        o = self.o_proj(a)
        if v2:
            o = self.conv(o, self.attn_conv_base, dyn, 1, B)
        x = x + o
        u = self.ffn_norm(x)
        if v2:
            dyn = self.ffn_conv_proj(u)
            u = self.conv(u, self.ffn_conv_base, dyn, 0, B)
        o = swiglu(self, u)
        if v2:
            o = self.conv(o, self.ffn_conv_base, dyn, 1, B)
        return x + o


class DFlashDraft(nn.Module):
    """The draft's own weights. The target's embedding/head matrix `emb` [V, H] is passed in (frozen)."""

    def __init__(self, c: DraftConfig):
        super().__init__()
        self.c = c
        H = c.hidden
        self.fc = nn.Linear(len(c.tap_layers) * c.target_hidden, H, bias=False)
        self.enc_norm = RMSNorm(H, c.eps)
        self.layers = nn.ModuleList([DraftLayer(c) for _ in range(c.n_layers)])
        self.out_norm = RMSNorm(H, c.eps)
        if c.version == 2:
            self.sel_hidden = nn.Linear(H, c.sel_rank, bias=False)
            self.sel_pred = nn.Parameter(torch.zeros(c.vocab_size, c.sel_rank))
            self.sel_succ = nn.Parameter(torch.zeros(c.vocab_size, c.sel_rank))
        self.reset_parameters()

    def reset_parameters(self):
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0.0, 0.02)
        for l in self.layers:
            if self.c.version == 2:
                nn.init.zeros_(l.attn_conv_proj.weight)
                nn.init.zeros_(l.ffn_conv_proj.weight)
        c = self.c
        if c.version == 2:
            nn.init.normal_(self.sel_pred, 0.0, c.sel_rank ** -0.25)  # predecessor random, successor 0: score == unary
            nn.init.zeros_(self.sel_succ)

    # ---------------------------------------------------------------- forward
    def context(self, feats):
        """feats [N, T, n_taps*Ht] -> ctx rows [N, T, H] (fc kept in fp32)."""
        with torch.autocast("cpu", enabled=False):
            y = F.linear(feats.to(self.fc.weight.dtype), self.fc.weight)
            return self.enc_norm(y)

    def block_hidden(self, emb, feats, anchors, first, B=None):
        """emb [V,H] target embedding; feats [N,T,F]; anchors [N,A] (bonus positions; context = rows < anchor);
        first [N,A] bonus tokens. Returns final-normed rows h [N, A, B, H]."""
        c = self.c
        B = B or c.block_size
        N, A = anchors.shape
        T = feats.shape[1]
        R = A * B
        ctx = self.context(feats)
        dt = ctx.dtype
        ids = torch.full((N, A, B), c.mask_id, dtype=torch.long)
        ids[:, :, 0] = first
        x = F.embedding(ids.view(N, R), emb).to(dt)
        pos_b = (anchors.unsqueeze(-1) + torch.arange(B)).view(N, R)
        cos_b, sin_b = rope_tables(pos_b, c.head_dim, c.rope_theta, dt)
        cos_b, sin_b = cos_b.unsqueeze(1), sin_b.unsqueeze(1)
        cos_c, sin_c = rope_tables(torch.arange(T), c.head_dim, c.rope_theta, dt)
        # mask: block (i) row sees context j < anchor_i and its own block
        ctx_ok = torch.arange(T).view(1, 1, T) < anchors.unsqueeze(-1)             # [N, A, T]
        ctx_ok = ctx_ok.unsqueeze(2).expand(N, A, B, T).reshape(N, R, T)
        blk = torch.arange(R) // B
        blk_ok = (blk.view(R, 1) == blk.view(1, R)).unsqueeze(0).expand(N, R, R)
        ok = torch.cat([ctx_ok, blk_ok], dim=-1)
        mask = torch.zeros(ok.shape, dtype=dt).masked_fill(~ok, float("-inf")).unsqueeze(1)
        for layer in self.layers:
            kc, vc = layer.ctx_kv(ctx, cos_c, sin_c)
            x = layer(x, B, cos_b, sin_b, kc, vc, mask)
        return self.out_norm(x).view(N, A, B, -1)

    @staticmethod
    def logits(emb, h):
        return F.linear(h, emb.to(h.dtype))

    def selector_scores(self, h, logits, prev, k=None):
        """h [..., H] rows 1..B-1; logits [..., V]; prev [...] previous token per row.
        Returns cand [..., k], score [..., k] (unary + <pred[prev]*g, succ[cand]>)."""
        k = k or self.c.sel_top_k
        unary, cand = torch.topk(logits, k, dim=-1)
        g = self.sel_hidden(h)
        ag = self.sel_pred[prev].to(g.dtype) * g
        succ = self.sel_succ[cand].to(g.dtype)
        score = unary + (succ * ag.unsqueeze(-2)).sum(-1).to(unary.dtype)
        return cand, score


def block_loss(model, emb, feats, toks, lens, anchors, gamma, sel_weight=1.0, teacher=None, distill=0.0):
    """Training loss for a batch. toks [N, T+B] (padded), lens [N], anchors [N, A] (-1 = unused slot).
    Rows k = 1..B-1 of each block are supervised with toks[a + k] when a + k < len, weighted
    exp(-(k-1)/gamma). DFlash2 adds the selector CE over the top-k candidates with the true predecessor
    (rows whose true token is not a candidate are skipped). With teacher = (ids [N, T, K], logp [N, T, K]),
    the target's K most likely next tokens after every position, distill > 0 adds distill x the
    cross-entropy of the draft's distribution against the target's (renormalised over its top K) at
    the same rows and weights: row k predicts the token at a + k, which the target predicted from
    position a + k - 1. Returns (loss, stats dict)."""
    c = model.c
    B = c.block_size
    N, A = anchors.shape
    valid_a = anchors >= 0
    a = anchors.clamp_min(0)
    first = toks.gather(1, a)
    h = model.block_hidden(emb, feats, a, first)                       # [N,A,B,H]
    hr = h[:, :, 1:]                                                    # rows 1..B-1
    lg = DFlashDraft.logits(emb, hr).float()                            # [N,A,B-1,V]
    k = torch.arange(1, B)
    pos = a.unsqueeze(-1) + k                                           # [N,A,B-1]
    lab = toks.gather(1, pos.view(N, -1)).view(N, A, B - 1)
    ok = (pos < lens.view(N, 1, 1)) & valid_a.unsqueeze(-1)
    w = torch.exp(-(k.float() - 1) / gamma).view(1, 1, -1) * ok.float()
    ce = F.cross_entropy(lg.reshape(-1, lg.shape[-1]), lab.reshape(-1), reduction="none").view(N, A, B - 1)
    wsum = w.sum().clamp_min(1e-6)
    loss = (ce * w).sum() / wsum
    soft = None
    if teacher is not None and distill > 0:
        t_ids, t_lp = teacher
        K = t_ids.shape[-1]
        src = (pos - 1).clamp_max(t_ids.shape[1] - 1).view(N, -1, 1).expand(N, A * (B - 1), K)
        ids_k = t_ids.gather(1, src).view(N, A, B - 1, K)
        p_k = torch.softmax(t_lp.gather(1, src).view(N, A, B - 1, K).float(), dim=-1)
        lq = torch.log_softmax(lg, dim=-1).gather(-1, ids_k)
        soft = -(p_k * lq).sum(-1)
        loss = loss + distill * (soft * w).sum() / wsum
    with torch.no_grad():
        hit = (lg.argmax(-1) == lab) & ok
        # teacher-forced accepted length per block (greedy v1 rule): leading run of hits
        run = torch.cumprod(hit.long(), dim=-1).sum(-1)
        stats = {"ce": float(loss), "acc1": float(hit[:, :, 0].sum() / ok[:, :, 0].sum().clamp_min(1)),
                 "tau": float((1 + run.float())[valid_a].mean()), "rows": int(ok.sum())}
        if soft is not None:
            stats["soft_ce"] = float((soft * w).sum() / wsum)
    if c.version == 2:
        prev = torch.cat([first.unsqueeze(-1), lab[:, :, :-1]], dim=-1)  # true predecessor of each row
        cand, score = model.selector_scores(hr, lg, prev)
        match = cand == lab.unsqueeze(-1)
        has = match.any(-1) & ok
        tgt = match.float().argmax(-1)
        sce = F.cross_entropy(score.float().reshape(-1, score.shape[-1]), tgt.reshape(-1),
                              reduction="none").view(N, A, B - 1)
        ws = w * has.float()
        sloss = (sce * ws).sum() / ws.sum().clamp_min(1e-6)
        loss = loss + sel_weight * sloss
        with torch.no_grad():
            shit = (score.argmax(-1) == tgt) & has
            stats["sel_ce"] = float(sloss)
            stats["sel_acc"] = float(shit.sum() / has.sum().clamp_min(1))
            stats["cover"] = float(has.sum() / ok.sum().clamp_min(1))
    return loss, stats


@torch.no_grad()
def propose(model, emb, feats, bonus, B=None):
    """One block like pf_dflash_propose (greedy). feats [P, F] context rows (positions 0..P-1), bonus at P.
    Returns (logits [B-1, V], tokens [B-1], cand/score (v2) or None)."""
    c = model.c
    B = B or c.block_size
    P = feats.shape[0]
    h = model.block_hidden(emb, feats.unsqueeze(0), torch.tensor([[P]]), torch.tensor([[bonus]]), B)[0, 0]
    lg = DFlashDraft.logits(emb, h[1:])
    if c.version != 2:
        return lg, [int(torch.argmax(lg[t])) for t in range(B - 1)], None
    unary, cand = topk_by_id(lg, c.sel_top_k)
    g = model.sel_hidden(h[1:])
    prev, toks, scores = bonus, [], []
    for t in range(B - 1):
        ag = model.sel_pred[prev].to(g.dtype) * g[t]
        sc = unary[t] + (model.sel_succ[cand[t]].to(g.dtype) * ag).sum(-1)
        j = int(torch.argmax(sc))  # first max
        prev = int(cand[t, j])
        toks.append(prev)
        scores.append(sc)
    return lg, toks, (cand, torch.stack(scores))


def topk_by_id(lg, k):
    """Top-k per row by (value desc, id asc), like the C engine."""
    vals, ids = [], []
    for row in lg:
        _, i = torch.topk(row, min(row.shape[0], k + 8))
        order = sorted(i.tolist(), key=lambda j: (-float(row[j]), j))[:k]
        ids.append(order)
        vals.append([float(row[i]) for i in order])
    return torch.tensor(vals, dtype=lg.dtype), torch.tensor(ids)
