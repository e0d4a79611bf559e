"""``copyhead sweep --tokens FILE.npy``: a user's own token sequences instead of the task's
source; the rows are split into seeds by :func:`.sources.user_seed_data`."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def add_tokens_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tokens",
        default=None,
        metavar="FILE.npy",
        help="train and test on these int sequences [n, L] in [0, V) instead of the "
        "task's source: seed s uses rows s*B .. (s+1)*B - 1, B = P_max + n_test (the "
        "first P_max for training, nested; the last n_test for testing)",
    )


def load_tokens(path: str | None) -> np.ndarray | None:
    """The array in ``path`` (``.npy``), or ``None``; one-line ``ValueError`` if unreadable
    (shape and range are checked against the config by ``run_sweep``)."""
    if path is None:
        return None
    if Path(path).suffix != ".npy":
        raise ValueError(f"--tokens must be a .npy file, got {path!r}")
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ValueError(f"--tokens: cannot read {path!r} as a .npy array ({e})") from None
