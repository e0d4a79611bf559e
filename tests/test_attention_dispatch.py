"""The attention kind is a class everywhere: outside ``models/`` and ``config/`` the package
reads what it needs from the head and theory classes and compares an attention's name as a
string in at most ``MAX_NAME_DISPATCH`` places; and every name has a head and a theory."""

import re
from pathlib import Path

import pytest

from copyhead_jax.config import ATTENTIONS

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "copyhead_jax"
MAX_NAME_DISPATCH = 5  # the bound of docs/guide/architecture.md ("A new head")
OWN = ("models", "config")  # where the names are defined and mapped to classes


def _name(names) -> str:
    return "(?:" + "|".join(re.escape(n) for n in names) + ")"


def name_dispatch(text: str, names=ATTENTIONS) -> list[tuple[int, str]]:
    """``(line, code)`` of every place that dispatches on an attention name written as a string:
    ``== 'x'`` / ``'x' !=``, membership in a literal (``in ('x', ...)``, not a ``for`` loop over
    one), ``head_class('x')`` / ``theory_of('x')`` / ``HEADS['x']``, a dict keyed by names and
    subscripted on the spot."""
    n = _name(names)
    lit = rf"""["']{n}["']"""
    direct = [
        rf"(?:==|!=)\s*{lit}",
        rf"{lit}\s*(?:==|!=)",
        rf"\b(?:head_class|theory_of)\(\s*{lit}\s*\)",
        rf"\b(?:HEADS|THEORIES)\[\s*{lit}\s*\]",
        rf"\{{\s*{lit}\s*:[^{{}}]*\}}\s*\[",
    ]
    member = re.compile(rf"\bin\s*[(\[{{][^)\]}}]*{lit}")
    hits = []
    for i, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        found = any(re.search(p, code) for p in direct)
        for m in member.finditer(code):
            if not re.search(r"\bfor\s+[\w\s,()]+$", code[: m.start()]):
                found = True
        if found:
            hits.append((i, line.strip()))
    return hits


def test_the_counter_catches_what_it_should():
    src = "\n".join(
        [
            'if att == "softmax":',
            'x = 1 if "linear" != a else 2',
            'if a in ("linear", "both"):',
            'cls = head_class("softmax")',
            'f = {"linear": 1, "softmax": 2}[a]',
            'for a in ("softmax", "linear"):',  # a loop over names: no dispatch
            'y = [f(a) for a in ("linear", "softmax")]',
            'label = "linear attention"',
            "check(attention)  # == 'softmax' in a comment",
        ]
    )
    assert [i for i, _ in name_dispatch(src)] == [1, 2, 3, 4, 5]


def test_the_attention_name_is_rarely_compared_outside_models_and_config():
    hits = [
        f"{f.relative_to(ROOT)}:{i}: {code}"
        for f in sorted(PKG.rglob("*.py"))
        if f.relative_to(PKG).parts[0] not in OWN
        for i, code in name_dispatch(f.read_text())
    ]
    assert len(hits) <= MAX_NAME_DISPATCH, "\n".join(hits)


@pytest.mark.parametrize("name", ATTENTIONS)
def test_every_attention_has_a_head_and_a_theory_that_agree(name):
    import jax
    import jax.numpy as jnp
    import numpy as np

    from copyhead_jax.config import ModelConfig
    from copyhead_jax.models import HEADS, init_head
    from copyhead_jax.theory import THEORIES

    head, theory = HEADS[name], THEORIES[name]
    assert head.theory is theory and head.name == theory.name == name
    for k in ("order_names", "two_branches", "transition_key", "gauge_fix"):
        assert getattr(head, k) == getattr(theory, k)
    # the engine's activation and the theory's attention of a logit matrix are one function
    # (linear: with the engine's scale 1/L^k at k = 0; the theory moves it into the prior)
    s = jax.random.normal(jax.random.key(0), (2, 5, 5))
    for causal in (False, True):
        m = ModelConfig(attention=name, width=4, causal=causal, linear_scale="none")
        h = init_head(jax.random.key(1), m, L=5, V=3, chi=1.0)
        assert type(h) is head
        np.testing.assert_allclose(
            np.asarray(h.activation(s)), np.asarray(theory.attention(s, causal)), rtol=1e-6, atol=0
        )
    assert jnp.all(theory.copy_logits(5, 2.0) == head.copy_logits(5, 2.0))
