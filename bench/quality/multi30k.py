"""Multi30k en->de in the same wall-clock budget: a word-level nn.Transformer baseline vs our corpus defaults.

Both train on ../shared/data/multi30k train and are scored on val with sacrebleu (cased, detokenized output
against the raw reference lines, 13a tokenizer). They run one after the other so neither steals the other's
cores. Usage: `python -m bench.quality.multi30k [--seconds 600] [--n-valid 1014] [--only ours|baseline]` (20+ minutes
with the defaults).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from bench.common.baselines import TorchTransformerBaseline
from transformer.adapters import decode_texts
from transformer.analysis import corpus_scores
from transformer.data import END_ID, START_ID, BucketSampler, TaskSpec, make_task, source_ids
from transformer.decode import beam_texts
from transformer.model import TASK_DEFAULTS, default_configs
from transformer.train import Trainer

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "multi30k"


def _files(data: Path) -> dict:
    """make_task arguments for the Multi30k train -> val split under `data`."""
    return dict(data=[data / "train.en.gz", data / "train.de.gz"], valid_data=[data / "val.en.gz", data / "val.de.gz"])


def baseline(data: Path, seconds: float, n_valid: int) -> dict:
    """The seeds' recipe: word-level vocabularies, an nn.Transformer of our default size, Adam, greedy decoding."""
    task = make_task(TaskSpec(name="corpus", tokenizer="word", n_valid=n_valid, **_files(data)))
    src_tok, tgt_tok = task.src_tokenizer, task.tgt_tokenizer
    torch.manual_seed(0)
    size = TASK_DEFAULTS["corpus"]["model"]  # the same size as ours
    model = TorchTransformerBaseline(max(src_tok.vocab_size, tgt_tok.vocab_size), size["d_model"], size["n_heads"],
                                     size["n_encoder_layers"], size["d_ff"], size["dropout"])
    opt = torch.optim.Adam(model.parameters(), lr=5e-4, betas=(0.9, 0.98))
    src = [ids[:100] for ids in src_tok.encode_many([e.source for e in task.train])]
    tgt = [ids[:100] for ids in tgt_tok.encode_many([e.target for e in task.train])]
    batches, steps, began = iter(BucketSampler(src, tgt, 64, seed=0)), 0, time.perf_counter()
    while time.perf_counter() - began < seconds:
        batch = next(batches)
        loss = F.cross_entropy(model(batch.src, batch.tgt_in).flatten(0, 1), batch.tgt_out.flatten(), ignore_index=0)
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
    model.eval()
    outputs = []
    with torch.inference_mode():
        for ex in task.valid:
            s = torch.tensor([source_ids(src_tok.encode(ex.source)[:100])])
            out = [START_ID]
            for _ in range(2 * s.size(1) + 10):
                token = int(model(s, torch.tensor([out]))[0, -1].argmax())
                if token == END_ID:
                    break
                out.append(token)
            outputs.append(tgt_tok.decode(out[1:]))
    return {"steps": steps, **corpus_scores(outputs, [e.target for e in task.valid]), "samples": outputs[:3]}


def ours(data: Path, seconds: float, n_valid: int) -> dict:
    """The CLI defaults for a corpus task (joint BPE 8k, tied embeddings, d_model 256, 2+2 layers, bf16 where the
    CPU has it); scored greedy (the headline) and with beam 4."""
    task = make_task(TaskSpec(name="corpus", n_valid=n_valid, **_files(data)))
    model_cfg, train_cfg = default_configs("corpus", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                                           None, {"tie_embeddings": True}, {"max_seconds": seconds,
                                                                            "eval_every": 10**6})
    trainer = Trainer(task, model_cfg, train_cfg)
    trainer.run()
    sources, references = [e.source for e in task.valid], [e.target for e in task.valid]
    outputs = decode_texts(trainer.model, task.src_tokenizer, task.tgt_tokenizer, sources)
    beam = corpus_scores(beam_texts(trainer.model, task.src_tokenizer, task.tgt_tokenizer, sources, 4), references)
    return {"steps": trainer.step, **corpus_scores(outputs, references), "samples": outputs[:3],
            "beam4": f"beam 4: BLEU {beam['bleu']:.1f}, chrF {beam['chrf']:.1f}"}


def main() -> None:
    """Run both in turn and print BLEU/chrF and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--n-valid", type=int, default=1014)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--only", choices=("baseline", "ours"), help="run one side (no ratio)")
    args = parser.parse_args()
    if not args.data.is_dir():
        raise SystemExit(f"error: {args.data} not found (the Multi30k corpus)")
    results = {}
    sides = {"baseline": ("baseline nn.Transformer, word-level", baseline), "ours": ("ours, corpus defaults", ours)}
    for key, (name, run) in sides.items():
        if args.only not in (None, key):
            continue
        results[name] = r = run(args.data, args.seconds, args.n_valid)
        print(f"{name}: {r['steps']} steps in {args.seconds:g}s, greedy BLEU {r['bleu']:.1f}, chrF {r['chrf']:.1f}"
              + (f"; {r['beam4']}" if "beam4" in r else ""), flush=True)
        for sample in r["samples"]:
            print(f"    {sample}")
    if len(results) < 2:
        return
    base, our = (r["bleu"] for r in results.values())
    print(f"BLEU ratio ours/baseline: {our / max(base, 1e-9):.2f}x  ({next(iter(results.values()))['bleu_signature']})")


if __name__ == "__main__":
    main()
