"""Token sources: the Markov chain's law, today's draws at rho = 0, validation."""

import jax
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax import Config, TaskConfig
from copyhead_jax.cli.tokens import load_tokens
from copyhead_jax.data import sample_tokens, seed_data
from copyhead_jax.fit import sweep_inputs
from copyhead_jax.sources import (
    check_tokens,
    check_transition,
    dirichlet_transition,
    sample_chain,
    sample_task,
    stationary_law,
    sticky_transition,
    task_data,
    token_data,
    tokens_tag,
    transition_matrix,
    user_seed_data,
)


def _transition_counts(t: np.ndarray, V: int) -> np.ndarray:
    """``n[u, v]``: pairs (t_a, t_{a+1}) = (u, v) over every sequence and position."""
    n = np.zeros((V, V))
    np.add.at(n, (t[:, :-1].ravel(), t[:, 1:].ravel()), 1)
    return n


def _check_law(t: np.ndarray, T: np.ndarray):
    """Empirical transition frequencies and first-token frequencies within 5 binomial sd."""
    V = T.shape[0]
    n = _transition_counts(t, V)
    rows = n.sum(1, keepdims=True)
    sd = np.sqrt(T * (1 - T) / rows)  # binomial sd of a frequency given its row count
    assert np.all(np.abs(n / rows - T) <= 5 * sd + 1e-12)
    pi = stationary_law(T)
    f0 = np.bincount(t[:, 0], minlength=V) / len(t)
    assert np.all(np.abs(f0 - pi) <= 5 * np.sqrt(pi * (1 - pi) / len(t)))


@pytest.mark.parametrize("kind", ["sticky", "dirichlet", "given"])
def test_chain_follows_its_transition_matrix_from_the_stationary_law(kind):
    V, L = 4, 12
    if kind == "given":  # an asymmetric matrix with a zero entry and a non-uniform pi
        T = np.array(
            [[0.0, 0.5, 0.3, 0.2], [0.1, 0.6, 0.2, 0.1], [0.3, 0.3, 0.3, 0.1], [0.7, 0.1, 0.1, 0.1]]
        )
        task = TaskConfig(L=L, V=V, source="markov", transition=T.tolist())
    elif kind == "dirichlet":
        task = TaskConfig(L=L, V=V, source="markov", alpha=0.7, chain_seed=3)
    else:
        task = TaskConfig(L=L, V=V, source="markov", rho=0.6)
    T = transition_matrix(task)
    t = np.asarray(sample_task(jax.random.key(1), task, n=4000))
    assert t.shape == (4000, L) and t.dtype == np.int32
    _check_law(t, T)
    if kind == "given":
        assert _transition_counts(t, V)[0, 0] == 0  # a zero-probability move never happens


def test_stationary_law_is_left_eigenvector():
    T = dirichlet_transition(5, 0.5, seed=0)
    pi = stationary_law(T)
    np.testing.assert_allclose(pi @ T, pi, atol=1e-12)
    assert abs(pi.sum() - 1) < 1e-12
    np.testing.assert_allclose(stationary_law(sticky_transition(5, 0.9)), np.full(5, 0.2))


def test_rho_zero_and_iid_are_todays_draws_bit_for_bit():
    k = jax.random.key(7)
    today = seed_data(k, P_max=9, n_test=5, L=6, V=3)
    for task in (TaskConfig(L=6, V=3, n_test=5), TaskConfig(L=6, V=3, n_test=5, source="markov")):
        d = task_data(k, task, P_max=9)
        assert np.array_equal(d.train, today.train) and np.array_equal(d.test, today.test)


def test_markov_datasets_are_nested_across_P():
    task = TaskConfig(L=5, V=3, source="markov", rho=0.5)
    big = np.asarray(sample_task(jax.random.key(2), task, n=40))
    assert np.array_equal(big[:8], sample_task(jax.random.key(2), task, n=8))
    # the sticky chain changes only where its coins say stay: elsewhere the i.i.d. draw remains
    iid = np.asarray(sample_tokens(jax.random.key(2), n=40, L=5, V=3))
    assert np.array_equal(big[:, 0], iid[:, 0])
    assert np.all((big == iid) | (big == np.roll(big, 1, axis=1)))
    given = TaskConfig(L=5, V=3, source="markov", alpha=2.0)
    g = sample_chain(jax.random.key(4), n=30, L=5, T=transition_matrix(given))
    assert np.array_equal(g[:7], sample_task(jax.random.key(4), given, n=7))


def test_config_round_trip_keeps_the_transition_matrix():
    T = [[0.5, 0.5], [0.25, 0.75]]
    cfg = Config(task=TaskConfig(L=3, V=2, source="markov", transition=T))
    back = Config.from_dict(cfg.to_dict())
    assert back == cfg and hash(back) == hash(cfg)


def _given(T):
    return dict(source="markov", transition=T)


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        (dict(source="markov", rho=1.0), r"TaskConfig\.rho .*\[0, 1\)"),
        (dict(source="markov", rho=-0.1), r"TaskConfig\.rho"),
        (dict(source="markov", alpha=0.0), r"TaskConfig\.alpha .*\(0\.0, "),
        (dict(source="markov", alpha=-1.0), r"TaskConfig\.alpha"),
        (_given([[0.5, 0.6], [0.5, 0.5]]), r"TaskConfig\.transition .*row-stochastic"),
        (_given([[1.2, -0.2], [0.5, 0.5]]), r"TaskConfig\.transition .*>= 0"),
        (_given([[1.0, 0.0], [0.0, 1.0]]), r"TaskConfig\.transition .*unique stationary"),
        (_given([[1.0]]), r"TaskConfig\.transition .*V x V"),
        (dict(source="iid", rho=0.5), r"TaskConfig\.rho needs TaskConfig\.source='markov'"),
        (dict(source="markov", rho=0.5, alpha=1.0), r"one of rho, alpha, transition"),
        (dict(source="hmm"), r"TaskConfig\.source"),
        (dict(source="markov", alpha=1e-4, chain_seed=9), r"Dirichlet matrix .*unique stationary"),
    ],
)
def test_bad_source_parameters_raise_one_line_errors(fields, match):
    with pytest.raises(ValueError, match=match) as e:
        TaskConfig(L=4, V=2, **fields)
    assert "\n" not in str(e.value)


def test_user_tokens_are_validated():
    ok = check_tokens(np.array([[0, 1, 2], [2, 2, 0]]), L=3, V=3)
    assert ok.dtype == np.int32
    for bad, match in [
        (np.zeros((2, 4), int), r"tokens must have shape \[n, L\]"),
        (np.array([[0, 3, 1]]), r"tokens must hold token indices in \[0, 2\]"),
        (np.array([[0.5, 1, 1]]), r"tokens must hold integer"),
    ]:
        with pytest.raises(ValueError, match=match) as e:
            check_tokens(bad, L=3, V=3)
        assert "\n" not in str(e.value)
    d = token_data(np.arange(15).reshape(5, 3) % 3, L=3, V=3, P_max=3, n_test=2)
    assert d.train.shape == (3, 3) and d.test.shape == (2, 3) and int(d.test[-1, -1]) == 2
    with pytest.raises(ValueError, match=r"at least P_max \+ n_test = 6 rows"):
        token_data(np.zeros((5, 3), int), L=3, V=3, P_max=4, n_test=2)
    with pytest.raises(ValueError, match="transition must be 3 x 3"):
        check_transition(np.eye(2), V=3)


def test_cli_flags_reach_the_config(tmp_path):
    """The generic one-flag-per-field CLI carries --source/--rho/--alpha/--transition and a bare
    --causal into the config."""
    from copyhead_jax.cli import build_parser, config_from_args

    parser = build_parser()
    a = parser.parse_args(
        ["sweep", "--preset", "tiny", "--source", "markov", "--rho", "0.5", "--causal"]
    )
    cfg = config_from_args(a, attention="softmax")
    assert (cfg.task.source, cfg.task.rho, cfg.model.causal) == ("markov", 0.5, True)
    a = parser.parse_args(["sweep", "--preset", "tiny", "--no-causal"])
    assert config_from_args(a, attention="softmax").model.causal is False
    np.save(tmp_path / "T.npy", sticky_transition(3, 0.25))
    for text in ("0.5,0.25,0.25;0.25,0.5,0.25;0.25,0.25,0.5", str(tmp_path / "T.npy")):
        a = parser.parse_args(
            ["sweep", "--preset", "tiny", "--source", "markov", "--transition", text]
        )
        T = np.asarray(config_from_args(a, attention="softmax").task.transition)
        np.testing.assert_allclose(T, sticky_transition(3, 0.25), atol=1e-15)


def test_transition_cli_takes_the_markov_source_and_refuses_the_mask():
    """``copyhead transition --source markov --rho R`` reaches the config; --rho without the
    source is refused, and so is a causal config (its branch chains are built without it)."""
    from copyhead_jax.cli import build_parser
    from copyhead_jax.cli.transition import config_from_args
    from copyhead_jax.transition import transition_config

    parser = build_parser()
    a = parser.parse_args(["transition", "--preset", "plain", "--source", "markov", "--rho", "0.5"])
    cfg = config_from_args(a)
    assert (cfg.task.source, cfg.task.rho, cfg.model.causal) == ("markov", 0.5, False)
    assert config_from_args(parser.parse_args(["transition"])).task.source == "iid"
    with pytest.raises(ValueError, match="need --source markov"):
        config_from_args(parser.parse_args(["transition", "--rho", "0.5"]))
    with pytest.raises(ValueError, match="causal"):
        transition_config(cfg.replace(model=dict(causal=True)))


def test_theory_overlay_only_for_the_iid_task_without_mask():
    """The EK curves assume i.i.d. tokens and no mask: none are drawn for other sweeps."""
    from types import SimpleNamespace

    from copyhead_jax.compare.overlay import theory_overlay
    from copyhead_jax.sources import is_iid

    assert is_iid(TaskConfig()) and is_iid(TaskConfig(source="markov"))
    assert not is_iid(TaskConfig(source="markov", rho=0.1))
    assert not is_iid(TaskConfig(source="markov", alpha=1.0))
    cfg = Config(task=TaskConfig(L=4, V=2))
    res = lambda c: SimpleNamespace(config=c, P=np.array([4, 8]))
    assert set(theory_overlay([res(cfg)], n=3)) == {"softmax"}
    assert theory_overlay([res(cfg.replace(model=dict(causal=True)))], n=3) == {}
    assert theory_overlay([res(cfg.replace(task=dict(source="markov", rho=0.5)))], n=3) == {}


# a user's own token arrays: ``run_sweep(tokens=...)``, ``sweep_inputs(...,
# tokens=...)`` and ``copyhead sweep --tokens FILE.npy`` (moved from test_user_tokens.py)


def cfg(n_seeds=2):
    return ch.preset("tiny").replace(
        task=dict(L=4, V=3, n_test=3), sweep=dict(P=(2, 5), n_seeds=n_seeds)
    )


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
