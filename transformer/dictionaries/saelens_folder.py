"""Dictionaries on disk in SAELens's folder format (sae-lens 6.54.12, `SAE.save_model` / `SAE.load_from_disk`):
`cfg.json` (d_in, d_sae, dtype, apply_b_dec_to_input, normalize_activations, reshape_activations, architecture, k,
metadata with hook_name and model_name) and `sae_weights.safetensors` (W_enc, W_dec, b_enc, b_dec, threshold).

The studio's own keys ride in `metadata` (SAELens keeps whatever it finds there): `studio_site` and
`studio_metrics`. A folder SAELens wrote opens as it is; a folder written here opens in SAELens. Weights are read
with safetensors only (nothing is unpickled) and kept in float32.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .dictionary import Dictionary
from .sites import ATTN, DictionaryError, Site

CFG, WEIGHTS = "cfg.json", "sae_weights.safetensors"
SAELENS_VERSION = "6.54.12"
ARCHITECTURES = {"standard": "relu", "topk": "topk", "jumprelu": "jumprelu"}
_NORMALIZE_AS_IS = ("none", "expected_average_only_in")  # SAELens's inference applies neither


def is_dictionary_folder(path: str | Path) -> bool:
    """Whether `path` holds a SAELens folder (cfg.json and sae_weights.safetensors)."""
    return (Path(path) / CFG).is_file() and (Path(path) / WEIGHTS).is_file()


def _config(folder: Path) -> dict[str, Any]:
    try:
        cfg = json.loads((folder / CFG).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DictionaryError(f"{folder / CFG}: not a readable SAELens config ({type(exc).__name__})") from None
    if not isinstance(cfg, dict):
        raise DictionaryError(f"{folder / CFG}: not a SAELens config (a JSON object)")
    found = cfg.get("metadata")
    meta: dict[str, Any] = found if isinstance(found, dict) else {}
    cfg["metadata"] = {**{k: cfg[k] for k in ("hook_name", "hook_point", "model_name") if k in cfg}, **meta}
    if cfg.get("architecture") is None:  # before SAELens 6: top-k spelled as an activation function
        kwargs = cfg.get("activation_fn_kwargs") or {}
        topk = cfg.get("activation_fn_str", cfg.get("activation_fn")) == "topk" and "k" in kwargs
        cfg["architecture"], cfg["k"] = ("topk", kwargs["k"]) if topk else ("standard", cfg.get("k"))
    return cfg


def _tensor(weights: dict[str, torch.Tensor], name: str, folder: Path) -> torch.Tensor:
    if name not in weights:
        raise DictionaryError(f"{folder / WEIGHTS} has no {name} (it has {', '.join(sorted(weights))})")
    return weights[name].float()


def load_dictionary(path: str | Path) -> Dictionary:
    """The dictionary in a SAELens folder; DictionaryError in one line for a folder that is not one the studio
    can use."""
    folder = Path(path).expanduser()
    if not is_dictionary_folder(folder):
        raise DictionaryError(f"{folder}: not a dictionary folder (it needs {CFG} and {WEIGHTS})")
    cfg = _config(folder)
    arch = cfg["architecture"]
    if arch not in ARCHITECTURES:
        raise DictionaryError(f"{folder}: a {arch!r} dictionary; the studio reads {', '.join(ARCHITECTURES)}")
    normalize = cfg.get("normalize_activations", "none") or "none"
    if normalize not in _NORMALIZE_AS_IS:
        raise DictionaryError(f"{folder}: normalize_activations {normalize!r} is not linear at inference; fold it "
                              "into the weights first (the studio reads 'none')")
    if cfg.get("rescale_acts_by_decoder_norm"):
        raise DictionaryError(f"{folder}: rescale_acts_by_decoder_norm is set; fold the decoder norms first")
    meta = cfg["metadata"]
    hook = meta.get("hook_name") or meta.get("hook_point")
    if meta.get("hook_head_index") is not None:
        raise DictionaryError(f"{folder}: a dictionary of one head's output (hook_head_index); the studio reads "
                              "a whole layer's")
    site = Site.parse(meta["studio_site"]) if meta.get("studio_site") else Site.from_hook(str(hook))
    try:
        weights = load_file(str(folder / WEIGHTS))
    except (SafetensorError, OSError, ValueError) as exc:
        raise DictionaryError(f"{folder / WEIGHTS}: not readable safetensors ({exc})") from None
    scale = weights.get("scaling_factor", weights.get("finetuning_scaling_factor"))
    if scale is not None and not torch.allclose(scale.float(), torch.ones_like(scale.float())):
        raise DictionaryError(f"{folder}: a fine-tuning scaling factor; fold it into W_dec first")
    metrics = meta.get("studio_metrics") if isinstance(meta.get("studio_metrics"), dict) else {}
    activation = ARCHITECTURES[arch]
    k = cfg.get("k") if activation == "topk" else None
    return Dictionary(site, _tensor(weights, "W_enc", folder), _tensor(weights, "b_enc", folder),
                      _tensor(weights, "W_dec", folder), _tensor(weights, "b_dec", folder), activation,
                      int(k) if isinstance(k, (int, float)) else k,
                      _tensor(weights, "threshold", folder) if activation == "jumprelu" else None,
                      bool(cfg.get("apply_b_dec_to_input", True)), str(meta.get("model_name") or ""),
                      {str(n): float(v) for n, v in metrics.items()})


def config_of(dictionary: Dictionary, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The cfg.json SAELens 6.54.12 writes for this dictionary (`extra`: more metadata, e.g. the corpus)."""
    arch = {v: k for k, v in ARCHITECTURES.items()}[dictionary.activation]
    meta = {"sae_lens_version": SAELENS_VERSION, "sae_lens_training_version": SAELENS_VERSION,
            "model_name": dictionary.model, "hook_name": dictionary.site.hook_name, "hook_head_index": None,
            "prepend_bos": False, "studio_site": dictionary.site.label, "studio_metrics": dictionary.metrics,
            **(extra or {})}
    cfg: dict[str, Any] = {"d_in": dictionary.d_in, "d_sae": dictionary.n_features, "dtype": "float32",
                           "device": "cpu", "apply_b_dec_to_input": dictionary.apply_b_dec_to_input,
                           "normalize_activations": "none",
                           "reshape_activations": "hook_z" if dictionary.site.what == ATTN else "none",
                           "metadata": meta, "architecture": arch}
    if arch == "topk":
        cfg.update(k=dictionary.k, rescale_acts_by_decoder_norm=False)
    return cfg


def save_dictionary(dictionary: Dictionary, path: str | Path, extra: dict[str, Any] | None = None) -> Path:
    """Write `dictionary` as a SAELens folder at `path`, atomically: readers see the old folder or the new one. A
    folder there that is not a dictionary's is left alone (DictionaryError)."""
    target = Path(path).expanduser()
    if target.exists() and not (target.is_dir() and (is_dictionary_folder(target) or not any(target.iterdir()))):
        raise DictionaryError(f"{target}: exists and is not a dictionary folder; choose another --out")
    target.parent.mkdir(parents=True, exist_ok=True)
    new = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=target.parent))
    try:
        weights = {"W_enc": dictionary.w_enc, "W_dec": dictionary.w_dec, "b_enc": dictionary.b_enc,
                   "b_dec": dictionary.b_dec}
        if dictionary.threshold is not None:
            weights["threshold"] = dictionary.threshold
        save_file({n: t.detach().float().contiguous() for n, t in weights.items()}, str(new / WEIGHTS))
        (new / CFG).write_text(json.dumps(config_of(dictionary, extra), indent=1))
        new.chmod(0o755)
        if target.exists():
            aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            os.rename(target, aside / "old")
            os.rename(new, target)
            shutil.rmtree(aside)
        else:
            os.rename(new, target)
    finally:
        shutil.rmtree(new, ignore_errors=True)
    return target
