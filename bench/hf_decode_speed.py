"""Greedy decoding of 30 tokens with the full trace on a randomly initialised model of opus-mt-en-de's shape
(d_model 512, 6+6 layers, 8 heads, vocabulary 58,101; built from the config, nothing downloaded): ours
(`decode_greedy` on `HFSeq2Seq`) vs Hugging Face `generate(output_attentions=True)`, eager, in the same run."""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

import torch

from tests.hf_tiny_models import _marian_tokenizer, corpus
from transformer.decode import decode_greedy
from transformer.model import HFSeq2Seq

STEPS = 30
TEXT = "the man sees the big dog near the red house"


def opus_mt_shape():
    """MarianMTModel with opus-mt-en-de's configuration, random weights, its end token made to lose."""
    from transformers import MarianConfig, MarianMTModel
    vocab = 58101
    cfg = MarianConfig(vocab_size=vocab, d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
                       decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048, max_position_embeddings=512,
                       pad_token_id=vocab - 1, eos_token_id=0, decoder_start_token_id=vocab - 1,
                       scale_embedding=True, attn_implementation="eager")
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
    lm = HFSeq2Seq(model, tokenizer, "opus-mt-en-de shape")
    batch = tokenizer(TEXT, return_tensors="pt")

    def theirs():
        with torch.inference_mode():
            return model.generate(**batch, do_sample=False, num_beams=1, max_new_tokens=STEPS, output_attentions=True,
                                  return_dict_in_generate=True)

    ours = lambda: decode_greedy(lm, TEXT, max_steps=STEPS)  # noqa: E731
    result, ref = ours(), theirs()  # warm-up, and the two must agree
    assert [s.token_id for s in result.steps] == ref.sequences[0, 1:].tolist(), "ours and generate disagree"
    times: dict[str, list[float]] = {"ours": [], "generate": []}
    for _ in range(repeats):
        for name, fn in (("ours", ours), ("generate", theirs)):
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    o, g = (sorted(times[k])[repeats // 2] for k in ("ours", "generate"))
    return {"tokens": len(result.steps), "ours_s": round(o, 3), "generate_s": round(g, 3), "ratio": round(o / g, 3),
            "threads": torch.get_num_threads()}


if __name__ == "__main__":
    torch.set_num_threads(2)
    print(run())
