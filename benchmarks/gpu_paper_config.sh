#!/usr/bin/env bash
# One prepared accelerator check: the paper configuration (width 10,000, 10 seeds x 16 P, the
# paper's Adam protocol capped at MAX_EPOCHS, then a short SGLD). The device image already has
# jax, equinox, optax, numpyro, chex, matplotlib, jaxtyping and tqdm, so the package runs from
# the working tree without installing. Outputs land in $OUT (or benchmarks/results).
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
out="${OUT:-benchmarks/results}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
python3 -c "import jax; print(jax.devices())"
/usr/bin/time -v python3 benchmarks/gpu_paper_config.py --max-epochs "${MAX_EPOCHS:-2000}" \
  --out "$out" 2>&1 | tail -n 40
