"""sampling/hmc.py, the HMC kernel: its step adaptation is BlackJAX's dual averaging, a chain on
a standard normal has the closed-form moments, the energy is the Hamiltonian, mass adaptation
fixes a badly scaled normal, and ``hmc_chains`` is the kernel's ``init`` / ``warmup`` / ``step``
driven by hand."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax.sampling.hmc import (
    dual_averaging_init,
    dual_averaging_update,
    hmc_chains,
    hmc_kernel,
)


def test_dual_averaging_equals_blackjax_where_the_cap_does_not_bind():
    """Same acceptance sequence in, same log steps out (the update is Hoffman & Gelman's with
    BlackJAX's constants; float32 rounding of ~30 updates: rtol 1e-5). The average follows their
    Algorithm 5 (weight t^-kappa on the new step; BlackJAX's lags one step): checked against the
    recurrence written out in float64."""
    da_bj = pytest.importorskip("blackjax.optimizers.dual_averaging")
    init, update, _ = da_bj.dual_averaging(t0=10, gamma=0.05, kappa=0.75)
    acc = np.random.default_rng(0).uniform(0.6, 0.9, 30).astype(np.float32)
    target = 0.75
    ours, theirs = dual_averaging_init(0.01), init(jnp.float32(0.01))
    bar = 0.0
    for t, a in enumerate(acc, start=1):
        ours = dual_averaging_update(ours, float(t), jnp.float32(a), target)
        theirs = update(theirs, target - a)
        assert float(ours.log_eps) < np.log(2.0)  # the cap never binds from a small start
        np.testing.assert_allclose(ours.log_eps, theirs.log_x, rtol=1e-5)
        w = t**-0.75  # 1 at t = 1: the initial average drops out
        bar = w * float(ours.log_eps) + (1 - w) * bar
        np.testing.assert_allclose(float(ours.log_eps_bar), bar, rtol=1e-5)


def test_chain_on_a_standard_normal():
    """4 chains x 2,000 draws of N(0, I_3): mean 0 and E|w|^2 = 3 within 5 Monte-Carlo
    standard errors (draws of HMC at ~quarter-period trajectories are nearly independent; the
    error uses n = 8,000 / 2 to allow for correlation); acceptance near the 0.75 target."""
    keys = jax.random.split(jax.random.key(0), 4)
    pot = lambda w: 0.5 * jnp.sum(w**2)
    run = jax.jit(
        lambda k: hmc_chains(k, pot, jnp.ones((4, 3)), n_iter=2000, thin=1, step_size=0.3)
    )
    c = run(keys)
    w = np.asarray(c.records).reshape(-1, 3)
    n_eff = w.shape[0] / 2
    assert np.all(np.abs(w.mean(0)) < 5 / np.sqrt(n_eff))
    r2 = (w**2).sum(1)
    assert abs(r2.mean() - 3.0) < 5 * np.sqrt(6.0 / n_eff)  # Var |w|^2 = 2 n = 6
    assert 0.6 < float(np.mean(c.accept)) < 0.95 and bool(np.all(c.finite))


@pytest.mark.parametrize("adapt_mass", [False, True])
def test_energy_is_the_hamiltonian_where_each_transition_ends(adapt_mass):
    """``HMCChain.energy`` replayed by hand on a non-Gaussian target. With ``thin = 1`` draw
    ``j - 1`` is where transition ``n_adapt + j`` starts; from ``fold_in(key, n_adapt + j)``
    (the kernel's documented key use) the test redraws the step jitter and the momentum ``p0``
    and runs its own float64 leapfrog to ``(x1, p1)``, with the frozen mass ``scale`` ``s``
    (momentum in ``w / s``: position step ``eps s p``, force ``s grad U``; ones without
    ``adapt_mass``). If the chain moved, it moved to ``x1`` and
    the energy is ``U(x1) + |p1|^2 / 2``; if not, it is ``U(w) + |p0|^2 / 2`` at the old ``w``.
    Float32 kernel against a float64 replay: rtol 1e-4."""
    A = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.0], [0.0, 0.0, 0.5]])
    pot = lambda w: 0.5 * w @ jnp.asarray(A, w.dtype) @ w + 0.1 * jnp.sum(w**4)
    U = lambda w: 0.5 * w @ A @ w + 0.1 * np.sum(w**4)
    grad = lambda w: A @ w + 0.4 * w**3
    key, n_adapt, n_leap, S = jax.random.key(3), 20, 5, 40
    kw = dict(
        n_iter=S, thin=1, step_size=0.3, n_adapt=n_adapt, n_leap=n_leap, adapt_mass=adapt_mass
    )
    c = jax.jit(lambda k: hmc_chains(k[None], pot, jnp.ones((1, 3)), **kw))(key)
    w, E = np.asarray(c.records[0], np.float64), np.asarray(c.energy[0], np.float64)
    s = np.asarray(c.scale[0], np.float64)
    assert np.any(s != 1.0) == adapt_mass
    assert E.shape == (S,) and np.all(np.isfinite(E))
    moved = []
    for j in range(1, S):
        k_eps, k_p, _ = jax.random.split(jax.random.fold_in(key, n_adapt + j), 3)
        eps = float(c.step_size[0]) * float(jax.random.uniform(k_eps, (), jnp.float32, 0.8, 1.2))
        p0 = np.asarray(jax.random.normal(k_p, (3,), jnp.float32), np.float64)
        x, p = w[j - 1].copy(), p0.copy()
        for _ in range(n_leap):
            p = p - 0.5 * eps * s * grad(x)
            x = x + eps * s * p
            p = p - 0.5 * eps * s * grad(x)
        moved.append(not np.array_equal(w[j], w[j - 1]))
        if moved[-1]:
            np.testing.assert_allclose(w[j], x, rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(E[j], U(x) + 0.5 * p @ p, rtol=1e-4)
        else:
            np.testing.assert_allclose(E[j], U(w[j - 1]) + 0.5 * p0 @ p0, rtol=1e-4)
    assert 0 < sum(moved) < len(moved)  # both branches replayed (this key's chain has both)
    assert np.all(E >= np.array([U(x) for x in w]) - 1e-4 * np.abs(E))  # kinetic energy >= 0


def test_mass_adaptation_on_a_badly_scaled_normal():
    """N(0, diag(sd^2)), sd spanning 100x: the adapted scale is the target's sd (each of the two
    slow windows estimates it from >= 150 draws of nearly independent HMC moves once the first
    mass is in: relative error ~ 1/sqrt(2 * 150) = 6%, allowed 30%), and the frozen chain's
    second moments are sd^2 within 5 Monte-Carlo standard errors (Var w^2 = 2 sd^4, n = 8,000 /
    2 draws to allow for correlation). With unit mass the step adapts to the smallest sd and
    the widest coordinate barely moves (its ESS, ArviZ's estimator, is 10x lower)."""
    from copyhead_jax.sampling import ess

    sd = jnp.array([0.1, 1.0, 3.0, 10.0])
    pot = lambda w: 0.5 * jnp.sum((w / sd) ** 2)
    keys = jax.random.split(jax.random.key(5), 4)

    def run(adapt_mass):
        f = lambda k: hmc_chains(
            k,
            pot,
            jnp.zeros((4, 4)),
            n_iter=2000,
            thin=1,
            step_size=0.3,
            n_adapt=600,
            adapt_mass=adapt_mass,
        )
        return jax.jit(f)(keys)

    c = run(True)
    np.testing.assert_allclose(np.asarray(c.scale), np.broadcast_to(sd, (4, 4)), rtol=0.3)
    w = np.asarray(c.records, np.float64).reshape(-1, 4)
    n_eff, var = w.shape[0] / 2, np.asarray(sd, np.float64) ** 2
    assert np.all(np.abs((w**2).mean(0) - var) < 5 * np.sqrt(2 * var**2 / n_eff))
    wide = lambda ch: float(ess(np.asarray(ch.records)[..., 3]))
    assert wide(c) > 10 * wide(run(False))


@pytest.mark.parametrize("adapt_mass", [False, True])
def test_hmc_chains_is_the_kernel_driven_by_hand(adapt_mass):
    """The loop lives outside the kernel: ``init``, ``n_adapt`` calls of ``warmup``, then
    ``step``, called one at a time from Python, give ``hmc_chains``' draws, acceptances,
    energies, frozen step and mass (float32 rounding of a separately compiled step: rtol 1e-5;
    the transitions are chaotic only over many more steps than these 30), and the counter
    ``i`` counts every transition."""
    A = jnp.asarray([[2.0, 0.3], [0.3, 1.0]])
    pot = lambda w: 0.5 * w @ A @ w + 0.1 * jnp.sum(w**4)
    key, n_adapt, thin = jax.random.key(8), 24, 3
    kw = dict(step_size=0.3, n_adapt=n_adapt, adapt_mass=adapt_mass)
    c = jax.jit(
        lambda k: hmc_chains(k[None], pot, jnp.ones((1, 2)), n_iter=6 * thin, thin=thin, **kw)
    )(key)
    kernel = hmc_kernel(pot, **kw)
    assert kernel.n_warmup == n_adapt
    warm, step = jax.jit(kernel.warmup), jax.jit(kernel.step)
    state, acc, draws, energy = kernel.init(key, jnp.ones(2)), [], [], []
    for _ in range(n_adapt):
        state = warm(state)
    for _ in range(6):
        for _ in range(thin):
            state = step(state)
            acc.append(float(state.accept_prob))
        draws.append(np.asarray(state.position))
        energy.append(float(state.energy))
    assert int(state.i) == n_adapt + 6 * thin
    np.testing.assert_allclose(np.asarray(c.records[0]), np.array(draws), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(c.energy[0]), energy, rtol=1e-5)
    np.testing.assert_allclose(
        np.asarray(c.accept[0]), np.reshape(acc, (6, thin)).mean(1), rtol=1e-5, atol=1e-6
    )
    step_size = float(jnp.exp(state.adaptation.step.log_eps_bar))
    np.testing.assert_allclose(float(c.step_size[0]), step_size, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(c.scale[0]), np.asarray(state.scale), rtol=1e-6)
    assert np.any(np.asarray(state.scale) != 1.0) == adapt_mass


def _quartic(w):
    A = jnp.asarray([[2.0, 0.3], [0.3, 1.0]])
    return 0.5 * w @ A @ w + 0.1 * jnp.sum(w**4)


@pytest.mark.parametrize("adapt_mass", [False, True])
def test_pooled_adaptation_is_one_dual_averaging_and_one_window_estimate(adapt_mass):
    """With ``pooled`` the chains share one adaptation: replayed by hand from the chains'
    warm-up acceptances and end points, the frozen step is the dual averaging of their mean
    acceptance (restarted where a slow window ends) and the mass the regularised variance of
    every chain's end points in the last slow window; all chains hold the same step and mass.
    Float32 sums of <= 120 terms against the replay's float64: rtol 1e-4."""
    from copyhead_jax.sampling.chains import run_chains
    from copyhead_jax.sampling.hmc import mass_windows

    C, n_adapt = 5, 40
    kernel = hmc_kernel(
        _quartic, step_size=0.3, n_adapt=n_adapt, adapt_mass=adapt_mass, pooled=True
    )
    keys = jax.random.split(jax.random.key(3), C)
    starts = jax.random.normal(jax.random.key(4), (C, 2))
    c = jax.jit(
        lambda k, x: run_chains(
            kernel, k, x, n_draws=2, trace=lambda s: (s.accept_prob, s.position)
        )
    )(keys, starts)
    acc, pos = (np.asarray(x, np.float64)[:, :n_adapt] for x in c.trace)
    start, middle, end = mass_windows(n_adapt) if adapt_mass else (n_adapt,) * 3
    with jax.enable_x64(True):
        da = dual_averaging_init(0.3, jnp.float64)
        for i in range(n_adapt):
            restarted = end if i >= end else middle if i >= middle else 0
            da = dual_averaging_update(da, float(i + 1 - restarted), acc[:, i].mean(), 0.75)
            if adapt_mass and i + 1 in (middle, end):
                da = dual_averaging_init(jnp.exp(da.log_eps), jnp.float64)
        step = float(jnp.exp(da.log_eps_bar))
    steps = np.exp(np.asarray(c.state.adaptation.step.log_eps_bar, np.float64))
    np.testing.assert_allclose(steps, step, rtol=1e-4)
    scale = np.asarray(c.state.scale, np.float64)
    if adapt_mass:
        last = pos[:, middle:end].reshape(-1, 2)
        n = last.shape[0]
        var = n / (n + 5.0) * last.var(0, ddof=1) + 1e-3 * 5.0 / (n + 5.0)
        np.testing.assert_allclose(scale, np.broadcast_to(np.sqrt(var), (C, 2)), rtol=1e-4)
    else:
        assert np.all(scale == 1.0)


@pytest.mark.parametrize("adapt_mass", [False, True])
def test_pooled_one_chain_is_the_chain_alone_and_batching_changes_nothing(adapt_mass):
    """One chain pooled with itself is that chain adapting alone, and pooled chains run
    batched or one after the other are the same chains (other compiled programs: float32
    rounding over 24 + 18 transitions, rtol 1e-5 as in the test above)."""
    kw = dict(n_iter=18, thin=3, step_size=0.3, n_adapt=24, adapt_mass=adapt_mass)
    run = lambda k, x, **o: jax.jit(lambda k, x: hmc_chains(k, _quartic, x, **kw, **o))(k, x)  # noqa: E731
    key = jax.random.key(8)
    one = [run(key[None], jnp.ones((1, 2)), pooled=p) for p in (False, True)]
    keys = jax.random.split(key, 3)
    starts = jax.random.normal(jax.random.key(9), (3, 2))
    many = [run(keys, starts, pooled=True, batched=b) for b in (True, False)]
    for a, b in (one, many):
        for x, y in zip(jax.tree.leaves(a[:7]), jax.tree.leaves(b[:7])):
            np.testing.assert_allclose(np.asarray(y), np.asarray(x), rtol=1e-5, atol=1e-6)


def test_the_kept_aux_belongs_to_the_position_and_leaves_the_chain_unchanged():
    """``value_and_grad`` with an ``aux``: the chain is the autodiff chain (same positions, bit
    for bit: the same U and gradient), and at every draw ``state.aux`` is the ``aux`` of the
    draw's own position, also where the proposal was rejected (the aux travels with the
    accept/reject choice). The aux here is non-trivial only where ``keep`` is true, so an aux
    taken from an inner leapfrog step would show up as zeros."""
    A = jnp.array([[2.0, 0.3], [0.3, 1.0]])
    pot = lambda w: 0.5 * w @ A @ w + 0.1 * jnp.sum(w**4)
    aux_of = lambda w: jnp.stack([jnp.sum(w**3), 1.0 + w[0]])

    def vga(w, keep):
        u, g = jax.value_and_grad(pot)(w)
        return u, g, jax.lax.cond(keep, aux_of, jnp.zeros_like, w)

    kw = dict(n_iter=60, thin=1, step_size=0.9, n_adapt=0, n_leap=3)
    rec = lambda s, j: (s.position, s.aux)
    keys = jax.random.split(jax.random.key(4), 2)
    plain = jax.jit(lambda k: hmc_chains(k, pot, jnp.ones((2, 2)), **kw))(keys)
    (w, aux) = jax.jit(
        lambda k: hmc_chains(k, pot, jnp.ones((2, 2)), rec, value_and_grad=vga, **kw)
    )(keys).records
    np.testing.assert_array_equal(np.asarray(w), np.asarray(plain.records))
    np.testing.assert_allclose(np.asarray(aux), np.asarray(jax.vmap(jax.vmap(aux_of))(w)), 1e-6)
    stayed = np.all(np.asarray(w[:, 1:]) == np.asarray(w[:, :-1]), axis=-1)
    assert stayed.any() and not stayed.all()  # both branches checked (step 0.9: some rejected)
