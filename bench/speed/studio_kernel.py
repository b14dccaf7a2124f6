"""What the studio's registered attention implementation costs where no capture runs: Hugging Face `generate` of
64 new tokens after a 32-token prompt, with every weight (`output_attentions=True`), on a random causal LM of GPT-2
small's shape (124M parameters, nothing downloaded), under `studio` (the family's eager kernel behind one registry
look-up per attention call, `transformer/adapters/hf_capture.py`) vs plain `eager`, the same model in the same run.

Wall time is what a user waits; CPU time (process_time, all threads) is steadier on a shared machine."""
from __future__ import annotations

import argparse
import json

import torch

from bench.common.shapes import gpt2_small
from bench.speed.hf_decode import time_pair
from tests.helpers.hf_causal_models import lines, tokenizer
from transformer.adapters import adapter_for
from transformer.adapters.hf_capture import STUDIO

PROMPT_TOKENS, NEW_TOKENS = 32, 64


def run(repeats: int = 3) -> dict:
    torch.manual_seed(0)
    model = gpt2_small().eval()
    model.generation_config.eos_token_id = None  # 64 new tokens every time
    tok = tokenizer("gpt2", lines())
    adapter_for(model, tok, name="gpt2-small")  # adopts the model: `studio` from now on
    ids = torch.tensor([tok(" ".join(lines(200))).input_ids[:PROMPT_TOKENS]])

    def generate(implementation: str):
        def call():
            model.set_attn_implementation(implementation)
            with torch.inference_mode():
                return model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, num_beams=1,
                                      max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, output_attentions=True,
                                      return_dict_in_generate=True, pad_token_id=0)
        return call

    studio, eager = generate(STUDIO), generate("eager")
    a, b = studio(), eager()  # warm-up, and the two must agree bit for bit
    assert torch.equal(a.sequences, b.sequences), "studio and eager disagree"
    assert all(torch.equal(x, y) for s, t in zip(a.attentions, b.attentions, strict=True)
               for x, y in zip(s, t, strict=True)), "studio's weights are not eager's"
    figures = time_pair(studio, eager, repeats)
    model.set_attn_implementation(STUDIO)
    return {"shape": "gpt2-small", "prompt_tokens": ids.shape[1], "new_tokens": NEW_TOKENS, **figures}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the target is a 2-core CPU)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each, interleaved (median)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(json.dumps(run(args.repeats)), flush=True)
