r"""Conventions that the engine and the theory share (docs/theory.md §2b, §4-§6): one place each.

* likelihood convention: :func:`noise_factor`, :func:`effective_P`, :func:`noise_variance`
  (``per_position`` has noise $L\sigma^2/\chi$, so the action sees ``P/L``);
* where $\chi$ enters: :func:`noise_chi`, :func:`readout_chi` (the two switches
  ``chi_in_noise``, ``chi_in_readout_prior``), the readout's prior std
  :func:`readout_prior_std`, and :func:`theory_sigma2_chi`, which maps every reading onto the
  $(\sigma^2, \chi)$ of the closed forms;
* the linear attention scale $A=s/L^k$: :func:`linear_scale_divisor` (``none``, ``inv_sqrt_L``,
  ``inv_L``);
* the copy pattern $G^*_{ab}=\delta_{a-1,b}$ (:func:`shift_matrix`) and the unit-Frobenius,
  non-orthogonal ansatz basis $B_1=J/L$, $B_2=G^*/\sqrt L$ (:func:`basis`);
* least-squares projection on the basis with the subspace cosine (:func:`project`);
* the copy fraction $\psi$ (:func:`copy_fraction`).

Imports only JAX, NumPy and ``_types`` so that ``theory/`` may use it. Functions compute in the
dtype of their inputs (``dtype=None``: JAX's default float, float64 inside ``jax.enable_x64``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax.numpy as jnp

from ._types import AttnMatrix, Scalar

#: a switch: a bool, or a 0/1 number (an array inside compiled code)
Flag = bool | jnp.ndarray

LIKELIHOODS = ("per_sequence", "per_position")
LINEAR_SCALES = ("none", "inv_sqrt_L", "inv_L")
#: exponent k of the linear attention scale A = s / L^k, per name of :data:`LINEAR_SCALES`
LINEAR_SCALE_EXPONENTS = {"none": 0.0, "inv_sqrt_L": 0.5, "inv_L": 1.0}


def noise_factor(L, likelihood):
    r"""``sigma^2_eff / sigma^2``: ``1`` (per_sequence) or ``L`` (per_position), docs/theory.md §2b.

    ``likelihood`` is a name from :data:`LIKELIHOODS` (returns ``L`` or ``1.0`` as given) or a
    0/1 flag array (``1 + flag (L - 1)``, so it can be traced and vmapped).
    """
    if isinstance(likelihood, str):
        if likelihood not in LIKELIHOODS:
            raise ValueError(f"likelihood must be one of {LIKELIHOODS}, got {likelihood!r}")
        return L if likelihood == "per_position" else 1.0
    return 1.0 + likelihood * (L - 1.0)


def effective_P(P, *, L, likelihood):
    """The ``P`` the action sees: ``P / L`` under ``per_position``, ``P`` otherwise (§2b)."""
    if isinstance(likelihood, str) and noise_factor(L, likelihood) == 1.0:
        return P
    return P / noise_factor(L, likelihood)


def noise_variance(sigma2, *, L, likelihood):
    """Likelihood variance in loss units: ``sigma2`` (per_sequence) or ``L sigma2`` (§2b)."""
    return sigma2 * noise_factor(L, likelihood)


def _switch(flag, chi):
    """``chi`` where the switch is on, else 1: a bool, or a 0/1 number (traceable)."""
    if isinstance(flag, bool):
        return chi if flag else 1.0
    return jnp.where(jnp.asarray(flag) > 0.5, chi, 1.0)


def noise_chi(chi, *, chi_in_noise: Flag = True):
    r"""What divides the noise variance: ``chi`` (noise $\sigma^2/\chi$) or ``1`` (noise
    $\sigma^2$), docs/theory.md §2b; ``chi_in_noise`` a bool or a 0/1 number."""
    return _switch(chi_in_noise, chi)


def readout_chi(chi, *, chi_in_readout_prior: Flag = True):
    r"""What divides the readout prior variance $\sigma_O^2/N$: ``chi`` or ``1`` (§2b)."""
    return _switch(chi_in_readout_prior, chi)


def readout_prior_std(sigma_O, chi, *, chi_in_readout_prior: Flag = True):
    r"""Prior std of $\hat W^O=\sqrt{\chi N}W^O$ (the stored readout): ``sigma_O`` when the
    prior of $W^O$ is $\sigma_O^2/(\chi N)$, ``sigma_O sqrt(chi)`` when it is $\sigma_O^2/N$
    (``chi_in_readout_prior=False``, docs/theory.md §2b)."""
    if isinstance(chi_in_readout_prior, bool):
        return sigma_O if chi_in_readout_prior else sigma_O * math.sqrt(chi)
    return sigma_O * jnp.sqrt(chi / readout_chi(chi, chi_in_readout_prior=chi_in_readout_prior))


def theory_sigma2_chi(sigma2, chi, *, chi_in_readout_prior: Flag = True, chi_in_noise: Flag = True):
    r"""``(sigma2', chi')`` with the same noise $\sigma'^2/\chi'$ and readout prior
    $\sigma_O^2/(\chi' N)$ as the switches give (docs/theory.md §2b).

    The closed forms are written for both switches on (noise $\sigma^2/\chi$, readout prior
    $\sigma_O^2/(\chi N)$); the posterior depends on $\chi$ only through these two variances,
    so every reading is the same theory at ``chi' = readout_chi``, ``sigma2' = sigma2 chi' /
    noise_chi``. Both switches on returns the inputs themselves (bit for bit); the switches are
    bools or 0/1 numbers (traceable).
    """
    names = isinstance(chi_in_readout_prior, bool) and isinstance(chi_in_noise, bool)
    if names and chi_in_readout_prior and chi_in_noise:
        return sigma2, chi
    c_r = readout_chi(chi, chi_in_readout_prior=chi_in_readout_prior)
    c_n = noise_chi(chi, chi_in_noise=chi_in_noise)
    if names:
        return sigma2 * c_r / c_n, c_r
    return jnp.where(c_r == c_n, sigma2, sigma2 * c_r / c_n), c_r  # equal: sigma2 itself


def linear_scale_divisor(L, linear_scale):
    """``L^k`` of the linear attention ``A = s / L^k`` (docs/theory.md §2b): 1, sqrt(L) or L.

    ``linear_scale`` is a name from :data:`LINEAR_SCALES` or the exponent ``k`` as a float
    array (0, 0.5 or 1; traceable). ``k = 1`` gives ``L`` itself and ``k = 0`` gives ``1``
    exactly, not a rounded power.
    """
    if isinstance(linear_scale, str):
        if linear_scale not in LINEAR_SCALES:
            raise ValueError(f"linear_scale must be one of {LINEAR_SCALES}, got {linear_scale!r}")
        linear_scale = LINEAR_SCALE_EXPONENTS[linear_scale]
        if linear_scale == 0.5:
            return L**0.5
        return L if linear_scale == 1.0 else 1.0
    return jnp.where(linear_scale == 0.5, jnp.sqrt(L), 1.0 + linear_scale * (L - 1.0))


def shift_matrix(L: int, dtype=None) -> AttnMatrix:
    """``G*_{ab} = delta_{a-1,b}`` (indices mod L): query ``a`` reads key ``a-1``."""
    return jnp.roll(jnp.eye(L, dtype=dtype), -1, axis=1)


def basis(L: int, dtype=None) -> tuple[AttnMatrix, AttnMatrix]:
    """The unit-Frobenius (non-orthogonal) basis ``B1 = J/L``, ``B2 = G*/sqrt(L)`` (§4)."""
    return jnp.ones((L, L), dtype=dtype) / L, shift_matrix(L, dtype) / jnp.sqrt(L)


def copy_fraction(c1, cG, L):
    r"""``psi = (1-1/L) cG^2 / (r^2 + (1-1/L) cG^2)``, ``r = c1 + cG/sqrt(L)`` (§5); 0 at G = 0."""
    r = c1 + cG / jnp.sqrt(L)
    w = (1 - 1 / L) * cG**2
    den = r**2 + w
    return jnp.where(den > 0, w / jnp.where(den > 0, den, 1.0), 0.0)


class SpanProjection(NamedTuple):
    """Least-squares coefficients on ``(B1, B2)`` and how much of the matrix the span covers."""

    c1: Scalar  # pooling coefficient (a1 for softmax)
    cG: Scalar  # copying coefficient (aG for softmax)
    r: Scalar  # row sum c1 + cG / sqrt(L)
    psi: Scalar  # copy fraction
    coverage: Scalar  # <A, Pi A> / (||A|| ||Pi A||); nan for A = 0


def project(A: AttnMatrix, *, gauge_fix: bool = False) -> SpanProjection:
    r"""Project ``A`` on span{B1, B2} by least squares (docs/theory.md §4, §6), in ``A``'s dtype.

    The basis Gram is $\begin{pmatrix}1&L^{-1/2}\\L^{-1/2}&1\end{pmatrix}$. ``gauge_fix`` flips
    the Z2 sign of linear attention so that ``r > 0``.
    """
    L = A.shape[-1]
    B = jnp.stack(basis(L, A.dtype))
    g = L**-0.5
    gram = jnp.array([[1.0, g], [g, 1.0]], A.dtype)
    c = jnp.linalg.solve(gram, jnp.einsum("kab,ab->k", B, A))
    proj = jnp.einsum("k,kab->ab", c, B)
    norm = jnp.linalg.norm(A) * jnp.linalg.norm(proj)
    coverage = jnp.where(norm > 0, jnp.sum(A * proj) / jnp.where(norm > 0, norm, 1.0), jnp.nan)
    r = c[0] + c[1] / jnp.sqrt(L)
    if gauge_fix:
        c = jnp.where(r < 0, -c, c)
        r = jnp.abs(r)
    return SpanProjection(c[0], c[1], r, copy_fraction(c[0], c[1], L), coverage)


__all__ = [
    "LIKELIHOODS",
    "LINEAR_SCALES",
    "LINEAR_SCALE_EXPONENTS",
    "SpanProjection",
    "basis",
    "copy_fraction",
    "effective_P",
    "linear_scale_divisor",
    "noise_chi",
    "noise_factor",
    "noise_variance",
    "project",
    "readout_chi",
    "readout_prior_std",
    "shift_matrix",
    "theory_sigma2_chi",
]
