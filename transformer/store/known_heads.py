"""A checkpoint's known heads (config.json's "known_heads": head label -> role), written after training from what the
detectors find, so the model card names them (checkpoints/build.sh does it for the induction model)."""
from __future__ import annotations

import json
from pathlib import Path

from ..adapters import adapter_for
from .checkpoint import load_checkpoint
from .checkpoint_format import CONFIG, CheckpointError, check_known_heads, read_config, write_json


def write_known_heads(path: str | Path, heads: dict[str, str]) -> dict[str, str]:
    """Store `heads` ({"self:L1H2": "previous-token", ...}) in the checkpoint at `path`; CheckpointError for a head
    the model does not have."""
    folder = Path(path)
    check_known_heads(heads, folder / CONFIG, read_config(folder)["model_config"])
    try:
        config = json.loads((folder / CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{folder / CONFIG}: {exc}") from None
    config["known_heads"] = dict(heads)
    write_json(folder / CONFIG, config, indent=2)
    return dict(heads)


def name_circuit_heads(path: str | Path) -> dict[str, str]:
    """Run the previous-token and induction detectors on the checkpoint at `path` and store the two heads they pick."""
    from ..analysis import known_circuit  # only here: the analysis stage (and Captum) loads slowly

    ckpt = load_checkpoint(path, load_optimizer=False, load_frames=False)
    adapter = adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, name=ckpt.name)
    return write_known_heads(path, known_circuit(adapter))
