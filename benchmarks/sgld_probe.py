"""Where does the SGLD kernel's time go on an accelerator? ``bench_sgld``'s candidates plus two
variant of ``sgld_chains`` (diagnostics off) with ``noise="jax"`` (``jax.random.normal``) instead of
the kernel's counter-mode Threefry. Prints chain-steps per second relative to ``blackjax.sgld``.
(A no-noise variant was tried and dropped: on the CPU it ran 34x faster than blackjax at 64
chains, far above gradient descent alone, so XLA must have removed work; it measured nothing.)

    python benchmarks/sgld_probe.py [--chains 1 64] [--steps 500] [--out FILE]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

import jax

sys.path.insert(0, str(Path(__file__).parent))
import bench_sgld as B  # noqa: E402


def _with_noise(noise: str):
    def make(potential, init, **kw):
        return B.ours_loop(potential, init, record_potential=False, noise=noise, **kw)

    return make


VARIANTS = {"jax_random_normal": _with_noise("jax")}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chains", type=int, nargs="+", default=[1, 64])
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args(argv)
    potential, init = B.make_problem(1000, 299)
    cands = {**B.CANDIDATES, **VARIANTS}
    key = jax.random.key(0)
    out = {"backend": jax.default_backend(), "rows": []}
    for c in a.chains:
        kw = dict(n_chains=c, n_steps=a.steps, step_size=1e-3)
        comp = {n: B.compile_fn(make(potential, init, **kw), key) for n, make in cands.items()}
        wall, _ = B.interleaved_times([f for f, _, _ in comp.values()], key, a.repeats)
        best = {n: min(ts) for n, ts in zip(comp, wall)}
        ratio = {n: best["blackjax"] / t for n, t in best.items()}
        out["rows"].append({"chains": c, "best_s": best, "ratio_vs_blackjax": ratio})
        print(f"chains={c:3d} " + " ".join(f"{n} {r:.2f}x" for n, r in ratio.items()), flush=True)
    if a.out:
        a.out.write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    functools.partial(main)()
