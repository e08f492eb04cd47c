"""The default training recipe in PyTorch, on the same bundled split: a reference for the
99% target (docs/results.md, section 2). Needs torch (the optional `torch` extra); the
packages never import it.

    python scripts/torch_reference.py
"""
import math
import time

import numpy as np
import torch
import torch.nn as nn

from vit.model.normalizer import Normalizer
from vit.train.data import load_digits

torch.set_num_threads(1)
d = load_digits()
norm = Normalizer.fit(d.x_train)
xtr, xte = norm(d.x_train), norm(d.x_test)
ytr, yte = d.y_train, d.y_test


class ViT(nn.Module):
    def __init__(s, P=4, D=64, H=4, M=128, K=10, C=1, img=8):
        super().__init__()
        N = (img // P) ** 2
        s.P = P
        s.H = H
        s.patch = nn.Linear(P * P * C, D)
        s.cls = nn.Parameter(torch.randn(1, 1, D) * .02)
        s.pos = nn.Parameter(torch.randn(1, N + 1, D) * .02)
        s.n1 = nn.LayerNorm(D)
        s.qkv = nn.Linear(D, 3 * D, bias=False)
        s.proj = nn.Linear(D, D, bias=False)
        s.n2 = nn.LayerNorm(D)
        s.fc1 = nn.Linear(D, M)
        s.fc2 = nn.Linear(M, D)
        s.n = nn.LayerNorm(D)
        s.head = nn.Linear(D, K)

    def forward(s, x):
        B, C, Hh, W = x.shape
        P = s.P
        x = x.reshape(B, C, Hh // P, P, W // P, P).permute(0, 2, 4, 3, 5, 1)
        x = x.reshape(B, -1, P * P * C)
        t = torch.cat([s.cls.expand(B, -1, -1), s.patch(x)], 1) + s.pos
        h = s.n1(t)
        B, T, D = h.shape
        q, k, v = s.qkv(h).reshape(B, T, 3, s.H, D // s.H).permute(2, 0, 3, 1, 4)
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D // s.H), -1) @ v
        t = t + s.proj(a.transpose(1, 2).reshape(B, T, D))
        t = t + s.fc2(nn.functional.gelu(s.fc1(s.n2(t)), approximate="tanh"))
        return s.head(s.n(t[:, 0]))


accs = []
for seed in [0, 1, 2]:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    m = ViT()
    E = 100
    bs = 64
    steps = math.ceil(len(xtr) / bs) * E
    opt = torch.optim.AdamW(m.parameters(), lr=3e-3, weight_decay=0.05)
    sch = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps)
    t0 = time.time()
    for _epoch in range(E):
        perm = rng.permutation(len(xtr))
        for i in range(0, len(xtr), bs):
            idx = perm[i:i + bs]
            x = xtr[idx]
            y = ytr[idx]
            lam = rng.beta(.2, .2)
            p = rng.permutation(len(idx))
            xm = lam * x + (1 - lam) * x[p]
            Y = np.eye(10)[y]
            ym = lam * Y + (1 - lam) * Y[p]
            out = m(torch.tensor(xm, dtype=torch.float32))
            target = torch.tensor(ym, dtype=torch.float32)
            loss = -(target * torch.log_softmax(out, -1)).sum(-1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sch.step()
    with torch.no_grad():
        acc = (m(torch.tensor(xte)).argmax(-1).numpy() == yte).mean()
    accs.append(acc)
    print(seed, acc, time.time() - t0, flush=True)
print("median", np.median(accs))
