"""Greedy decoding of 64 new tokens after a 32-token prompt, with the full trace, on randomly initialised causal
language models of two real shapes (built from the config, nothing downloaded): GPT-2 small (124M parameters,
12 layers x 12 heads) and SmolLM2-135M (Llama, 30 layers, 9 query heads over 3 key/value heads). Ours
(`greedy_decode` on `HFCausalLM`) vs Hugging Face `generate(output_attentions=True)`, eager, in the same run.

Wall time is what a user waits; CPU time (process_time, all threads) is steadier on a shared machine."""
from __future__ import annotations

import argparse
import json
import tempfile

import torch

from bench.common.shapes import gpt2_small
from bench.speed.hf_decode import time_pair
from tests.helpers.hf_causal_models import lines, tokenizer
from transformer.adapters import adapter_for
from transformer.decode import greedy_decode

PROMPT_TOKENS, NEW_TOKENS = 32, 64


def smollm2_135m():
    """LlamaForCausalLM with SmolLM2-135M's configuration (576 wide, 30 layers, 9 heads over 3 kv heads, 49,152
    tokens, tied embeddings), random weights."""
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536,
                                        num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                                        max_position_embeddings=8192, rope_theta=100000.0, tie_word_embeddings=True,
                                        bos_token_id=0, eos_token_id=0, attn_implementation="eager"))


def run(shape: str, repeats: int = 3) -> dict:
    torch.manual_seed(0)
    model = {"gpt2-small": gpt2_small, "smollm2-135m": smollm2_135m}[shape]().eval()
    model.generation_config.eos_token_id = None  # 64 new tokens every time
    with tempfile.TemporaryDirectory():
        tok = tokenizer("gpt2", lines())
    adapter = adapter_for(model, tok, name=shape)
    adapter.end_ids = frozenset()
    text = " ".join(lines(200))
    prompt = tok.decode(tok(text).input_ids[:PROMPT_TOKENS])
    ids = torch.tensor([adapter.tokenize_source(prompt).ids])

    def theirs():
        with torch.inference_mode():
            return model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, num_beams=1,
                                  max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, output_attentions=True,
                                  return_dict_in_generate=True, pad_token_id=0)

    ours = lambda: greedy_decode(adapter, prompt, max_steps=NEW_TOKENS)  # noqa: E731
    result, ref = ours(), theirs()  # warm-up, and the two must agree
    assert [s.token_id for s in result.steps] == ref.sequences[0, ids.shape[1]:].tolist(), "ours and generate disagree"
    figures = time_pair(ours, theirs, repeats)
    params = sum(p.numel() for p in model.parameters())
    return {"shape": shape, "parameters_M": round(params / 1e6, 1), "prompt_tokens": ids.shape[1],
            "new_tokens": len(result.steps), **figures}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the target is a 2-core CPU)")
    parser.add_argument("--repeats", type=int, default=3, help="timed decodes of each, interleaved (median)")
    parser.add_argument("--shape", choices=("gpt2-small", "smollm2-135m"), action="append")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for shape in args.shape or ("gpt2-small", "smollm2-135m"):
        print(json.dumps(run(shape, args.repeats)), flush=True)
