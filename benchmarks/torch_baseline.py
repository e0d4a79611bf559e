"""Eager PyTorch baseline for ``bench_sweep.py``: one run of the MAP protocol, written the way a
careful researcher would write it in PyTorch.

Same model, objective and protocol as ``copyhead_jax.fit.adam.Trainer`` for one run: the head of
docs/theory.md §2 in the one-hot form (``M = U W^G U^T / N``, ``R = W^O U^T``, logits read out of
``M`` by indexing, values out of ``R``), the energy U with coupled L2 (prior terms inside U),
full-batch Adam with the same per-block learning-rate factors and schedule, and the same
early-stopping rule. Linear attention uses the same reassociated form as the JAX engine
(``f = c Phi (M (Phi^T val))``, no ``L x L`` array), so both sides do the same work.

torch is a benchmark-only extra (``pip install copyhead_jax[bench]``); the package never
imports it.
"""

from __future__ import annotations

import math

import numpy as np
import torch


def lr_at(step: int, *, lr: float, warm: int, total: int, schedule: str, final_frac: float):
    """``copyhead_jax.fit.adam.lr_schedule`` in plain Python (optax's linear warm-up + cosine)."""
    if step < warm:
        return lr * step / max(warm, 1)
    if schedule == "constant":
        return lr
    k = min(step - warm, max(total - warm, 1))
    cos = 0.5 * (1 + math.cos(math.pi * k / max(total - warm, 1)))
    return lr * ((1 - final_frac) * cos + final_frac)


def device() -> torch.device:
    """CUDA when JAX runs on a GPU too (the comparison is then GPU against GPU), else CPU."""
    import jax

    gpu = torch.cuda.is_available() and jax.default_backend() == "gpu"
    return torch.device("cuda" if gpu else "cpu")


class TorchRun:
    """One run: weights (from the JAX init, so both start from the same point), Adam, data."""

    def __init__(self, head, cfg, tokens: np.ndarray, mask: np.ndarray, *, threads: int = 0):
        if threads:
            torch.set_num_threads(threads)
        t, m = cfg.solver, cfg.model  # t: the AdamConfig
        self.cfg = cfg
        dev = self.device = device()
        f32 = lambda a: torch.tensor(np.asarray(a), dtype=torch.float32, device=dev)
        self.W_E, self.b = f32(head.W_E), f32(head.b)
        self.W_G, self.W_O_hat = f32(head.W_G), f32(head.W_O_hat)
        self.N, self.V = self.W_G.shape[0], self.W_E.shape[1]
        self.L = self.b.shape[1]
        self.chi = float(head.chi)
        self.attention = m.attention
        self.scale = getattr(head, "scale", 1.0)
        noise = cfg.posterior.sigma2 * (self.L if cfg.posterior.likelihood == "per_position" else 1)
        self.lik = cfg.posterior.chi / (2 * noise)
        self.sig = dict(W_E=m.sigma_e, b=m.sigma_p, W_G=m.sigma_G, W_O_hat=m.sigma_O)
        trained = ["W_G", "W_O_hat"] + (["W_E", "b"] if cfg.train.train_embeddings else [])
        N = self.N
        if t.lr_scaling == "raw":
            fac = dict(W_E=1.0, b=1.0, W_G=1.0, W_O_hat=math.sqrt(self.chi * N))
        else:
            fac = dict(W_E=N**-0.5, b=N**-0.5, W_G=1.0 / N, W_O_hat=N**-0.5)
        groups = []
        for k in trained:
            p = getattr(self, k)
            p.requires_grad_(True)
            groups.append({"params": [p], "lr": t.lr, "factor": fac[k]})
        try:  # the fused CPU kernel where this torch has it, else the multi-tensor one
            self.opt = torch.optim.Adam(groups, betas=(t.b1, t.b2), eps=t.eps, fused=True)
        except (RuntimeError, TypeError):
            self.opt = torch.optim.Adam(groups, betas=(t.b1, t.b2), eps=t.eps, foreach=True)
        self.t = torch.tensor(np.asarray(tokens), dtype=torch.long, device=dev)  # [P, L]
        self.keep = torch.tensor(np.asarray(mask) > 0, device=dev)
        P, L, V = self.t.shape[0], self.L, self.V
        # data-only index tensors, built once
        self.X = torch.nn.functional.one_hot(self.t, V).float()  # [P, L, V]
        self.Y = torch.roll(self.X, 1, dims=1)
        self.key_tok = self.t[:, None, :].expand(P, L, L)  # t_b for every (a, b)
        self.warm = int(round(type(head).warmup_frac(t) * t.max_epochs))  # None: head default
        self.step_count, self.best, self.since = 0, math.inf, 0

    def energy(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(U, sum of squared errors)`` on the masked training set."""
        V, N = self.V, self.N
        U = torch.cat([self.W_E.T, self.b.T], 0)  # [D, N]
        M = U @ (self.W_G @ U.T) / N
        R = (self.W_O_hat @ U.T) / math.sqrt(self.chi * N)  # [V, D]
        if self.attention == "softmax":
            q = M[self.t] + M[V:]  # [P, L, D]: row of the query's token + its position's row
            s = torch.gather(q[:, :, :V], 2, self.key_tok) + q[:, :, V:]
            A = torch.softmax(s, dim=-1)
            val = R[:, :V].T[self.t] + R[:, V:].T  # [P, L, V]
            f = torch.bmm(A, val)
        else:  # f = c Phi M Phi^T val, reassociated: K = Phi^T val, H = M K
            val = R[:, :V].T[self.t] + R[:, V:].T  # [P, b, v]
            K = torch.cat([torch.bmm(self.X.transpose(1, 2), val), val], 1)  # [P, D, V]
            H = torch.matmul(M, K)  # [P, D, V]
            f = self.scale * (
                torch.gather(H[:, :V], 1, self.t[:, :, None].expand(-1, -1, V)) + H[:, V:]
            )
        err = ((f - self.Y) ** 2).sum((1, 2))
        data = torch.where(self.keep, err, torch.zeros_like(err)).sum()
        prior = sum((getattr(self, k) ** 2).sum() / (2 * s**2) for k, s in self.sig.items())
        return self.lik * data + prior, data

    def step(self) -> tuple[float, bool]:
        """One Adam epoch and the early-stopping bookkeeping; returns ``(U, stopped)``."""
        t = self.cfg.solver
        lr = lr_at(
            self.step_count,
            lr=t.lr,
            warm=self.warm,
            total=t.max_epochs,
            schedule=t.schedule,
            final_frac=t.final_lr_frac,
        )
        for g in self.opt.param_groups:
            g["lr"] = lr * g["factor"]
        self.opt.zero_grad(set_to_none=True)
        U, sq = self.energy()
        U.backward()
        self.opt.step()
        self.step_count += 1
        u = U.item()
        w = u if t.monitor == "U" else sq.item()
        if not math.isfinite(self.best) or w < self.best - t.rel_tol * abs(self.best):
            self.best, self.since = w, 0
        else:
            self.since += 1
        stop = (self.since >= t.patience and self.step_count >= t.min_epochs) or (
            self.step_count >= t.max_epochs or not math.isfinite(u)
        )
        return u, stop

    def run(self, n_steps: int) -> float:
        u = math.nan
        for _ in range(n_steps):
            u, stop = self.step()
            if stop:
                break
        return u
