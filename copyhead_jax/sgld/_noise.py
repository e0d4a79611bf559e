r"""Keys and counter-mode standard normals for SGLD.

Chain ``c`` has one key $k_c$; step $t$ draws its noise from ``fold_in(k_c, 2t)`` and its
minibatch from ``fold_in(k_c, 2t + 1)``, so every draw depends only on ``(k_c, t)``. With
``noise="threefry"`` (the default), float32 normals for Threefry keys are generated with both
32-bit words of each Threefry-2x32 block: bit-identical to ``jax.random.normal`` under
``jax_threefry_partitionable=False``, with half the hashes of the default (partitionable) stream.
``noise="jax"`` calls ``jax.random.normal`` as configured (another stream, same law).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.random import threefry_2x32
from jaxtyping import Array, Float, Int

NOISE = ("threefry", "jax")  # the noise generators run_chains / sgld_kernel / SGLD accept


def check_noise(noise: Any) -> str:
    if noise not in NOISE:
        raise ValueError(f"noise must be one of {NOISE}, got {noise!r}")
    return noise


def as_key(key: Array) -> Array:
    """Typed PRNG key(s); legacy ``uint32[..., 2]`` keys are wrapped as Threefry keys."""
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return key
    if key.dtype != jnp.uint32 or key.shape[-1:] != (2,):
        raise ValueError(f"key must be a jax.random.key, got dtype {key.dtype} shape {key.shape}")
    return jax.random.wrap_key_data(key)


def step_key(key: Array, t: Int[Array, ""], stream: int) -> Array:
    """``fold_in(k_c, 2 t + stream)``: stream 0 = noise of step t, 1 = minibatch at Theta_t."""
    t = lax.convert_element_type(t, jnp.uint32)
    return jax.random.fold_in(key, t * jnp.uint32(2) + jnp.uint32(stream))


def standard_normal(key: Array, n: int, dtype: Any, noise: str = "threefry") -> Float[Array, " n"]:
    """``n`` i.i.d. N(0, 1) draws; counter-mode Threefry using both words of each block."""
    if (
        noise == "jax"
        or jnp.dtype(dtype) != jnp.float32
        or str(jax.random.key_impl(key)) != "threefry2x32"
        or n >= 2**32 - 1
    ):
        return jax.random.normal(key, (n,), dtype)
    k = jax.random.key_data(key)
    bits = threefry_2x32((k[0], k[1]), lax.iota(jnp.uint32, n))
    # jax.random.uniform(minval=nextafter(-1, 0), maxval=1) then sqrt(2) erfinv, bit for bit.
    f = lax.bitcast_convert_type((bits >> 9) | jnp.uint32(0x3F800000), jnp.float32)
    lo = np.nextafter(np.float32(-1.0), np.float32(0.0))
    u = jnp.maximum(lo, (f - np.float32(1.0)) * (np.float32(1.0) - lo) + lo)
    return np.float32(np.sqrt(2.0)) * lax.erf_inv(u)
