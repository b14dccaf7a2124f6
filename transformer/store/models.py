"""Open any model the studio can show by one name: one of our checkpoint folders, a Hugging Face folder
(what `save_pretrained` writes) or a hub id; list the Hugging Face folders of a models directory."""
from __future__ import annotations

from pathlib import Path

from ..adapters import DEFAULT_MAX_PARAMS, InspectableModel, adapter_for, load_hf_model
from .checkpoint import load_checkpoint
from .checkpoint_format import CONFIG, FORMAT_MARKER, SRC_TOKENIZER


def is_checkpoint_folder(path: Path) -> bool:
    """A folder written by `save_checkpoint` (ours, not Hugging Face's), even a damaged one."""
    if not path.is_dir():
        return False
    if (path / SRC_TOKENIZER).is_file():
        return True
    try:
        return (path / CONFIG).stat().st_size < 2**20 and FORMAT_MARKER in (path / CONFIG).read_text(errors="replace")
    except OSError:
        return False


def list_hf_folders(root: str | Path) -> list[Path]:
    """Hugging Face model folders (a config.json, not one of our checkpoints) directly under `root`, by name."""
    root = Path(root).expanduser()
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if not p.name.startswith(".") and p.is_dir()
                  and (p / CONFIG).is_file() and not is_checkpoint_folder(p))


def open_model(name: str, *, prefix: str = "", max_params: int = DEFAULT_MAX_PARAMS, chat: bool = False
               ) -> InspectableModel:
    """Our checkpoint folder, else a Hugging Face folder or hub id (an encoder-decoder, or a causal language model
    whose prompt `chat` formats as chat); raises CheckpointError or HFModelError."""
    path = Path(name).expanduser()
    if is_checkpoint_folder(path):
        ckpt = load_checkpoint(path, load_optimizer=False)
        return adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, name=ckpt.name,
                           task=ckpt.task_spec.get("name"))
    return load_hf_model(name, prefix=prefix, chat=chat, max_params=max_params)
