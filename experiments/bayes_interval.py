"""The Bayesian P*_aG with its interval, for the report: :mod:`copyhead_jax.compare.crossing`."""

from copyhead_jax.compare.crossing import (  # noqa: F401
    ESS_MIN,
    RHAT_MAX,
    bayesian_interval,
    flagged_runs,
    interval_text,
)
