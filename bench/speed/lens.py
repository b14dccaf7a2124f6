"""The logit lens at real sizes: a 20-token greedy decode with and without recording the
residual stream (interleaved, best of `DECODE_REPEATS` each, wall and CPU seconds, so the ratio is measured in the
same run), the lens of every layer at one step, and the whole layers x steps grid (every step's lens).

Parts: `bart` (a random BART of bart-large's shape: 12+12 layers, d_model 1024, 50,265-token vocabulary), `gpt2`
(a random GPT-2 of gpt2's shape: 12 layers, d_model 768, 50,257 tokens), `opus` (a random Marian of opus-mt-en-de's
shape: 6+6 layers, d_model 512, 58,101 tokens), `multi30k` (the shipped checkpoint: our encoder-decoder, whose
hook-free StepPlan records the stream in the decode's cache). `python -m bench.speed.lens [part ...]`; one JSON
line per part. Figures: bench/README.md, "Logit lens".
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from transformer.adapters import HFCausalLM, HFSeq2Seq, adapter_for  # noqa: E402
from transformer.analysis import every_step_lens, step_lens  # noqa: E402
from transformer.decode import Sampling, beam_tree, greedy_decode, read_source  # noqa: E402
from transformer.store import open_model  # noqa: E402

REPEATS = 3
DECODE_REPEATS = 5  # the decodes with and without recording, interleaved: best of 5 (wall and CPU seconds)
STEPS = 20
TEXT = "the big dog sees a red house near the small tree and the green bird eats"


def _seq2seq(family: str, folder: Path, config: dict, name: str) -> HFSeq2Seq:
    """A random model of a real config with the tiny test tokenizer (ids past it show as <id n>)."""
    from transformers import BartConfig, BartForConditionalGeneration, MarianConfig, MarianMTModel

    from tests.helpers.hf_tiny_models import build
    tiny = HFSeq2Seq.load(str(build(family, folder)))
    torch.manual_seed(0)
    cls, cfg = ((BartForConditionalGeneration, BartConfig) if family == "bart" else (MarianMTModel, MarianConfig))
    model = cls(cfg(**config, attn_implementation="eager")).eval()
    return adapter_for(model, tiny.tokenizer, name=name)


def bart(folder: Path) -> HFSeq2Seq:
    return _seq2seq("bart", folder, dict(vocab_size=50265, d_model=1024, encoder_layers=12, decoder_layers=12,
                                         encoder_attention_heads=16, decoder_attention_heads=16,
                                         encoder_ffn_dim=4096, decoder_ffn_dim=4096, max_position_embeddings=1024),
                    "random BART, bart-large shape")


def opus(folder: Path) -> HFSeq2Seq:
    return _seq2seq("marian", folder, dict(vocab_size=58101, d_model=512, encoder_layers=6, decoder_layers=6,
                                           encoder_attention_heads=8, decoder_attention_heads=8,
                                           encoder_ffn_dim=2048, decoder_ffn_dim=2048, max_position_embeddings=512,
                                           pad_token_id=58100, decoder_start_token_id=58100, eos_token_id=0),
                    "random Marian, opus-mt-en-de shape")


def gpt2(folder: Path) -> HFCausalLM:
    from transformers import GPT2Config, GPT2LMHeadModel

    from tests.helpers.hf_causal_models import build
    tiny = HFCausalLM.load(str(build("gpt2", folder)))
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=50257, n_embd=768, n_layer=12, n_head=12, n_positions=1024,
                                       attn_implementation="eager")).eval()
    return adapter_for(model, tiny.tokenizer, name="random GPT-2, gpt2 shape")


def multi30k(folder: Path):
    return open_model(str(ROOT / "checkpoints" / "multi30k-en-de"))


PARTS = {"bart": bart, "gpt2": gpt2, "opus": opus, "multi30k": multi30k}
# a sampled decode vs greedy (GPT-2 shape); the beam tree vs generate
EXTRA = {"sampling": gpt2, "beam": opus, "size": bart}


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def _cpu(fn) -> float:
    """CPU seconds of this process running `fn` (both threads): less moved by other processes than the wall time."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def measure(part: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        adapter = PARTS[part](Path(tmp) / part)
        text = TEXT if adapter.source == "huggingface" else "A man in a blue shirt is riding a bike."
        run = dict(max_steps=STEPS, stop_at_end=False)
        greedy_decode(adapter, text, **run)  # warm up
        plain, recorded, plain_cpu, recorded_cpu = [], [], [], []
        for _ in range(DECODE_REPEATS):
            cpu = time.process_time()
            plain.append(_timed(lambda: greedy_decode(adapter, text, **run))[1])
            plain_cpu.append(time.process_time() - cpu)
            cpu = time.process_time()
            result, seconds = _timed(lambda: greedy_decode(adapter, text, residuals=True, **run))
            recorded_cpu.append(time.process_time() - cpu)
            recorded.append(seconds)
        step_lens(adapter, result, 0)  # warm up
        one = min(_timed(lambda: step_lens(adapter, result, len(result.steps) // 2))[1] for _ in range(REPEATS))
        grid = min(_timed(lambda: every_step_lens(adapter, result))[1] for _ in range(REPEATS))
        one_cpu = min(_cpu(lambda: step_lens(adapter, result, len(result.steps) // 2)) for _ in range(REPEATS))
        grid_cpu = min(_cpu(lambda: every_step_lens(adapter, result)) for _ in range(REPEATS))
        return {"part": part, "model": adapter.name, "steps": len(result.steps), "layers": result.residuals.n_layers,
                "vocabulary": adapter.vocab_size, "decode_s": round(min(plain), 3),
                "decode_recording_s": round(min(recorded), 3), "recording_ratio": round(min(recorded) / min(plain), 3),
                "decode_cpu_s": round(min(plain_cpu), 3),
                "recording_cpu_ratio": round(min(recorded_cpu) / min(plain_cpu), 3),
                "lens_one_step_s": round(one, 3), "lens_grid_s": round(grid, 3),
                "lens_one_step_cpu_s": round(one_cpu, 3), "lens_grid_cpu_s": round(grid_cpu, 3),
                "residuals_kb": round(result.residuals.nbytes() / 1024, 1)}


def sampling_vs_greedy(adapter) -> dict:
    """A 20-token sampled decode against the greedy one (what a sampled Next reads), interleaved, best of each."""
    run = dict(max_steps=STEPS, stop_at_end=False)
    settings = Sampling(temperature=0.8, top_k=50, top_p=0.95, seed=1)
    greedy_decode(adapter, TEXT, **run)
    plain, sampled = [], []
    for _ in range(REPEATS):
        plain.append(_timed(lambda: greedy_decode(adapter, TEXT, **run))[1])
        sampled.append(_timed(lambda: greedy_decode(adapter, TEXT, sampling=settings, **run))[1])
    return {"part": "sampling", "model": adapter.name, "greedy_s": round(min(plain), 3),
            "sampled_s": round(min(sampled), 3), "sampled_ratio": round(min(sampled) / min(plain), 3)}


def beam_vs_generate(adapter) -> dict:
    """Beam width 4, 20 tokens: the tree with every node's attention against generate(num_beams=4,
    output_attentions=True), best of each."""
    ids = torch.tensor([read_source(adapter, TEXT).ids])

    def generate():
        with adapter.running():
            return adapter.network.generate(ids, attention_mask=torch.ones_like(ids), num_beams=4, do_sample=False,
                                            max_new_tokens=STEPS, min_new_tokens=STEPS, output_attentions=True,
                                            return_dict_in_generate=True)

    generate()
    ours, theirs = [], []
    for _ in range(REPEATS):
        theirs.append(_timed(generate)[1])
        tree, seconds = _timed(lambda: beam_tree(adapter, TEXT, 4, max_steps=STEPS))
        ours.append(seconds)
    return {"part": "beam", "model": adapter.name, "generate_s": round(min(theirs), 3), "tree_s": round(min(ours), 3),
            "tree_ratio": round(min(ours) / min(theirs), 3), "nodes": len(tree.nodes)}


def trace_size(adapter) -> dict:
    """The trace JSON of a 20-token decode at bart-large's shape with the lens and the width-4 beam tree, against the
    replay's 20 MB limit."""
    from transformer.analysis import every_step_lens, lens_dict
    result = greedy_decode(adapter, TEXT, max_steps=STEPS, stop_at_end=False, residuals=True)
    plain = len(json.dumps(result.to_dict()))
    lens = len(json.dumps(lens_dict(every_step_lens(adapter, result))))
    beam = len(json.dumps(beam_tree(adapter, TEXT, 4, max_steps=STEPS).to_dict()))
    return {"part": "size", "model": adapter.name, "trace_mb": round(plain / 1e6, 2), "lens_mb": round(lens / 1e6, 3),
            "beam_mb": round(beam / 1e6, 2), "total_mb": round((plain + lens + beam) / 1e6, 2)}


def main(argv: list[str]) -> None:
    torch.set_num_threads(2)
    for part in argv or [*PARTS, *EXTRA]:
        if part in EXTRA:
            with tempfile.TemporaryDirectory() as tmp:
                adapter = EXTRA[part](Path(tmp) / part)
                figures = {"sampling": sampling_vs_greedy, "beam": beam_vs_generate, "size": trace_size}[part](adapter)
            print(json.dumps(figures), flush=True)
        else:
            print(json.dumps(measure(part)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
