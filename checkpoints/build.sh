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
# reverse-decoder-only: the same task as one causal stack (a prefix LM: source, </s>, <s>, target; loss on the
# target part), 2 layers of the reverse model's width, for the Compare page (cross- vs self-attention on reversal)
train --task reverse --architecture decoder-only --dec-layers 2 --out checkpoints/reverse-decoder-only --steps 3000 --batch-size 64 --warmup 50 --eval-every 1000
# induction: a decoder-only language model over random letters in which one chunk repeats at a random offset (the
# induction task; loss on every token), 2 layers x 2 heads, d_model 64, tied embeddings and a one-unit MLP (d_ff 1:
# attention-only in effect, so the circuit runs through the heads alone). It grows a previous-token head and an
# induction head from the data alone; the detectors pick them and the card names them ("known_heads"), and the
# induction head reads the previous-token head's output (its strongest K-composition partner). ~300 s on the 2-core
# CPU; the loss falls from ln 62 once the circuit forms (~6,000 steps); the model then completes every repeat.
train --task induction --heads 2 --d-ff 1 --out checkpoints/induction --steps 12000 --schedule constant --batch-size 64 --lr 3e-3 --warmup 50 --eval-every 100000 --eval-examples 100
"$PY" -c 'import sys; from transformer.store import name_circuit_heads; print(name_circuit_heads(sys.argv[1]))' checkpoints/induction
# recall: a decoder-only language model over associative-recall streams (the recall task: per-stream keys and values
# of any symbol in filler, each pair seen again later; loss on every token, so it falls on each value symbol after a
# symbol seen once before), 1 head in each of 2 layers (head dim 64), d_model 64, one-unit MLP, streams of 72-144
# symbols with one in eight up to 512. Layer 1 is local (RoPE, a window of 16 positions), layer 2 global (no
# positions, queries log-n scaled past 512 keys), as Command A and Llama 4 interleave them: it grows a previous-token
# head (L1) and the recall head that reads it (L2), named in its card ("known_heads": the retrieval detector's best
# head at 512 tokens and the strongest previous-token head). ~230 s on the 2-core CPU. The recall head holds at every
# length the model reads: the detector finds it at 2k, 8k and 32k tokens (docs/finding-heads.md).
train --task recall --heads 1 --d-ff 1 --max-len 32768 --window 16 --global-every 2 --logn-length 512 --out checkpoints/recall --steps 6000 --schedule constant --batch-size 32 --lr 1e-2 --warmup 50 --eval-every 100000 --eval-examples 100 --probe-frames 0
"$PY" -c 'import sys; from transformer.analysis import long_range_heads; from transformer.store import open_model, write_known_heads; f = long_range_heads(open_model(sys.argv[1]), 512).frame; print(write_known_heads(sys.argv[1], {f.loc[f["previous"].idxmax(), "label"]: "previous-token", f.loc[f["retrieval"].idxmax(), "label"]: "retrieval"}))' checkpoints/recall
# toy-en-de-encoder-only: the toy sentences as one bidirectional stack over "English </s> German </s>" with 15 % of one
# sentence's tokens masked (a masked LM over a pair: what is masked is always in the other sentence), the toy
# defaults (2 layers, d_model 128) with batch 128; 0.95 masked-token accuracy on 500 held-out pairs
train --task toy-en-de --architecture encoder-only --out checkpoints/toy-en-de-encoder-only --steps 3000 --batch-size 128 --eval-every 500
for c in reverse reverse-decoder-only sort toy-en-de toy-en-de-encoder-only; do
  "$PY" -m transformer eval "checkpoints/$c" --n 500
done
# the shipped dictionaries (docs/dictionaries.md): SAELens folders, seed 0. On the induction model's residual stream
# entering layer 2 (what its induction head reads) 512 top-k features with k 4 over 1,000 of its task's streams: its
# stream there holds the current token, the previous token (the previous-token head's output) and the position, and
# with 4 active features a token they come apart (k 8 split "the previous token is X" into features that also fire
# late in a stream where X stood further back: 7 of 8 induction cells met the known answer, all do at k 4); on the
# toy English->German model's encoder output (what its cross-attention keys read) 512 features with k 8 over 2,000
# of its sentences
dictionary() { "$PY" -m transformer dictionary train "$@" --features 512 --steps 2000 --seed 0; }
dictionary checkpoints/induction --site resid:L2 --k 4 --corpus-cap 1000 --out checkpoints/dictionaries/induction-resid-L2
dictionary checkpoints/toy-en-de --site resid:enc:out --k 8 --corpus-cap 2000 --out checkpoints/dictionaries/toy-en-de-enc-out
# the stream models: most of a stream is random filler, so their cards score the tokens a stream determines (the
# repeat after its first token, each recalled value symbol); --save stores 500 validation streams' metrics in
# config.json (the card's), the weights untouched (a checkpoint trained before this metric gets it the same way)
for c in induction recall; do
  "$PY" -m transformer eval "checkpoints/$c" --n 500 --save
done

# multi30k-en-de: the real-corpus model (not part of `make checkpoints`' default run: pass MULTI30K=1; it needs
# ../shared/data/multi30k and a bit over an hour on 2 cores). Built with exactly this command on the shared 2-core
# AMD EPYC (other engineers' tests beside it, ~1.5 steps/s) on 2026-11-23 from 14:15 UTC; it was stopped with
# Ctrl-C at step 6,684 after 4,205 s of training (the run saves on Ctrl-C and evaluates first), so the cosine
# schedule had not finished (lr still ~0.45e-3). To rebuild the same way, stop it after ~4,200 s, or let it run
# to its 7,200 s budget (a lower final lr; expect the same or better). Validation BLEU (first 500 val sentences,
# greedy): step 1,500 32.6, 3,000 35.5, 4,500 35.5, 6,000 38.1, 6,684 39.1 (bench/README.md, "Multi30k").
# 2+2 layers, joint BPE 8k (the corpus default), tied embeddings, bf16 autocast, fp16 weights on disk (upcast on
# load); --keep-best bleu keeps the best-scoring weights in DIR/best, shipped when they differ from the last.
if [[ "${MULTI30K:-0}" == 1 ]]; then
  D=${MULTI30K_DIR:-../shared/data/multi30k}
  OUT=$(mktemp -d)/m30k
  "$PY" -m transformer train --task corpus --data "$D/train.en.gz" "$D/train.de.gz" \
    --valid-data "$D/val.en.gz" "$D/val.de.gz" --out "$OUT" --force --seed 0 --no-optimizer \
    --d-model 256 --heads 4 --enc-layers 2 --dec-layers 2 --d-ff 1024 --batch-size 64 --lr 1e-3 --warmup 400 \
    --steps 12000 --max-seconds 7200 --eval-every 1500 --eval-examples 500 --precision bf16 --fp16-weights \
    --keep-best bleu --save-every 1500
  SRC=$OUT; [[ -d "$OUT/best" ]] && SRC=$OUT/best
  rm -rf checkpoints/multi30k-en-de && cp -r "$SRC" checkpoints/multi30k-en-de && rm -rf checkpoints/multi30k-en-de/best
  "$PY" -m transformer eval checkpoints/multi30k-en-de
fi
