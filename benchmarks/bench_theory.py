"""Phase diagram (50 L x 200 P, linear and softmax) by the vmapped JAX theory vs a scipy loop.

The JAX side is :func:`copyhead_jax.theory.phase_diagram` (grid + Newton, all vmapped, float64),
timed after compilation (best of ``--repeats``). The baseline is what one would write with
scipy: for every ``(L, P)``, ``scipy.optimize.minimize`` (L-BFGS-B) on the same closed-form
potential (NumPy) from a few starts that cover the known wells, keeping the best. Both must agree
on the global minimum; the agreement is reported with the timings.

    python benchmarks/bench_theory.py            # writes benchmarks/results/bench_theory.json

``--quick`` keeps the grid and times scipy on every 25th L only (scaled), 2 JAX rounds.
"""

from __future__ import annotations

import os

# The scipy baseline minimises functions of one or two variables: a multithreaded BLAS cannot help
# it, and on a shared 2-core machine OpenBLAS's spinning worker threads slowed it 10-50x (measured).
# One BLAS thread, set before NumPy loads (importing copyhead_jax does the same on small machines).
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402
import scipy  # noqa: E402
import scipy.optimize  # noqa: E402

import copyhead_jax.theory as th  # noqa: E402

# ---------------------------------------------------------------------------------------------
# NumPy copies of the closed forms (docs/theory.md §4) for the scipy baseline; checked against JAX.


def _np_QR(c1, cG, P, L, V, s):
    Pe = P / L if s["likelihood"] == "per_position" else P
    sG = s["sigma_G"] / L if s["linear_scale"] == "inv_L" else s["sigma_G"]
    c0, lam = s["chi"] * Pe / (2 * s["sigma2"]), s["sigma2"] / (Pe * s["sigma_O"] ** 2)
    se2, sp2 = s["sigma_e"] ** 2, s["sigma_p"] ** 2
    lam1 = sp2 + L * se2 / V
    r = c1 + cG / np.sqrt(L)
    g2 = r**2 + (1 - 1 / L) * cG**2
    br = (L / V) * lam / (lam + lam1 * r**2) + (1 - 1 / V) * (
        se2 * (L - 1) * c1**2 + L * lam * V
    ) / (se2 * g2 + lam * V)
    R = (r**2 / lam1**2 + (1 - 1 / L) * cG**2 / sp2**2) / (2 * sG**2)
    return c0 * br, R


def np_lin(c, P, L, V, s):
    Q, R = _np_QR(c[0], c[1], P, L, V, s)
    return Q + R


def np_soft(beta, P, L, V, s):
    b = float(np.atleast_1d(beta)[0])
    p = 1.0 / (1.0 + (L - 1) * np.exp(-b))
    aG = np.sqrt(L) * (p * L - 1) / (L - 1)
    Q, _ = _np_QR(1 - aG / np.sqrt(L), aG, P, L, V, s)
    return Q + (L - 1) * b**2 / (2 * s["sigma_G"] ** 2 * s["sigma_p"] ** 4)


def scipy_phase_diagram(params, L_values, P_values, attention):
    s = params.to_dict()
    V = params.V
    d = 2 if attention == "linear" else 1
    out = np.zeros((len(L_values), len(P_values), d))
    val = np.zeros((len(L_values), len(P_values)))
    for i, L in enumerate(L_values):
        for j, P in enumerate(P_values):
            if attention == "linear":
                starts = ([0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.5, -1.0], [2.0, 2.0])
                fun = lambda c, P=P, L=L: np_lin(c, P, L, V, s)  # noqa: E731
            else:
                starts = ([0.0], [np.log(L)], [2 * np.log(L)])
                fun = lambda b, P=P, L=L: np_soft(b, P, L, V, s)  # noqa: E731
            best = None
            for x0 in starts:
                r = scipy.optimize.minimize(fun, x0, method="L-BFGS-B")
                if best is None or r.fun < best.fun:
                    best = r
            val[i, j] = best.fun
            x = np.asarray(best.x)
            if attention == "linear" and x[0] + x[1] / np.sqrt(L) < 0:  # Z2 gauge r >= 0
                x = -x
            out[i, j] = x
    return out, val


def jax_values(params, L_values, P_values, pd, attention):
    """Potential at the JAX minimiser (to compare global values with scipy)."""
    s = params.to_dict()
    V = params.V
    v = np.zeros((len(L_values), len(P_values)))
    for i, L in enumerate(L_values):
        for j, P in enumerate(P_values):
            if attention == "linear":
                v[i, j] = np_lin([pd["c1"][i, j], pd["cG"][i, j]], P, L, V, s)
            else:
                v[i, j] = np_soft(pd["beta"][i, j], P, L, V, s)
    return v


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="paper", choices=("paper", "plain"))
    ap.add_argument("--n-L", type=int, default=50)
    ap.add_argument("--n-P", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=None, help="default 3 (2 with --quick)")
    ap.add_argument(
        "--baseline-stride",
        type=int,
        default=None,
        help="run scipy on every k-th L only and scale its time by k (1 = the full grid); "
        "default 10 (25 with --quick)",
    )
    ap.add_argument("--quick", action="store_true", help="scipy on fewer rows, fewer rounds")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "bench_theory.json"))
    args = ap.parse_args(argv)
    args.repeats = args.repeats or (2 if args.quick else 3)
    args.baseline_stride = args.baseline_stride or (25 if args.quick else 10)

    params = th.TheoryParams.preset(args.preset)
    L_values = np.arange(10, 10 + args.n_L)
    P_values = np.geomspace(1.0, 1e5, args.n_P)

    # the NumPy baseline evaluates the same function as the JAX closed form
    with jax.enable_x64(True):
        for c1, cG, P in ((0.3, 0.8, 40.0), (1.1, -0.4, 3000.0)):
            a = float(th.linear_potential(c1, cG, P=P, params=params))
            assert abs(a - np_lin([c1, cG], P, params.L, params.V, params.to_dict())) < 1e-9 * a
        a = float(th.softmax_potential(2.5, P=700.0, params=params))
        assert abs(a - np_soft(2.5, 700.0, params.L, params.V, params.to_dict())) < 1e-9 * a

    res = {
        "grid": {
            "L": [int(L_values[0]), int(L_values[-1]), len(L_values)],
            "P": [1.0, 1e5, len(P_values)],
            "preset": args.preset,
        }
    }
    total_jax = total_base = 0.0
    for att in ("linear", "softmax"):
        t0 = time.perf_counter()
        pd = th.phase_diagram(params, P_values, L_values=L_values, attention=att)
        compile_s = time.perf_counter() - t0
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            pd = th.phase_diagram(params, P_values, L_values=L_values, attention=att)
            times.append(time.perf_counter() - t0)
        jax_s = min(times)

        sub = L_values[:: args.baseline_stride]
        t0 = time.perf_counter()
        order_b, val_b = scipy_phase_diagram(params, sub, P_values, att)
        base_s = (time.perf_counter() - t0) * args.baseline_stride

        val_j = jax_values(
            params,
            sub,
            P_values,
            {
                k: v[:: args.baseline_stride]
                for k, v in pd.items()
                if isinstance(v, np.ndarray) and v.ndim == 2
            },
            att,
        )
        rel = (val_j - val_b) / np.abs(val_b)
        keys = ("c1", "cG") if att == "linear" else ("beta",)
        x_j = np.stack([pd[k][:: args.baseline_stride] for k in keys], axis=-1)
        same = np.abs(rel) < 1e-8
        res[att] = {
            "jax_s": jax_s,
            "jax_first_call_s": compile_s,
            "scipy_s": base_s,
            "ratio": base_s / jax_s,
            "points": int(len(L_values) * len(P_values)),
            "scipy_points_timed": int(len(sub) * len(P_values)),
            # > 0: scipy found a lower value than JAX (JAX missed the global minimum)
            "max_rel_value_excess_jax": float(np.max(rel)),
            "frac_scipy_worse_by_1e-8": float(np.mean(rel < -1e-8)),
            # where both reach the same value: minimiser gap (scipy's default tolerances)
            "max_minimiser_diff_same_value": float(np.max(np.abs(x_j - order_b)[same])),
        }
        total_jax += jax_s
        total_base += base_s
        print(
            f"{att}: jax {jax_s:.3f}s (first call {compile_s:.1f}s), scipy {base_s:.1f}s, "
            f"ratio {base_s / jax_s:.0f}x",
            file=sys.stderr,
        )
    res["total"] = {"jax_s": total_jax, "scipy_s": total_base, "ratio": total_base / total_jax}
    res["quick"] = args.quick
    res["baseline_stride"] = args.baseline_stride
    res["blas_threads"] = os.environ.get("OPENBLAS_NUM_THREADS")
    res["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    res["maxrss_mb"] = kb / 1024 / (1024 if sys.platform == "darwin" else 1)
    res["environment"] = {
        "platform": platform.platform(),
        "processor": platform.processor(),
        "cpu_count": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
        "device": [str(d) for d in jax.devices()],
        "python": sys.version.split()[0],
        "versions": {
            "jax": jax.__version__,
            "jaxlib": jax.lib.__version__ if hasattr(jax.lib, "__version__") else None,
            "numpy": np.__version__,
            "scipy": scipy.__version__,
        },
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2))
    print(json.dumps(res["total"]))
    return res


if __name__ == "__main__":
    main()
