"""The outside check of issue 50 (docs/circuits.md): on a Hugging Face GPT-2 it trains here on induction (2 layers,
4 heads, a word-level tokenizer, saved with `save_pretrained`), `python -m transformer circuit FOLDER CLEAN CORRUPTED
--json` with no other flag must rank the key edge that makes the induction head first among the key edges into it,
and the circuit it returns must keep ≥ 0.7 of logit(clean answer) − logit(corrupted answer) when this check patches
every other head's output (its slice of the input to `attn.c_proj`) from the corrupted run with forward pre-hooks on
transformers' own modules, at the CLI's own target step. The heads are found here from `output_attentions`, not from
the studio: the induction head may look s tokens past the textbook's (these small models often match through a
1 + s-back head rather than the previous-token head); `known_heads` finds both. Long (training):
`python -m bench.quality.circuits_hf_induction [--steps N] [--seed S] [--pairs N] [--keep FOLDER]`.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

LONG = True
VOCAB, PREFIX, HALF, KEPT = 24, 3, 8, 4  # the check's pair: PREFIX random, HALF random tokens, then KEPT of them again


def train(folder: Path, steps: int, seed: int) -> float:
    """Train and save a 2-layer GPT-2 on repeated random words (random lengths, so no fixed offset copies); the last
    loss on the second copy."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
    words = {"<|endoftext|>": 0, **{f"w{i}": i + 1 for i in range(VOCAB)}}
    tok = Tokenizer(models.WordLevel(words, unk_token="<|endoftext|>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB + 1, n_embd=64, n_layer=2, n_head=4, n_inner=128,
                                       n_positions=64, bos_token_id=0, eos_token_id=0, resid_pdrop=0.0,
                                       embd_pdrop=0.0, attn_pdrop=0.0))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    loss = torch.tensor(0.0)
    for _ in range(steps):
        h, p = int(torch.randint(3, 21, ())), int(torch.randint(0, 11, ()))
        a = torch.randint(1, VOCAB + 1, (64, h))
        x = torch.cat([torch.randint(1, VOCAB + 1, (64, p)), a, a], 1)
        logits = model(x).logits[:, p + h:-1]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, p + h + 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval().save_pretrained(folder)
    PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>"
                            ).save_pretrained(folder)
    return float(loss.detach())


def label(layer: int, head: int) -> str:
    return f"self:L{layer + 1}H{head + 1}"


def known_heads(model, g: torch.Generator) -> tuple[str, str, int]:
    """(the layer-1 head that moves the matched token into the induction head's keys, the layer-2 induction head, its
    shift) by mean attention on repeated sequences: the induction head is the layer-2 head that looks furthest into
    the first copy at a fixed shift s (s = 0: the token after the earlier occurrence, the textbook case); its keys match
    the query's token through the layer-1 head that looks 1 + s tokens back (the previous-token head when s = 0)."""
    a = torch.randint(1, VOCAB + 1, (32, HALF), generator=g)
    x = torch.cat([torch.randint(1, VOCAB + 1, (32, PREFIX), generator=g), a, a], 1)
    with torch.no_grad():
        att = model(x, output_attentions=True).attentions
    q = torch.arange(PREFIX + HALF, x.shape[1] - 2)
    induction = torch.stack([att[1][:, :, q, q - HALF + 1 + s].mean((0, 2)) for s in range(3)])  # (shift, head)
    shift, head = divmod(int(induction.argmax()), induction.shape[1])
    i = torch.arange(1 + shift, x.shape[1])
    back = att[0][:, :, i, i - 1 - shift].mean((0, 2))
    print(f"induction scores at shift {shift}", [round(float(v), 2) for v in induction[shift]],
          f"layer-1 heads {1 + shift} back", [round(float(v), 2) for v in back], file=sys.stderr)
    return label(0, int(back.argmax())), label(1, head), shift


def kept_share(model, clean: torch.Tensor, corrupted: torch.Tensor, heads: set[str]) -> dict[str, float]:
    """The metric on the clean run, the corrupted run, and the clean run with every head outside `heads` patched
    from the corrupted run (its slice of c_proj's input), and the share kept."""
    blocks = model.transformer.h
    n, d = model.config.n_head, model.config.n_embd // model.config.n_head
    cache: dict[int, torch.Tensor] = {}

    def save(layer: int):
        return lambda _module, args: cache.__setitem__(layer, args[0].clone())

    def patch(layer: int):
        def hook(_module, args):
            z = args[0].clone()
            for h in range(n):
                if label(layer, h) not in heads:
                    z[..., h * d:(h + 1) * d] = cache[layer][..., h * d:(h + 1) * d]
            return (z,)
        return hook

    def run(ids: torch.Tensor, make=None) -> torch.Tensor:
        hooks = [b.attn.c_proj.register_forward_pre_hook(make(i)) for i, b in enumerate(blocks)] if make else []
        try:
            with torch.no_grad():
                return model(ids[None]).logits[0, -1]
        finally:
            for hk in hooks:
                hk.remove()

    corrupted_logits = run(corrupted, save)
    clean_logits = run(clean)
    patched = run(clean, patch)
    answer, contrast = int(clean_logits.argmax()), int(corrupted_logits.argmax())
    m = [float(v[answer] - v[contrast]) for v in (clean_logits, corrupted_logits, patched)]
    return {"metric_clean": m[0], "metric_corrupted": m[1], "metric_circuit": m[2],
            "kept": (m[2] - m[1]) / (m[0] - m[1]), "answer": answer, "contrast": contrast}


def check(folder: Path, seed: int, pair: int = 0) -> dict:
    """Run the CLI on induction pair number `pair` and judge its answer with transformers' own modules."""
    from transformers import AutoTokenizer, GPT2LMHeadModel
    model = GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager").eval()
    tok = AutoTokenizer.from_pretrained(folder)
    g = torch.Generator().manual_seed(seed + 1 + 1000 * pair)
    pre, a, b = (torch.randint(1, VOCAB + 1, (k,), generator=g) for k in (PREFIX, HALF, HALF))
    clean_ids, corrupted_ids = torch.cat([pre, a, a[:KEPT]]), torch.cat([pre, b, a[:KEPT]])  # first copy resampled
    clean, corrupted = (" ".join(tok.convert_ids_to_tokens(i.tolist())) for i in (clean_ids, corrupted_ids))
    previous, induction, shift = known_heads(model, g)
    command = [sys.executable, "-m", "transformer", "circuit", str(folder), clean, corrupted, "--json"]
    start = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - start
    result = json.loads(out.stdout)
    keys = sorted((e for e in result["edges"] if e["to"] == induction and e["input"] == "k"),
                  key=lambda e: -abs(e["score"]))
    rank = [e["from"] for e in keys].index(previous) + 1
    heads = {e[s] for e in result["circuit"] for s in ("from", "to") if e[s].startswith("self:L") and "mlp" not in e[s]}
    for _ in range(result["step"] - 1):  # the CLI's target step: both runs fed the clean greedy output up to it
        with torch.no_grad():
            nxt = model(clean_ids[None]).logits[0, -1].argmax().reshape(1)
        clean_ids, corrupted_ids = torch.cat([clean_ids, nxt]), torch.cat([corrupted_ids, nxt])
    judged = kept_share(model, clean_ids, corrupted_ids, heads)
    return {"clean": clean, "corrupted": corrupted, "previous_token_head": previous, "induction_head": induction,
            "shift": shift,
            "rank": rank, "top_key_edges": keys[:3], "circuit_heads": sorted(heads),
            "circuit_size": len(result["circuit"]), "n_edges": result["n_edges"],
            "cli_step": result["step"], "cli_answer": result["answer"], "cli_contrast": result["contrast"],
            "cli_seconds": round(seconds, 1), **judged,
            "passed": rank == 1 and judged["kept"] >= 0.7 and judged["answer"] == tok.convert_tokens_to_ids(
                result["answer"])}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=4000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pairs", type=int, default=3, help="induction pairs checked, one CLI run each")
    p.add_argument("--keep", type=Path, help="train into (or reuse) this folder instead of a temporary one")
    args = p.parse_args()
    torch.set_num_threads(1)  # a tiny model: one thread is the fastest on a shared machine
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp) / "induction"
        if not (folder / "config.json").is_file():
            start = time.perf_counter()
            loss = train(folder, args.steps, args.seed)
            print(f"trained {args.steps} steps in {time.perf_counter() - start:.0f} s, last loss {loss:.3f}",
                  file=sys.stderr)
        reports = [check(folder, args.seed, k) for k in range(args.pairs)]
    print(json.dumps(reports, indent=1))
    print(f"passed {sum(r['passed'] for r in reports)} of {len(reports)} pairs", file=sys.stderr)
    return 0 if all(r["passed"] for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
