"""A user's own token arrays in a sweep (issue 32 item 1): ``run_sweep(tokens=...)``,
``sweep_inputs(..., tokens=...)`` and ``copyhead sweep --tokens FILE.npy``."""

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.sources import tokens_tag, user_seed_data
from copyhead_jax.sources_cli import load_tokens
from copyhead_jax.sweep import sweep_inputs


def cfg(n_seeds=2):
    return ch.preset("tiny").replace(task=dict(L=4, V=3, n_test=3),
                                     sweep=dict(P=(2, 5), n_seeds=n_seeds))  # fmt: skip


def test_each_seed_gets_its_own_block_of_rows():
    c = cfg()
    B = 5 + 3  # P_max + n_test
    tok = np.random.default_rng(0).integers(0, 3, size=(2 * B + 1, 4))
    inp = sweep_inputs(c, None, tokens=tok)
    # runs are P-major: run i * n_seeds + s is seed s
    for run in range(4):
        s = run % 2
        np.testing.assert_array_equal(np.asarray(inp.train[run]), tok[s * B : s * B + 5])
        np.testing.assert_array_equal(np.asarray(inp.test[run]), tok[s * B + 5 : (s + 1) * B])
    short = user_seed_data(tok, c, 3)  # a padding group cut to P_pad rows keeps the same test
    np.testing.assert_array_equal(np.asarray(short[1].train), tok[B : B + 3])
    np.testing.assert_array_equal(np.asarray(short[1].test), tok[B + 5 : 2 * B])


def test_bad_token_arrays_are_refused_in_one_line(tmp_path):
    c = cfg()
    for bad, match in [
        (np.zeros((15, 4), int), r"at least n_seeds x \(P_max \+ n_test\) = 2 x 8 = 16 rows"),
        (np.zeros((16, 5), int), r"tokens must have shape \[n, L\]"),
        (np.full((16, 4), 3), r"token indices in \[0, 2\]"),
    ]:
        with pytest.raises(ValueError, match=match) as e:
            ch.run_sweep(c, tokens=bad, progress=False)
        assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match=r"--tokens must be a \.npy file"):
        load_tokens(str(tmp_path / "t.txt"))
    (tmp_path / "t.npy").write_text("not an array")
    with pytest.raises(ValueError, match="cannot read"):
        load_tokens(str(tmp_path / "t.npy"))
    np.save(tmp_path / "ok.npy", np.zeros((16, 4), np.int64))
    assert load_tokens(str(tmp_path / "ok.npy")).shape == (16, 4)


def test_the_tag_names_the_array():
    a = np.arange(12).reshape(3, 4) % 3
    assert tokens_tag(a) == tokens_tag(a.astype(np.int64))
    b = a.copy()
    b[0, 0] = 2
    assert tokens_tag(a) != tokens_tag(b) and tokens_tag(a) != tokens_tag(a.reshape(4, 3))


def test_a_sweep_on_user_tokens_names_them_and_differs_from_the_source():
    """The fit sees the given rows: the result records their hash, and the same config on the
    task's own draws gives another training loss (different data, same everything else)."""
    c = cfg(n_seeds=1).replace(solver=dict(max_epochs=60, min_epochs=10))
    tok = np.zeros((8, 4), np.int64)  # constant sequences: a trivially different dataset
    tok[:, ::2] = 1
    res = ch.run_sweep(c, tokens=tok, progress=False)
    assert res.meta["tokens_sha256"] == tokens_tag(tok)
    own = ch.run_sweep(c, progress=False)
    assert "tokens_sha256" not in own.meta
    assert not np.allclose(np.asarray(res["train_loss"]), np.asarray(own["train_loss"]))
