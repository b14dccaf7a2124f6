"""How often a Multi30k model stutters: the share of validation outputs with a repeated word or a run of one letter.

Usage: `python -m bench.quality.repetition CHECKPOINT [CHECKPOINT ...] [--n 1014]` (greedy decoding, BLEU beside).
A "stutter" is the same word twice in a row ("grünen grünen") or one character four or more times in a row
("Füüüü"); the reference lines themselves are counted the same way, as the floor.
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from transformer.adapters import decode_texts
from transformer.analysis import corpus_scores
from transformer.data import read_aligned_files
from transformer.store import load_checkpoint

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "multi30k"
_REPEATED_WORD = re.compile(r"\b(\w+)\s+\1\b", re.IGNORECASE)
_LETTER_RUN = re.compile(r"(\w)\1{3,}")


def stutters(text: str) -> bool:
    """Whether a line repeats a word back to back or one character four or more times."""
    return bool(_REPEATED_WORD.search(text) or _LETTER_RUN.search(text))


def stutter_share(lines: list[str]) -> float:
    """The share of lines that stutter."""
    return sum(map(stutters, lines)) / max(len(lines), 1)


def main() -> None:
    """Decode the validation split with each checkpoint and print BLEU and the stutter share."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="+", type=Path)
    parser.add_argument("--n", type=int, default=1014)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    pairs = read_aligned_files(args.data / "val.en.gz", args.data / "val.de.gz", max_pairs=args.n)
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    print(f"references: {stutter_share(references):.1%} stutter ({len(pairs)} val lines)")
    for path in args.checkpoints:
        ckpt = load_checkpoint(path, load_optimizer=False)
        outputs = decode_texts(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, sources)
        scores = corpus_scores(outputs, references)
        bad = [o for o in outputs if stutters(o)][:3]
        print(f"{path} (step {ckpt.step}): BLEU {scores['bleu']:.1f}, chrF {scores['chrf']:.1f}, "
              f"{stutter_share(outputs):.1%} stutter; e.g. {bad}")
    print(scores["bleu_signature"])


if __name__ == "__main__":
    main()
