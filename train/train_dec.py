#!/usr/bin/env python3
"""Train a Dec head (decision head) from rounds logged by the C engine.

  pocketflash gen -m TARGET -d DRAFT -i PROMPTS.jsonl -o /dev/null --log-rounds rounds.bin
  train_dec.py rounds.bin dec.json [--calibration calib.md] [--seed S] [--l2 L]
  pocketflash dec-attach -d DRAFT --dec dec.json -o DRAFT-with-dec.gguf

Model (draft/dec.h): s_k = sigmoid(w_t.h_target + w_d.h_draft_k + pos_bias[k-1] + bias), the
probability that the target keeps draft k given that it kept drafts 1..k-1. A round that proposed
nd drafts and kept a gives samples k = 1..min(a+1, nd) with label (k <= a). Logistic loss with L2,
features standardised during training and folded back into raw weights. 20% of the rounds (by
index, seeded) are held out for the calibration table (predicted vs observed per bucket).
"""
import argparse
import json
import struct
import sys

import numpy as np

MAGIC = 0x52434544


def read_rounds(path):
    data = open(path, 'rb').read()
    off, rounds = 0, []
    while off + 16 <= len(data):
        magic, dim, nd, a = struct.unpack_from('<iiii', data, off)
        if magic != MAGIC or dim <= 0 or nd < 1 or a < 0 or a > nd:
            raise SystemExit(f'{path}: bad round header at byte {off}')
        off += 16
        n = dim * (1 + nd + 1)
        if off + 4 * n > len(data):
            raise SystemExit(f'{path}: truncated round at byte {off}')
        v = np.frombuffer(data, dtype='<f4', count=n, offset=off)
        off += 4 * n
        rounds.append((v[:dim], v[dim:].reshape(nd + 1, dim), a))
    return rounds


def samples(rounds, n_pos):
    X, P, Y = [], [], []
    for h_t, h_d, a in rounds:
        nd = h_d.shape[0] - 1
        for k in range(1, min(a + 1, nd) + 1):
            X.append(np.concatenate([h_t, h_d[k]]))
            P.append(min(k - 1, n_pos - 1))
            Y.append(1.0 if k <= a else 0.0)
    return np.array(X, np.float64), np.array(P), np.array(Y)


def fit(X, P, Y, n_pos, l2, steps=300):
    import torch
    torch.manual_seed(0)
    mu, sd = X.mean(0), X.std(0) + 1e-6
    Xs = torch.tensor((X - mu) / sd)
    onehot = torch.zeros(len(P), n_pos, dtype=torch.float64)
    onehot[torch.arange(len(P)), torch.tensor(P)] = 1
    y = torch.tensor(Y)
    w = torch.zeros(X.shape[1], dtype=torch.float64, requires_grad=True)
    pb = torch.zeros(n_pos, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, pb], lr=1, max_iter=steps, line_search_fn='strong_wolfe')

    def closure():
        opt.zero_grad()
        z = Xs @ w + onehot @ pb
        loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y) + l2 * (w * w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    w_raw = w.detach().numpy() / sd
    bias = -float((w.detach().numpy() * mu / sd).sum())
    return w_raw, bias, pb.detach().numpy()


def predict(X, P, w, b, pb):
    z = X @ w + b + pb[P]
    return 1 / (1 + np.exp(-z))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('rounds')
    ap.add_argument('out')
    ap.add_argument('--calibration')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--l2', type=float, default=1e-3)
    ap.add_argument('--positions', type=int, default=16)
    args = ap.parse_args()
    rounds = read_rounds(args.rounds)
    if len(rounds) < 20:
        raise SystemExit(f'{args.rounds}: only {len(rounds)} rounds, need at least 20')
    rng = np.random.default_rng(args.seed)
    idx = rng.permutation(len(rounds))
    n_val = max(1, len(rounds) // 5)
    val = [rounds[i] for i in idx[:n_val]]
    train = [rounds[i] for i in idx[n_val:]]
    Xt, Pt, Yt = samples(train, args.positions)
    Xv, Pv, Yv = samples(val, args.positions)
    w, b, pb = fit(Xt, Pt, Yt, args.positions, args.l2)
    pv = predict(Xv, Pv, w, b, pb)
    eps = 1e-7
    ll = -np.mean(Yv * np.log(pv + eps) + (1 - Yv) * np.log(1 - pv + eps))
    base = np.clip(Yt.mean(), eps, 1 - eps)
    ll0 = -np.mean(Yv * np.log(base) + (1 - Yv) * np.log(1 - base))
    lines = ['| predicted | samples | mean predicted | observed |', '|---|---|---|---|']
    for lo in np.arange(0, 1, 0.1):
        m = (pv >= lo) & (pv < lo + 0.1 + (1e-9 if lo >= 0.9 else 0))
        if m.sum():
            lines.append(f'| {lo:.1f}-{lo + 0.1:.1f} | {int(m.sum())} | {pv[m].mean():.3f} | {Yv[m].mean():.3f} |')
    report = (f'Dec head: {len(train)} training rounds ({len(Yt)} samples), {len(val)} held-out rounds '
              f'({len(Yv)} samples); held-out log loss {ll:.4f} vs {ll0:.4f} for a constant '
              f'(base rate {Yt.mean():.3f}); accuracy {np.mean((pv > 0.5) == (Yv > 0.5)):.3f}\n\n' + '\n'.join(lines) + '\n')
    print(report)
    if args.calibration:
        open(args.calibration, 'w').write(report)
    json.dump({'weight': [float(x) for x in w], 'bias': b, 'pos_bias': [float(x) for x in pb]}, open(args.out, 'w'))


if __name__ == '__main__':
    main()
