"""Greedy decoding of 30 tokens with the full trace on a randomly initialised model of opus-mt-en-de's shape
(d_model 512, 6+6 layers, 8 heads, vocabulary 58,101; built from the config, nothing downloaded): ours
(`greedy_decode` on `HFSeq2Seq`) vs Hugging Face `generate(output_attentions=True)`, eager, in the same run.

Wall time is what a user waits; CPU time (process_time, all threads) is steadier on a shared machine."""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from tests.helpers.hf_tiny_models import _marian_tokenizer, corpus
from transformer.adapters import adapter_for
from transformer.decode import greedy_decode

STEPS = 30
TEXT = "the man sees the big dog near the red house"


def opus_mt_shape():
    """MarianMTModel with opus-mt-en-de's configuration, random weights, its end token made to lose."""
    from transformers import MarianConfig, MarianMTModel
    vocab = 58101
    cfg = MarianConfig(vocab_size=vocab, d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
                       decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
                       max_position_embeddings=512, pad_token_id=vocab - 1, eos_token_id=0,
                       decoder_start_token_id=vocab - 1, scale_embedding=True, attn_implementation="eager")
    torch.manual_seed(0)
    model = MarianMTModel(cfg).eval()
    model.generation_config.bad_words_ids = [[vocab - 1]]
    model.generation_config.forced_eos_token_id = None
    with torch.no_grad():
        model.final_logits_bias[0, 0] = -1e4  # 30 tokens every time
    return model


def run(repeats: int = 5) -> dict:
    model = opus_mt_shape()
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer = _marian_tokenizer(Path(tmp), corpus())
    adapter = adapter_for(model, tokenizer, name="opus-mt-en-de shape")
    batch = tokenizer(TEXT, return_tensors="pt")

    def theirs():
        with torch.inference_mode():
            return model.generate(**batch, do_sample=False, num_beams=1, max_new_tokens=STEPS, output_attentions=True,
                                  return_dict_in_generate=True)

    ours = lambda: greedy_decode(adapter, TEXT, max_steps=STEPS)  # noqa: E731
    result, ref = ours(), theirs()  # warm-up, and the two must agree
    assert [s.token_id for s in result.steps] == ref.sequences[0, 1:].tolist(), "ours and generate disagree"
    assert "forward" not in vars(model.get_output_embeddings()), "generate must run the model as loaded"
    return {"tokens": len(result.steps), **time_pair(ours, theirs, repeats)}


def time_pair(ours, theirs, repeats: int) -> dict:
    """Median wall and CPU seconds of `ours` and `theirs`, called `repeats` times each, interleaved; their ratios."""
    wall: dict[str, list[float]] = {"ours": [], "generate": []}
    cpu: dict[str, list[float]] = {"ours": [], "generate": []}
    for _ in range(repeats):
        for name, fn in (("ours", ours), ("generate", theirs)):
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    median = lambda xs: sorted(xs)[repeats // 2]  # noqa: E731
    o, g = median(wall["ours"]), median(wall["generate"])
    oc, gc = median(cpu["ours"]), median(cpu["generate"])
    return {"ours_s": round(o, 3), "generate_s": round(g, 3), "ratio": round(o / g, 3),
            "ours_cpu_s": round(oc, 3), "generate_cpu_s": round(gc, 3), "cpu_ratio": round(oc / gc, 3),
            "threads": torch.get_num_threads(), "repeats": repeats}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the target is a 2-core CPU)")
    parser.add_argument("--repeats", type=int, default=5, help="timed decodes of each, interleaved (median)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(run(args.repeats))
