#!/usr/bin/env bash
# Rebuild the shipped demo checkpoints (`make checkpoints`; a few minutes on 2 cores). Deterministic given the seeds.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
train() { "$PY" -m transformer train --force --seed 0 --no-optimizer "$@"; }
train --task reverse --out checkpoints/reverse --steps 3000 --batch-size 64 --warmup 50 --eval-every 1000
# sort: one cross-attention head in one decoder layer, so that head does the lookup (alignment >= 0.9)
train --task sort --out checkpoints/sort --steps 4000 --batch-size 64 --warmup 50 --enc-layers 3 --dec-layers 1 --heads 1 --d-model 128 --d-ff 512 --eval-every 1000
train --task toy-en-de --out checkpoints/toy-en-de --steps 4000 --eval-every 1000
for c in reverse sort toy-en-de; do
  "$PY" -m transformer eval "checkpoints/$c" --n 500
done
