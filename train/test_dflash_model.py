"""Self-checks of dflash_model.py on tiny random sizes (seconds):
  1. a batch of many blocks (shared attention with the block mask) == each block run alone with only
     its own context prefix, so no block sees another block or context at/after its anchor;
  2. DFlash2 at identity init (conv base identity tap, dyn proj 0, successor 0) == DFlash with the same
     weights, and its selector walk == the argmax;
  3. the conv against an explicit loop of dflash.md §2 (taps never before the block start);
  4. block_loss runs forward/backward for both versions.
  /usr/bin/python3 train/test_dflash_model.py
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dflash_model import DraftConfig, DFlashDraft, block_loss, propose  # noqa: E402


def tiny(version):
    return DraftConfig(hidden=64, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=16, ffn=96, vocab_size=50,
                       target_hidden=32, tap_layers=[0, 1], block_size=5, mask_id=49, version=version,
                       conv_k=2, conv_group=16, sel_rank=8, sel_top_k=4)


def main():
    torch.manual_seed(0)
    torch.set_default_dtype(torch.float64)
    c = tiny(1)
    m = DFlashDraft(c).double()
    for p in m.parameters():  # break the norms' all-ones symmetry
        p.data += 0.05 * torch.randn_like(p)
    emb = torch.randn(c.vocab_size, c.hidden)
    N, T = 2, 12
    feats = torch.randn(N, T, 2 * c.target_hidden) * 3
    anchors = torch.tensor([[3, 7, 11], [0, 5, 9]])
    first = torch.randint(0, 48, (N, 3))
    h = m.block_hidden(emb, feats, anchors, first)
    err = 0.0
    for n in range(N):
        for i in range(3):
            a = int(anchors[n, i])
            solo = m.block_hidden(emb, feats[n:n + 1, :max(a, 1)], torch.tensor([[a]]), first[n:n + 1, i:i + 1])
            if a == 0:  # no context at all: nothing to compare the padded row against but the block itself
                solo = m.block_hidden(emb, feats[n:n + 1], torch.tensor([[a]]), first[n:n + 1, i:i + 1])
            err = max(err, float((solo[0, 0] - h[n, i]).abs().max()))
    print(f"1. batched blocks vs alone: max diff {err:.2e}")
    assert err < 1e-10

    c2 = tiny(2)
    m2 = DFlashDraft(c2).double()
    missing, unexpected = m2.load_state_dict(m.state_dict(), strict=False)
    assert not unexpected and all("conv" in k or "sel_" in k for k in missing), missing
    h2 = m2.block_hidden(emb, feats, anchors, first)
    d = float((h2 - h).abs().max())
    print(f"2. DFlash2 at identity init vs DFlash: max diff {d:.2e}")
    assert d < 1e-12
    lg, toks, _ = propose(m, emb, feats[0, :6], 7)
    lg2, toks2, (cand, score) = propose(m2, emb, feats[0, :6], 7)
    assert toks == toks2 and float((lg - lg2).abs().max()) < 1e-12, (toks, toks2)
    print(f"   selector walk == argmax at init: {toks2}")

    # 3. conv vs an explicit loop
    for p in m2.parameters():
        p.data += 0.1 * torch.randn_like(p)
    layer = m2.layers[0]
    B = c2.block_size
    z = torch.randn(1, 2 * B, c2.hidden)
    dyn = torch.randn(1, 2 * B, 2 * c2.conv_k * (c2.hidden // c2.conv_group))
    for side in (0, 1):
        got = layer.conv(z, layer.attn_conv_base, dyn, side, B)
        want = torch.zeros_like(z)
        G = c2.hidden // c2.conv_group
        for r in range(2 * B):
            t = r % B
            dy = dyn[0, r].view(2, c2.conv_k, G)
            for ch in range(c2.hidden):
                s = 0.0
                for tap in range(c2.conv_k):
                    if t - tap < 0:
                        continue
                    s += (layer.attn_conv_base[side, tap, ch] + dy[side, tap, ch // c2.conv_group]) * z[0, r - tap, ch]
                want[0, r, ch] = s
        d = float((got - want).abs().max())
        print(f"3. conv side {side} vs loop: max diff {d:.2e}")
        assert d < 1e-12
    # trained DFlash2 still: batched == alone
    h2 = m2.block_hidden(emb, feats, anchors, first)
    solo = m2.block_hidden(emb, feats[1:2, :5], torch.tensor([[5]]), first[1:2, 1:2])
    assert float((solo[0, 0] - h2[1, 1]).abs().max()) < 1e-10

    # 4. losses
    toks = torch.randint(0, 48, (N, T + B))
    lens = torch.tensor([T, T - 3])
    anc = torch.tensor([[4, 8, -1], [2, 6, 8]])
    for mm in (m, m2):
        loss, st = block_loss(mm, emb, feats, toks, lens, anc, 7.0)
        loss.backward()
        print(f"4. v{mm.c.version} loss {float(loss):.3f} {st}")
    print("ok")


if __name__ == "__main__":
    main()
