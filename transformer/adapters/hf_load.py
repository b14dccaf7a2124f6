"""Loading a Hugging Face model of each family (encoder-decoder, decoder-only, encoder-only) safely: safetensors only,
no remote code, a size cap checked before any allocation, and one clear line for each thing that can be wrong with
a folder or hub id."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch

from .errors import HFModelError

DEFAULT_MAX_PARAMS = 1_500_000_000
HUB_FILES = ["*.json", "*.safetensors", "*.spm", "*.model", "*.txt", "vocab*", "merges*"]  # never *.bin/*.py
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")


SUPPORTED = ("encoder-decoders (Marian, BART/mBART, T5/mT5), decoder-only language models (GPT-2, Llama, Qwen2, "
             "Mistral, Gemma 2/3, Phi-3, OLMo 2, GPT-NeoX/Pythia, Falcon) and "
             "encoder-only masked language models (BERT, RoBERTa, DistilBERT, ModernBERT)")
LOADABLE = ("encoder-decoder", "decoder-only", "encoder-only")  # the family names (transformer/model/families.py)
FAMILY_NOUNS = {"encoder-decoder": "encoder-decoder", "decoder-only": "decoder-only language model",
                "encoder-only": "encoder-only masked language model"}


def _family(model_type: str) -> str:
    """The family of a `model_type`: "encoder-decoder", "decoder-only", "encoder-only", or words saying what it is
    (refused)."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
        MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
    )
    if model_type in MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES:
        return "encoder-decoder"
    if model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES:  # before causal: BERT has a causal head too
        return "encoder-only"
    if model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "decoder-only"
    return "not a text encoder-decoder or language model"


def read_config(folder: Path) -> dict[str, Any]:
    """config.json as a dict; refuses a missing or corrupt file and any custom code."""
    path = folder / "config.json"
    if not path.is_file():
        raise HFModelError(f"{folder} has no config.json: it is not a Hugging Face model folder")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HFModelError(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(config, dict):
        raise HFModelError(f"{path} is not a JSON object")
    if "auto_map" in config or any(folder.glob("*.py")):
        raise HFModelError(f"{folder} needs custom code (auto_map or .py files); the studio never runs a "
                           "model's own code (no trust_remote_code)")
    model_type = config.get("model_type")
    if not isinstance(model_type, str):
        raise HFModelError(f"{path} has no model_type")
    family = _family(model_type)
    if family not in LOADABLE:
        raise HFModelError(f"{model_type!r} is {family}; the studio shows {SUPPORTED}")
    from .architectures import architecture
    architecture(model_type, str(folder.name))  # refused in one line without an architecture file
    return config


def hf_family(config: dict[str, Any]) -> str:
    """The family name ("encoder-decoder", "decoder-only" or "encoder-only") of a config `read_config` accepted."""
    return _family(config["model_type"])


def _auto_class(family: str) -> Any:
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSeq2SeqLM
    classes = {"decoder-only": AutoModelForCausalLM, "encoder-only": AutoModelForMaskedLM}
    return classes.get(family, AutoModelForSeq2SeqLM)


def import_model_code(folder: Path) -> None:
    """Import the transformers code the folder's model class needs (~1 s on a 2-core CPU for a first model), so that
    opening it later only reads its weights. Refuses what `read_config` refuses; loads no weights."""
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING,
        MODEL_FOR_MASKED_LM_MAPPING,
        MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING,
    )
    config = read_config(folder)
    mapping = {"decoder-only": MODEL_FOR_CAUSAL_LM_MAPPING, "encoder-only": MODEL_FOR_MASKED_LM_MAPPING}.get(
        hf_family(config), MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING)
    mapping[type(AutoConfig.for_model(config["model_type"]))]  # the lookup imports the modeling module


def check_weights(folder: Path) -> None:
    """Refuses a folder whose weights are not safetensors (nothing is ever unpickled)."""
    if (folder / "model.safetensors").is_file() or (folder / "model.safetensors.index.json").is_file():
        return
    pickled = sorted(p.name for p in folder.iterdir() if p.suffix in PICKLE_SUFFIXES)
    if pickled:
        raise HFModelError(f"{folder} has weights only as {', '.join(pickled)} (pickled, which can run code when "
                           "loaded); "
                           "the studio loads model.safetensors only: convert them to safetensors")
    raise HFModelError(f"{folder} has no model.safetensors (or model.safetensors.index.json)")


def count_parameters(config: Any, family: str = "encoder-decoder") -> int:
    """Parameters of the model `config` describes, counted on the meta device (nothing allocated)."""
    with torch.device("meta"):
        model = _auto_class(family).from_config(config)
    return sum(p.numel() for p in model.parameters())


def resolve(name: str) -> Path:
    """A local folder, or the snapshot folder of a hub id (safe files only); offline and not cached is refused."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    if path.exists() or name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise HFModelError(f"{name}: not a checkpoint directory or model folder (it does not exist or is a file)")
    from huggingface_hub import snapshot_download
    try:
        return Path(snapshot_download(name, allow_patterns=HUB_FILES, local_files_only=True))
    except Exception:  # noqa: BLE001 - not cached: try the hub below
        pass
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        raise HFModelError(f"{name!r} is neither a folder nor in the Hugging Face cache, and the hub is "
                           "offline (HF_HUB_OFFLINE)")
    try:
        return Path(snapshot_download(name, allow_patterns=HUB_FILES))
    except Exception as exc:  # noqa: BLE001 - network, unknown repo, gated repo: one line
        raise HFModelError(f"{name!r} is neither a folder nor in the Hugging Face cache, and the hub could not "
                           f"give it ({type(exc).__name__}): offline, or no such model") from None


def _implementation(model_type: str) -> str:
    """The attention implementation a model is loaded with: the studio's registered kernel (`hf_capture.STUDIO`), or
    eager for a family whose attention is its own code (Falcon)."""
    from .architectures import architecture
    from .hf_capture import STUDIO, register
    if architecture(model_type).own is not None:
        return "eager"
    register()
    return STUDIO


def load_pretrained(name: str, max_params: int = DEFAULT_MAX_PARAMS,
                    families: tuple[str, ...] = ("encoder-decoder",)) -> tuple[Any, Any, Path]:
    """(model in eval mode with the studio's attention (eager unless a capture asks otherwise), tokenizer, folder)
    after every check above; `families` are the families ("encoder-decoder", "decoder-only", "encoder-only") the
    caller takes."""
    from transformers import AutoConfig, AutoTokenizer
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()  # no "Loading weights" bars on the CLI's stderr or the server's log
    folder = resolve(name)
    family = hf_family(read_config(folder))
    if family not in families:
        raise HFModelError(f"{name} is a {FAMILY_NOUNS[family]}; "
                           f"open it with open_model (this loader takes {', '.join(families)} models)")
    check_weights(folder)
    try:
        config = AutoConfig.from_pretrained(folder, trust_remote_code=False, local_files_only=True)
    except Exception as exc:  # noqa: BLE001 - a corrupt or inconsistent config
        raise HFModelError(f"{folder}/config.json cannot be read as a model configuration: {exc}") from None
    n = count_parameters(config, family)
    if n > max_params:
        raise HFModelError(f"{name} has about {n / 1e6:,.0f}M parameters (~{n * 4 / 2**30:.1f} GiB in float32), "
                           f"above the cap of {max_params / 1e6:,.0f}M; raise the cap to load it")
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False, local_files_only=True)
    except Exception as exc:  # noqa: BLE001 - missing or broken tokenizer files
        raise HFModelError(f"{folder} has no usable tokenizer ({type(exc).__name__}: {str(exc)[:120]})") from None
    if isinstance(tokenizer, bool) or not hasattr(tokenizer, "convert_ids_to_tokens"):
        raise HFModelError(f"{folder} has no usable tokenizer")
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # a mismatch is refused below in one line, not reported as a table
    try:
        model, info = _auto_class(family).from_pretrained(
            folder, attn_implementation=_implementation(config.model_type), use_safetensors=True,
            trust_remote_code=False, local_files_only=True, output_loading_info=True)
    except Exception as exc:  # noqa: BLE001 - truncated weights, shape mismatches
        raise HFModelError(f"{folder}: the weights cannot be loaded ({type(exc).__name__}: {str(exc)[:160]})") from None
    finally:
        hf_logging.set_verbosity(verbosity)
    missing = [k for k in info.get("missing_keys", ()) if family != "encoder-decoder"]  # encoder-decoders: as before
    if missing:
        raise HFModelError(f"{folder}: the weights do not match the model's configuration ({len(missing)} weights "
                           f"missing, e.g. {sorted(missing)[0]}): they would be random")
    rows = model.get_output_embeddings().weight.shape[0]
    inputs = model.get_input_embeddings().weight.shape[0]
    if len(tokenizer) > min(rows, inputs):
        raise HFModelError(f"the tokenizer has {len(tokenizer):,} tokens but the model only {min(rows, inputs):,} "
                           "embedding rows: they do not belong together")
    return model.eval(), tokenizer, folder
