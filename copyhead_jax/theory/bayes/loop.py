r"""Route A: the one-loop free-energy profile of the softmax head's attention weights (EK).

docs/theory.md §13.7. At fixed order parameter $a$ the EK action (readout integrated out,
all $D^2$ weights, :mod:`.exact`) is smallest on the copy ansatz $W_a$ (logits
$\beta(a)G^*$, docs/theory.md §4); expanding it to second order in every other weight direction
and integrating them out (coarea formula for the constraint $a_G(W)=a$),
$$F_A(a)=\mathcal S(W_a)
+\tfrac12\log\det\nolimits_{\perp}\!\big(\sigma_G^2H_T\big)+\log\lVert\nabla a_G\rVert,
\qquad H_T=\nabla^2\mathcal S-\mu\nabla^2a_G,\quad \mu=\frac{d\mathcal S/d\beta}{da_G/d\beta},$$
the determinant taken on the tangent space $\nabla a_G^\perp$ of the level set. The prior's
$\log\det(\sigma_G^{-2}I)$ normalisation makes the null and gauge directions (no data curvature)
contribute zero. $\mathcal S(W_a)=V_{\rm soft}(\beta)+\mathcal D$ in closed form (A1 is exact at
token-independent logits); the Hessians are those of the EK action, its token average replaced by
a sample closed under the $L$ cyclic shifts (:func:`~.exact.shifted_sample`), so the sampled
action is exactly translation invariant and the Hessian is assembled from one column per
translation orbit of weight entries (:func:`orbit_hessian`: $L+2V+V^2$ Hessian-vector products
instead of $D^2$). Its sampling error is measured with independent samples.

Any other token law (``shift_closed=False``: a Markov chain's sequences, whose sample is not
closed under shifts) takes the full Hessian ($D^2$ products), $\mathcal S(W_a)$ on the sample,
and no longer has its constrained minimum on the ansatz: the expansion about $W_a$ then keeps its
linear term, whose Gaussian integral adds the Newton step's gain
$-\tfrac12 g_T^\top H_T^{-1}g_T$ ($g_T$ the gradient of $\mathcal S-\mu\bar p$ on the tangent
space, $\mu=\nabla\mathcal S\cdot\nabla\bar p/\lVert\nabla\bar p\rVert^2$). It is one step
towards the constrained minimum, trusted while the step is small next to the Hessian's scale:
its gain beyond the exact gauge part (``newton_rest``) at most :data:`NEWTON_TRUST` nats (a step
of at most two posterior standard deviations) and $H_T$ positive at every point
(:func:`trusted`).

Where it must fail: the expansion is Gaussian in the logits about $W_a$. In the pooling basin the
posterior's logit fluctuations are of prior size ($O(1)$, comparable with the softmax's scale),
so the quadratic form misjudges what they cost (route B averages the softmax over them instead).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from copyhead_jax.theory.params import TheoryParams
from copyhead_jax.theory.potentials import softmax_ansatz, softmax_potential

from .exact import action, copy_weights, mean_copy_probability, shifted_sample


def ek_sample(key, params: TheoryParams, n_base: int):
    """``n_base`` i.i.d. uniform sequences and all their cyclic shifts: ``[n_base * L, L]``."""
    return shifted_sample(jax.random.randint(key, (n_base, params.L), 0, params.V))


def orbit_representatives(L: int, V: int) -> list[tuple[int, int]]:
    """One weight entry ``(i, j)`` per orbit of the cyclic shifts of positions: positional block
    ``(V, V + b)``, query-position/key-token ``(V, w)``, query-token/key-position ``(v, V)``, and
    every token-token entry (fixed points)."""
    reps = [(V, V + b) for b in range(L)] + [(V, w) for w in range(V)]
    reps += [(v, V) for v in range(V)] + [(v, w) for v in range(V) for w in range(V)]
    return reps


def _shift_perm(L: int, V: int, k: int) -> np.ndarray:
    return np.concatenate([np.arange(V), V + (np.arange(L) + k) % L])


def orbit_hessian(hvp, L: int, V: int, chunk: int = 8) -> np.ndarray:
    """The ``[D^2, D^2]`` Hessian of a translation-invariant function from ``hvp(E)`` on the orbit
    representatives: the column of the shifted entry is the shifted column,
    $H\\,\\tau^k e=\\tau^kHe$. Symmetrised (the sampled Hessian is symmetric up to rounding)."""
    D = L + V
    reps = orbit_representatives(L, V)
    cols = []
    for s in range(0, len(reps), chunk):
        E = np.zeros((len(reps[s : s + chunk]), D, D))
        for n, (i, j) in enumerate(reps[s : s + chunk]):
            E[n, i, j] = 1.0
        cols.append(np.asarray(hvp(jnp.asarray(E))))
    cols = np.concatenate(cols)  # [n_reps, D, D]
    H = np.zeros((D * D, D * D))
    for n, (i, j) in enumerate(reps):
        ks = range(L) if (i >= V or j >= V) else range(1)
        for k in ks:
            p = _shift_perm(L, V, k)
            Hc = np.empty((D, D))
            Hc[np.ix_(p, p)] = cols[n]
            H[:, p[i] * D + p[j]] = Hc.ravel()
    return 0.5 * (H + H.T)


def full_hessian(hvp, n: int, chunk: int = 32) -> np.ndarray:
    """The ``[n, n]`` Hessian from ``hvp(E)`` on the unit vectors, ``chunk`` at a time (``E``:
    ``[chunk, n]``); symmetrised."""
    eye = np.eye(n)
    H = np.concatenate(
        [np.asarray(hvp(jnp.asarray(eye[s : s + chunk]))) for s in range(0, n, chunk)]
    )
    H = H.reshape(n, n)
    return 0.5 * (H + H.T)


@functools.lru_cache(maxsize=4)
def _flat(params: TheoryParams):
    """Value, gradient and batched Hessian-vector products of the sampled action and of
    $\bar p$ on the flat weights (any sample: :func:`full_hessian`)."""
    D = params.L + params.V

    def f(w, tokens, P):
        return action(w.reshape(D, D), tokens, P, params)

    def g(w, tokens):
        return mean_copy_probability(w.reshape(D, D), tokens, params)

    def hv(fun, n_args):
        def one(w, e, *args):
            return jax.jvp(lambda x: jax.grad(fun)(x, *args), (w,), (e,))[1]

        return jax.jit(jax.vmap(one, in_axes=(None, 0) + (None,) * n_args))

    return jax.jit(jax.value_and_grad(f)), hv(f, 2), jax.jit(jax.grad(g)), hv(g, 1)


def _hvps(params: TheoryParams):
    """:func:`_flat`'s Hessian-vector products and gradient of $\bar p$ on ``[D, D]`` weights
    (``E``: ``[n, D, D]``), as :func:`orbit_hessian` takes them."""
    _, hv_S, grad_p, hv_p = _flat(params)

    def on_matrices(hv):
        return lambda W, E, *args: hv(W.ravel(), E.reshape(len(E), -1), *args).reshape(E.shape)

    return on_matrices(hv_S), on_matrices(hv_p), lambda W, t: grad_p(W.ravel(), t)


def _V_post(beta, P, params: TheoryParams):
    r"""$V_{\rm soft}(\beta)+\mathcal D$: the EK action on the ansatz (A1 exact there)."""
    return softmax_potential(beta, P=P, params=params, objective="post")


def one_loop_point(beta: float, P: float, params: TheoryParams, tokens) -> dict:
    r"""$F_A$ at logits $\beta G^*$ (module docstring) and its parts, float64."""
    L, V = params.L, params.V
    hv_S, hv_p, grad_p = _hvps(params)
    with jax.enable_x64(True):
        W = copy_weights(beta, params)
        Pj = jnp.asarray(P, jnp.float64)
        H = orbit_hessian(lambda E: hv_S(W, E, tokens, Pj), L, V)
        Hp = orbit_hessian(lambda E: hv_p(W, E, tokens), L, V)
        gp = np.asarray(grad_p(W, tokens)).ravel()
        b = jnp.asarray(beta, jnp.float64)
        dS = float(jax.grad(lambda x: _V_post(x, Pj, params))(b))
        S = float(_V_post(b, Pj, params))
        dp = float(jax.grad(lambda x: softmax_ansatz(x, L=float(L))["p"])(b))
    # mu: multiplier of the constraint p = const (a_G is affine in p, the coarea factor uses p)
    mu = dS / dp
    HT = H - mu * Hp
    Qm = _tangent_basis(gp)
    w = np.linalg.eigvalsh(params.sigma_G**2 * (Qm.T @ HT @ Qm))
    logdet = float(np.sum(np.log(np.abs(w))))
    p = float(jax.nn.sigmoid(beta - math.log(L - 1.0)))
    aG = _a_of_p(p, L)
    # coarea: density of p; the constant Jacobian da/dp is the same for every point
    F = S + 0.5 * logdet + math.log(np.linalg.norm(gp))
    return {
        "beta": beta,
        "P": P,
        "aG": aG,
        "F": F,
        "S": S,
        "half_logdet": 0.5 * logdet,
        "log_grad": math.log(np.linalg.norm(gp)),
        "mu": mu,
        "n_negative": int(np.sum(w <= 0)),
        "min_eig": float(w.min()),
    }


def one_loop_profile(params: TheoryParams, P_values, betas, tokens, shift_closed=True) -> dict:
    r"""$F_A(\beta;P)$ on a grid (module docstring): arrays ``[nP, nbeta]`` of ``F``, ``S``,
    ``half_logdet`` (and ``newton``); the order-parameter Hessian (independent of $P$) is
    computed once per $\beta$. ``shift_closed=False``: any sample (full Hessians, the Newton
    term; module docstring)."""
    if not shift_closed:
        return _profile_any_sample(params, P_values, betas, tokens)
    L, V = params.L, params.V
    hv_S, hv_p, grad_p = _hvps(params)
    out = {k: np.zeros((len(P_values), len(betas))) for k in ("F", "S", "half_logdet", "min_eig")}
    aG = np.zeros(len(betas))
    with jax.enable_x64(True):
        for j, beta in enumerate(betas):
            W = copy_weights(beta, params)
            Hp = orbit_hessian(lambda E: hv_p(W, E, tokens), L, V)
            gp = np.asarray(grad_p(W, tokens)).ravel()
            Qm = _tangent_basis(gp)
            b = jnp.asarray(beta, jnp.float64)
            dp = float(jax.grad(lambda x: softmax_ansatz(x, L=float(L))["p"])(b))
            p = float(jax.nn.sigmoid(beta - math.log(L - 1.0)))
            aG[j] = _a_of_p(p, L)
            for i, P in enumerate(P_values):
                Pj = jnp.asarray(P, jnp.float64)
                H = orbit_hessian(lambda E: hv_S(W, E, tokens, Pj), L, V)
                S = float(_V_post(b, Pj, params))
                mu = float(jax.grad(lambda x: _V_post(x, Pj, params))(b)) / dp
                w = np.linalg.eigvalsh(params.sigma_G**2 * (Qm.T @ (H - mu * Hp) @ Qm))
                hl = 0.5 * float(np.sum(np.log(np.abs(w))))
                out["F"][i, j] = S + hl + math.log(np.linalg.norm(gp))
                out["S"][i, j], out["half_logdet"][i, j], out["min_eig"][i, j] = S, hl, w.min()
    return {**out, "aG": aG, "beta": np.asarray(betas), "P": np.asarray(P_values)}


def _a_of_p(p, L: int):
    r"""$a_G=\sqrt L(Lp-1)/(L-1)$ of the ansatz's copy probability $p$ (docs/theory.md §4)."""
    return math.sqrt(L) * (L * p - 1.0) / (L - 1.0)


def _tangent_basis(gp: np.ndarray) -> np.ndarray:
    """Orthonormal columns spanning the complement of ``gp``."""
    n = gp / np.linalg.norm(gp)
    return np.linalg.qr(np.concatenate([n[:, None], np.eye(n.size)[:, :-1]], axis=1))[0][:, 1:]


def _profile_any_sample(params: TheoryParams, P_values, betas, tokens) -> dict:
    """:func:`one_loop_profile` on a sample not closed under shifts (module docstring)."""
    L, V = params.L, params.V
    n = (L + V) ** 2
    vg_S, hv_S, grad_p, hv_p = _flat(params)
    keys = ("F", "S", "half_logdet", "newton", "newton_rest", "min_eig")
    # the positional block's row gauge directions (all ones over row a's keys), flat
    D = L + V
    gauge = np.zeros((L, n))
    for a in range(L):
        gauge[a, (V + a) * D + V : (V + a + 1) * D] = 1.0 / math.sqrt(L)
    out = {k: np.zeros((len(P_values), len(betas))) for k in keys}
    aG = np.zeros(len(betas))
    with jax.enable_x64(True):
        for j, beta in enumerate(betas):
            w0 = copy_weights(beta, params, jnp.float64).ravel()
            gp = np.asarray(grad_p(w0, tokens))
            Hp = full_hessian(lambda E: hv_p(w0, E, tokens), n)
            Qm = _tangent_basis(gp)
            p = float(jax.nn.sigmoid(beta - math.log(L - 1.0)))
            aG[j] = _a_of_p(p, L)
            for i, P in enumerate(P_values):
                Pj = jnp.asarray(P, jnp.float64)
                S, gS = vg_S(w0, tokens, Pj)
                gS = np.asarray(gS)
                H = full_hessian(lambda E: hv_S(w0, E, tokens, Pj), n)
                mu = float(gS @ gp / (gp @ gp))
                w, U = np.linalg.eigh(params.sigma_G**2 * (Qm.T @ (H - mu * Hp) @ Qm))
                gT = params.sigma_G * (U.T @ (Qm.T @ (gS - mu * gp)))
                newton = -0.5 * float(np.sum(gT**2 / w))
                hl = 0.5 * float(np.sum(np.log(np.abs(w))))
                # the gauge block of sigma_G^2 H_T is the identity (only the prior acts there)
                g_gauge = params.sigma_G * (gauge @ (gS - mu * gp))
                out["F"][i, j] = float(S) + newton + hl + math.log(np.linalg.norm(gp))
                out["S"][i, j], out["half_logdet"][i, j] = float(S), hl
                out["newton"][i, j], out["min_eig"][i, j] = newton, w.min()
                out["newton_rest"][i, j] = newton + 0.5 * float(np.sum(g_gauge**2))
    return {**out, "aG": aG, "beta": np.asarray(betas), "P": np.asarray(P_values)}


#: the largest Newton gain beyond the gauge part (nats) at which the expansion about the ansatz
#: is trusted: ``g^2 / 2h <= 2`` is a step of at most two posterior standard deviations
NEWTON_TRUST = 2.0


def trusted(rows: list[dict]) -> tuple[bool, str]:
    """Whether route A's expansion holds on every profile of ``rows`` (those of
    :func:`one_loop_transition`): the tangent Hessian positive and, on a sample not closed under
    shifts, the Newton gain beyond the gauge part within :data:`NEWTON_TRUST`; and why not."""
    for r in rows:
        if "min_eig" in r and min(r["min_eig"]) <= 0:
            return (
                False,
                f"tangent Hessian not positive (smallest eigenvalue {min(r['min_eig']):.3g})",
            )
        if "newton_rest" in r and min(r["newton_rest"]) < -NEWTON_TRUST:
            return False, (
                f"Newton gain beyond the gauge {-min(r['newton_rest']):.1f} nats > {NEWTON_TRUST:g}"
            )
    return True, ""


def basin_free_energies(beta, F, L: int, n_fine: int = 2001) -> dict:
    r"""Basins of a profile $F(\beta)$ given on a grid: cubic interpolation in $\beta$, local
    minima, $-\log\int_{\rm basin}e^{-F}\,da$ on each side of the barrier top ($a=a_G(\beta)$,
    the integral over $a$ with $da/d\beta$), and the mean of $a$ under $e^{-F}$ over the grid's
    range (``mean_aG``: a crossover's order parameter where there is one basin). A profile that
    falls towards the grid's low end has a basin there (``edge_low``: its minimum may lie beyond,
    its integral is cut at the end, so its free energy is an upper bound)."""
    from scipy.interpolate import CubicSpline

    bf = np.linspace(beta[0], beta[-1], n_fine)
    Ff = CubicSpline(beta, F)(bf)
    p = 1.0 / (1.0 + np.exp(-(bf - math.log(L - 1.0))))
    dadb = math.sqrt(L) * L / (L - 1.0) * p * (1.0 - p)
    # local minima; the grid's low end counts where F falls towards it (the pooling basin may
    # lie at negative beta, beyond it: its integral is then cut there, flagged ``edge_low``)
    mins = [i for i in range(n_fine - 1) if (i == 0 or Ff[i] < Ff[i - 1]) and Ff[i] <= Ff[i + 1]]
    a = _a_of_p(p, L)
    w = np.exp(-(Ff - Ff.min())) * dadb  # e^{-F} da on the uniform beta grid
    out = {
        "minima_beta": bf[mins].tolist(),
        "minima_F": Ff[mins].tolist(),
        "mean_aG": float(np.sum(a * w) / np.sum(w)),
        "edge_low": bool(mins and mins[0] == 0),
    }
    if len(mins) >= 2:
        i0, i1 = mins[0], mins[-1]
        top = i0 + int(np.argmax(Ff[i0 : i1 + 1]))
        g = -Ff + np.log(dadb)
        db = bf[1] - bf[0]

        def lse(x):
            return float(np.max(x) + np.log(np.sum(np.exp(x - np.max(x))) * db))

        out.update(
            F_pool=-lse(g[:top]),
            F_copy=-lse(g[top:]),
            barrier_beta=float(bf[top]),
            barrier=float(Ff[top] - max(Ff[i0], Ff[i1])),
        )
    return out


def first_order_root(P_values, dF) -> float | None:
    r"""The first root of $F_{\rm copy}-F_{\rm pool}$ (``dF``, ``None`` where one basin) from
    positive to negative between neighbours where both basins exist, linear in $\log P$."""
    for i in range(len(P_values) - 1):
        a, b = dF[i], dF[i + 1]
        if a is not None and b is not None and a > 0 > b:
            t0, t1 = math.log(P_values[i]), math.log(P_values[i + 1])
            return math.exp(t0 + (t1 - t0) * a / (a - b))
    return None


def one_loop_transition(params: TheoryParams, P_values, betas, tokens, shift_closed=True) -> dict:
    r"""Route A's Bayesian $P^*_{a_G}$: the basins' $-\log\int e^{-F_A}da$ at each of
    ``P_values`` (:func:`basin_free_energies`, with the profile's mean $a_G$ and the profile ``F``
    on ``betas``; ``newton`` too on a sample not closed under shifts) and
    :func:`first_order_root` (``None`` when no such pair: widen ``P_values``)."""
    prof = one_loop_profile(params, P_values, betas, tokens, shift_closed)
    rows = [
        {**basin_free_energies(np.asarray(betas), F, params.L), "F": F.tolist()} for F in prof["F"]
    ]
    for r, e in zip(rows, prof["min_eig"], strict=True):
        r["min_eig"] = e.tolist()
    if not shift_closed:
        for r, nt, rest in zip(rows, prof["newton"], prof["newton_rest"], strict=True):
            r["newton"], r["newton_rest"] = nt.tolist(), rest.tolist()
    dF = [r["F_copy"] - r["F_pool"] if "F_copy" in r else None for r in rows]
    P_star = first_order_root(P_values, dF)
    return {"P": [float(p) for p in P_values], "dF": dF, "basins": rows, "P_star": P_star}
