#!/usr/bin/env bash
# One prepared accelerator check: the paper configuration (width 10,000, 10 seeds x 16 P, the
# paper's Adam protocol capped at MAX_EPOCHS so one call fits a device lease, then a short SGLD).
# The device image already has jax, equinox, optax, numpyro, chex, matplotlib, jaxtyping and
# tqdm, so the package runs from the working tree without installing. Outputs land in $OUT
# (or benchmarks/results); the JSON is rewritten after every stage.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
out="${OUT:-benchmarks/results}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
python3 -c "import jax; print(jax.__version__, jax.devices())"
python3 benchmarks/gpu_paper_config.py --max-epochs "${MAX_EPOCHS:-200}" \
  --deadline-s "${DEADLINE_S:-360}" --out "$out" 2>&1 | tee "$out/gpu_paper_config.log" \
  | grep -v '%|' || true
