"""The chain-health thresholds live in one table (``config/health.py``): its records judge as
they say, and no other module of the package writes an R-hat, ESS or acceptance bar."""

import ast
import math
import re
from pathlib import Path

import numpy as np
import pytest

from copyhead_jax.config import MIXING, Mixing

PKG = Path(__file__).resolve().parents[2] / "copyhead_jax"
TABLE = PKG / "config" / "health.py"
#: a name or expression that holds an R-hat, an ESS or a minimum acceptance
RHAT = re.compile(r"(?i)rhat|r_hat|\brh\b")
ESS = re.compile(r"(?i)\bess\b|\bess_|_ess\b|\bes\b|n_eff")
ACCEPT = re.compile(r"(?i)accept_min")
#: a bar written in text: "R-hat > 1.05", "ESS < 100", "R-hat <= 1.01"
TEXT = re.compile(r"(?:R-hat|ESS)\s*[<>]=?\s*\d")


def _number(node) -> float | None:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value)
    return None


def _is_bar(name: str, x: float | None) -> bool:
    """A literal ``x`` beside ``name`` is a threshold: an R-hat bar (> 1: R-hat's range starts
    at 1), an ESS count (>= 1: 0 means no target, below 1 an SMC weight fraction), or a minimum
    acceptance."""
    if x is None or not math.isfinite(x):
        return False
    return bool(
        (RHAT.search(name) and x > 1)
        or (ESS.search(name) and x >= 1)
        or (ACCEPT.search(name) and x > 0)
    )


def threshold_literals(src: str) -> list[str]:
    """``line: code`` of every R-hat/ESS/acceptance threshold written as a literal in ``src``:
    compared with, assigned to or passed as a name that holds one, or written in a string."""
    tree, hits = ast.parse(src), []
    docs = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef)
        and n.body
        and isinstance(n.body[0], ast.Expr)
    }
    for n in ast.walk(tree):
        pairs = []
        if isinstance(n, ast.Compare):
            sides = [n.left, *n.comparators]
            for a, b in zip(sides, sides[1:]):
                pairs += [(ast.unparse(a), b), (ast.unparse(b), a)]
        elif isinstance(n, ast.Assign):
            names = ast.unparse(ast.Tuple(n.targets, ast.Load()))
            vals = n.value.elts if isinstance(n.value, ast.Tuple) else [n.value]
            pairs += [(names, v) for v in vals]
        elif isinstance(n, ast.AnnAssign) and n.value is not None:
            pairs.append((ast.unparse(n.target), n.value))
        elif isinstance(n, ast.keyword) and n.arg:
            pairs.append((n.arg, n.value))
        elif isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Constant):
            flag = str(n.args[0].value)  # add_argument("--rhat-target", default=...)
            pairs += [(flag, k.value) for k in n.keywords if k.arg == "default"]
        elif isinstance(n, ast.arguments):
            args = [*n.posonlyargs, *n.args]
            pairs += list(zip([a.arg for a in args[len(args) - len(n.defaults) :]], n.defaults))
            pairs += [(a.arg, d) for a, d in zip(n.kwonlyargs, n.kw_defaults) if d is not None]
        elif (
            isinstance(n, ast.Constant)
            and isinstance(n.value, str)
            and id(n) not in docs
            and TEXT.search(n.value)
        ):
            hits.append(f"{n.lineno}: {n.value!r}")
        hits += [
            f"{v.lineno}: {name} ~ {ast.unparse(v)}"
            for name, v in pairs
            if _is_bar(name, _number(v))
        ]
    return hits


def test_the_scan_finds_the_bars_it_should():
    src = "\n".join(
        [
            "RHAT_MAX, ESS_MIN = 1.05, 100",
            "ok = rhat <= 1.1 and ess[k] >= 50",
            "def f(x, rhat_max=1.1, *, accept_min=0.3): pass",
            "g(h, ess_min=400.0)",
            "rhat_target: float = 1.01",
            "n = int(np.sum(rh > 1.05))",
            "msg = f'flagged (R-hat > 1.05 or ESS < {m}): {x}'",
            "p.add_argument('--window-rhat-target', type=float, default=1.01)",
            # not bars: R-hat's range, no target, an SMC fraction, a step-size target, a docstring
            "check(rhat_target > 1)",
            "ess_target: float = 0.0",
            "smc(x, ess_target=0.5)",
            "target_accept = 0.75",
            "def h():\n    '''ESS >= 400 in words'''",
        ]
    )
    lines = sorted(int(h.split(":")[0]) for h in threshold_literals(src))
    assert lines == [1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8]


def test_no_module_but_the_table_writes_a_chain_health_threshold():
    hits = [
        f"{f.relative_to(PKG.parent)}:{h}"
        for f in sorted(PKG.rglob("*.py"))
        if f != TABLE
        for h in threshold_literals(f.read_text())
    ]
    assert hits == [], "\n".join(hits)


def test_every_purpose_says_why_and_judges_as_it_says():
    for name, m in MIXING.items():
        assert isinstance(m, Mixing) and len(m.why) > 20, name
        assert m.mixed(m.rhat_max, m.ess_min)
        assert not m.mixed(math.nextafter(m.rhat_max, 2), m.ess_min)
        assert not m.mixed(float("nan"), m.ess_min)  # a NaN diagnostic is not health
        if m.ess_min is not None:
            assert not m.mixed(m.rhat_max, math.nextafter(m.ess_min, 0))
            assert m.bar() == f"R-hat > {m.rhat_max:g} or ESS < {m.ess_min:g}"
    r = MIXING["transition_run"].mixed(np.array([1.0, 1.2, 1.0]), np.array([500, 500, 10]))
    assert r.tolist() == [True, False, False]
    with pytest.raises(ValueError, match="rhat_max"):
        Mixing(rhat_max=0.9)
