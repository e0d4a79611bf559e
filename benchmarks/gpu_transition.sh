#!/usr/bin/env bash
# One prepared accelerator run: the Bayesian softmax P*_aG of the paper-chi-lik reading (L = 25,
# V = 5, width 10,000; chi in the likelihood only) by `copyhead transition`, 3 seeds, with more
# rungs, chains and iterations than a 2-core CPU affords (the CPU run of one seed at 5 rungs x 2
# chains x 160 iterations took 100 min and flagged every branch run). On an accelerator the
# branches, rungs, chains and SMC particles of a group run batched (TISettings.batched).
# Checkpoints (one JSON per seed and probe) come back as a tarball, so a run cut short resumes
# anywhere with the same command and --out. The device image has every package it needs.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
out="${OUT:-results/gpu}"
tr=/tmp/transition-chi-lik
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
python3 -c "import jax; print(jax.__version__, jax.devices())"
start=$(date +%s)
timeout "${LIMIT_S:-480}" python3 -c "from copyhead_jax.cli import main; main()" transition \
  --preset paper-chi-lik --attention softmax --n-seeds "${N_SEEDS:-3}" --P 150:420:8log \
  --rungs "${RUNGS:-9}" --rung-schedule "${RUNG_SCHEDULE:-near-1}" --t0 "${T0:-exact}" \
  --chains "${CHAINS:-4}" \
  --iterations "${ITERS:-400}" \
  --smc-particles "${SMC:-96}" --memory-budget-gb 60 --out "$tr" --no-plot --progress \
  > "$out/transition.log" 2>&1
echo "exit $? after $(( $(date +%s) - start )) s"
tr "\r" "\n" < "$out/transition.log" | grep -v "%|" | tail -60
ls "$tr" "$tr"/groups-* 2>/dev/null | head -60
tar czf "$out/transition-chi-lik.tgz" -C /tmp transition-chi-lik
cp "$tr/transition.json" "$out/" 2>/dev/null || true
ls -la "$out"
