"""The Train page's settings: task and data, every hyperparameter in a form, and turning them into a run."""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import streamlit as st

from transformer.data import (
    DEFAULT_SUBWORD_VOCAB,
    MIN_SUBWORD_VOCAB,
    DataError,
    Task,
    TaskSpec,
    make_task,
    masked_lm_task,
    parse_pairs_text,
    read_aligned_files,
    read_pairs_tsv,
)
from transformer.model import (
    ARCHITECTURE_NAMES,
    POSITION_SCHEMES,
    PRESETS,
    STAGE_RECIPES,
    TASK_DEFAULTS,
    ConfigError,
    ModelConfig,
    TrainConfig,
    default_configs,
    stage_configs,
)
from transformer.train import JobPlan
from ui.server import LIMITS, length_cap, length_problem, max_training_processes, training_memory

from .layer_fields import GLOBAL_EVERY_HELP, LOGN_HELP, WINDOW_HELP, decoder_only_chosen
from .rope_base import ROPE_BASE_HELP, rope_chosen
from .stage_demo import STAGE_KEY, stage_available, stage_rule

TASKS = {"reverse": "Reverse a string", "copy": "Copy a string", "sort": "Sort the letters",
         "toy-en-de": "Toy English → German", "corpus": "Your own sentence pairs"}
PRESET_NAMES = ["task default", "tiny", "small", "reversal case study", "paper base"]
CORPUS_SOURCES = {"text": "Type pairs", "tsv": "Upload a TSV file", "aligned": "Upload two aligned files"}
CORPUS_TOKENIZERS = {"bpe": "BPE subwords", "unigram": "Unigram subwords", "word": "Whole words"}
MAX_APP_VOCAB = 32_000  # the app's cap on a subword vocabulary (the library allows more)
# the corpus task's vocabulary widgets and their defaults (the CLI's: joint BPE 8k, tied)
VOCAB_DEFAULTS = {"train_tokenizer": "bpe", "train_vocab_size": DEFAULT_SUBWORD_VOCAB, "train_joint_vocab": True,
                  "train_tie": True}
EXAMPLE_PAIRS = ("ich mochte ein bier -> i want a beer\nich mochte ein cola -> i want a coke\n"
                 "ich mochte ein wasser -> i want a water\ndu mochtest ein bier -> you want a beer\n"
                 "du mochtest ein cola -> you want a coke\nwir mochten ein wasser -> we want a water\n")
PROBES = {"reverse": "transformers", "copy": "transformers", "sort": "transformers",
          "toy-en-de": "today the man sees the dog", "corpus": ""}
DEFAULT_SECONDS = {"char": 30.0, "word": 120.0}


@dataclass(frozen=True)
class Field:
    """One hyperparameter widget: session key `train_<name>`, bounds, and where the value goes."""

    name: str
    label: str
    group: str  # "model", "train" or "run"
    low: float | None = None
    high: float | None = None
    step: float | None = None
    fmt: str | None = None
    options: tuple = ()
    help: str | None = None
    rope_only: bool = False  # offered only for rope positions on the decoder-only architecture
    decoder_only: bool = False  # offered only on the decoder-only architecture

    @property
    def key(self) -> str:
        """Session-state key of the widget."""
        return f"train_{self.name}"

    def offered(self, state: Mapping[Any, Any]) -> bool:
        """Whether the form's architecture and positions take this field (else it is off, the task's default used)."""
        return (rope_chosen(state) or not self.rope_only) and (decoder_only_chosen(state) or not self.decoder_only)


L = LIMITS
FIELDS = (
    Field("architecture", "Architecture", "model", options=ARCHITECTURE_NAMES,
          help="Encoder-decoder: an encoder reads the source, the decoder writes with cross-attention to it. "
               "Decoder-only: one causal stack of the decoder layers reads the source, a separator and the output as "
               "one sequence (a prefix language model, loss on the output part); the encoder layers are unused. "
               "Encoder-only: one bidirectional stack of the encoder layers reads source </s> output </s> with 15 % "
               "of one sentence masked and predicts the masked tokens (a masked LM, scored by masked-token accuracy; "
               "one joint vocabulary); the decoder layers are unused."),
    Field("positions", "Positions", "model", options=POSITION_SCHEMES,
          help="sinusoidal: the paper's fixed table added to the tokens. rope (decoder-only): each layer rotates "
               "its queries and keys by the position (as Llama does), so there is no table and its maximum length "
               "is not bounded by one."),
    Field("rope_base", "RoPE base", "model", step=1000.0, fmt="%g", help=ROPE_BASE_HELP, rope_only=True),
    Field("window", "Local window (0 = none)", "model", 0, L.max_rope_len, 8, help=WINDOW_HELP, rope_only=True),
    Field("global_every", "Global every K layers", "model", 0, L.max_layers, 1, help=GLOBAL_EVERY_HELP,
          rope_only=True),
    Field("logn_length", "Log-n scaling past (0 = off)", "model", 0, L.max_rope_len, 64, help=LOGN_HELP,
          decoder_only=True),
    Field("d_model", "d_model", "model", 8, L.max_d_model, 8, help="Width of every token vector."),
    Field("n_heads", "Heads", "model", 1, L.max_heads, 1, help="d_model must be divisible by it."),
    Field("n_encoder_layers", "Encoder layers", "model", 1, L.max_layers, 1),
    Field("n_decoder_layers", "Decoder layers", "model", 1, L.max_layers, 1),
    Field("d_ff", "Feed-forward size", "model", 8, L.max_d_ff, 8),
    Field("dropout", "Dropout", "model", 0.0, 0.9, 0.05, "%.2f"),
    Field("norm", "Normalisation", "model", options=("pre", "post"), help="pre-LN (Annotated Transformer) or post-LN "
                                                                            "(the paper)."),
    Field("max_len", "Max tokens per sentence", "model", 8, L.max_rope_len, 8,
          help=f"At most {L.max_len:,} with sinusoidal positions (a table); the decoder-only architecture with rope "
               f"positions reads up to {L.max_rope_len:,}, as far as the machine's memory allows (estimated below)."),
    Field("batch_size", "Batch size", "train", 1, L.max_batch_size, 8),
    Field("lr", "Learning rate", "train", 1e-6, 1.0, 1e-4, "%.5f"),
    Field("beta1", "Adam β1", "train", 0.0, 0.999, 0.01, "%.3f"),
    Field("beta2", "Adam β2", "train", 0.0, 0.9999, 0.001, "%.4f"),
    Field("weight_decay", "Weight decay", "train", 0.0, 1.0, 0.01, "%.3f"),
    Field("warmup_steps", "Warm-up steps", "train", 0, L.max_steps, 10),
    Field("schedule", "LR schedule", "train", options=("cosine", "constant", "inverse_sqrt")),
    Field("min_lr_ratio", "Final LR ratio (cosine)", "train", 0.0, 1.0, 0.05, "%.2f"),
    Field("decay_steps", "Decay steps (cosine)", "train", 0, L.max_steps, 50,
          help="The cosine decay's length in steps, then the final rate on; 0: the step budget (or the time "
               "budget, whichever ends first)."),
    Field("label_smoothing", "Label smoothing", "train", 0.0, 0.5, 0.05, "%.2f"),
    Field("grad_clip", "Gradient clipping (0 = off)", "train", 0.0, 100.0, 0.5, "%.1f"),
    Field("eval_every", "Evaluate every (steps)", "train", 1, L.max_steps, 50),
    Field("eval_examples", "Evaluation examples", "train", 1, L.max_eval_examples, 50),
    Field("max_steps", "Step budget", "run", 1, L.max_steps, 100),
    Field("max_seconds", "Time budget (s)", "run", 1.0, L.max_seconds, 5.0, "%.0f"),
    Field("seed", "Seed", "run", 0, 2**31 - 1, 1),
    Field("n_train", "Training examples (generated tasks)", "run", 100, L.max_n_train, 1000),
    Field("probe_every", "Record the probe every (steps)", "run", L.min_probe_every, L.max_steps, 5),
    Field("processes", "Processes", "run", 1, max_training_processes(), 1,
          help="Train on this many processes at once (DistributedDataParallel); the batch size is per process, "
               "so each step sees batch size × processes examples. The training threads are split between them, "
               "and each process takes one of the server's cores: a run waits until that many are free."),
)


def _task_key(task: str) -> str:
    return task if task in TASK_DEFAULTS else "corpus"


def form_defaults(task: str, preset: str, stage: bool = False) -> dict[str, Any]:
    """Widget values for a task and preset (task defaults, then the preset), or for the task's stage demo (its
    recipe, on as many processes as it trains fastest on and the machine has, its batch split between them; the time
    budget is the recipe's cap), within the app's caps."""
    processes = 1
    if stage and stage_available(task):
        processes = min(STAGE_RECIPES[task].processes, max_training_processes())
        model_cfg, train_cfg, _ = stage_configs(task, 100, 100, processes=processes)
    else:
        model_cfg, train_cfg = default_configs(_task_key(task), 100, 100,
                                               preset=None if preset == "task default" else preset)
    values: dict[str, Any] = {**model_cfg.to_dict(), **train_cfg.to_dict()}
    values["beta1"], values["beta2"] = train_cfg.betas
    level = "char" if task in ("reverse", "copy", "sort") else "word"
    seconds = train_cfg.max_seconds or DEFAULT_SECONDS[level]
    values["max_seconds"] = float(min(seconds, LIMITS.max_seconds))
    values["max_steps"] = min(train_cfg.max_steps, LIMITS.max_steps)
    values["n_train"] = 50_000 if level == "char" else 20_000
    values["probe_every"] = max(10, values["max_steps"] // 60)
    if train_cfg.decay_steps:  # the stage demo: about 20 recordings while the picture forms
        values["probe_every"] = max(LIMITS.min_probe_every, train_cfg.decay_steps // 20)
    values["probe"] = PROBES.get(task, "")
    values["processes"] = processes
    out = {}
    for f in FIELDS:
        value = values[f.name]
        if f.high is not None and f.low is not None and not f.options:
            value = type(f.low)(min(max(value, f.low), f.high))
        out[f.key] = value
    out["train_probe"] = values["probe"]
    return out


def apply_defaults() -> None:
    """Callback of the task and preset pickers: refill the form."""
    state = st.session_state
    state.update(form_defaults(state["train_task"], state["train_preset"], bool(state.get(STAGE_KEY))))
    remember_form()


def init_state() -> None:
    """First visit (or the widgets were cleared by another page): the defaults of the task and preset."""
    st.session_state.setdefault("train_task", "reverse")
    st.session_state.setdefault("train_preset", "task default")
    st.session_state.setdefault(STAGE_KEY, False)
    st.session_state.setdefault("train_corpus_source", "text")
    st.session_state.setdefault("train_corpus_text", EXAMPLE_PAIRS)
    for key, value in VOCAB_DEFAULTS.items():
        st.session_state.setdefault(key, value)
    saved = st.session_state.get("train_form_values") or {}
    for key, value in form_defaults(st.session_state["train_task"], st.session_state["train_preset"],
                                    st.session_state[STAGE_KEY]).items():
        st.session_state.setdefault(key, saved.get(key, value))


def remember_form() -> None:
    """Keep the submitted values, so they survive a visit to another page."""
    st.session_state["train_form_values"] = {f.key: st.session_state[f.key] for f in FIELDS} | {
        "train_probe": st.session_state.get("train_probe", "")}


def field_widget(f: Field) -> None:
    """The widget of one hyperparameter (its value lives in session state under f.key)."""
    disabled = not f.offered(st.session_state)
    if f.options:
        st.selectbox(f.label, f.options, key=f.key, help=f.help, disabled=disabled)
    else:
        st.number_input(f.label, min_value=f.low, max_value=f.high, step=f.step, format=f.fmt, key=f.key,
                        help=f.help, disabled=disabled)


def model_values(state: Mapping[Any, Any]) -> dict[str, Any]:
    """The model fields' values by config name; the RoPE base, window, global layers and log-n scaling only where
    they apply (else the task's default)."""
    return {f.name: state[f.key] for f in FIELDS if f.group == "model" and f.offered(state)}


def _read_uploads(files: list, reader) -> list[tuple[str, str]]:
    """Run a file reader on uploaded files copied into a private temp directory; messages name the user's files.

    The copies get fixed names (the browser's file name is only shown, never used as a path).
    """
    with tempfile.TemporaryDirectory(prefix="attention-studio-corpus-") as folder:
        paths = []
        for i, uploaded in enumerate(files):
            path = Path(folder) / (f"upload-{i}.gz" if uploaded.name.endswith(".gz") else f"upload-{i}.txt")
            path.write_bytes(uploaded.getvalue())
            paths.append(path)
        try:
            return reader(*paths, max_pairs=LIMITS.max_corpus_pairs)
        except DataError as exc:
            message = str(exc)
            for path, uploaded in zip(paths, files, strict=True):
                message = message.replace(str(path), uploaded.name)
            raise DataError(message) from None


def corpus_text() -> str:
    """The user's sentence pairs as TAB-separated text (typed, one TSV file or two aligned files)."""
    source = st.session_state.get("train_corpus_source", "text")
    if source == "text":
        pairs = parse_pairs_text(st.session_state.get("train_corpus_text", ""), "the typed pairs",
                                 max_pairs=LIMITS.max_corpus_pairs)
    elif source == "tsv":
        uploaded = st.session_state.get("train_corpus_tsv")
        if uploaded is None:
            raise DataError("Upload a TSV file of sentence pairs first.")
        pairs = _read_uploads([uploaded], read_pairs_tsv)
    else:
        src, tgt = st.session_state.get("train_corpus_src"), st.session_state.get("train_corpus_tgt")
        if src is None or tgt is None:
            raise DataError("Upload both files: the source sentences and their translations, one per line.")
        pairs = _read_uploads([src, tgt], read_aligned_files)
    return "\n".join(f"{s}\t{t}" for s, t in pairs)


def tokenizer_widgets(disabled: bool = False) -> None:
    """The corpus task's vocabulary: tokenizer kind, subword vocabulary size, joint vocabulary, tied embeddings."""
    c_kind, c_size, c_joint, c_tie = st.columns([2, 2, 2, 2], vertical_alignment="bottom")
    kind = c_kind.selectbox("Tokenizer", list(CORPUS_TOKENIZERS), format_func=CORPUS_TOKENIZERS.__getitem__,
                            key="train_tokenizer", disabled=disabled,
                            help="Trained on the training pairs only (cased, NFKC).")
    words = kind == "word" or disabled
    c_size.number_input("Vocabulary size", min_value=MIN_SUBWORD_VOCAB, max_value=MAX_APP_VOCAB, step=1000,
                        key="train_vocab_size", disabled=words,
                        help="Subword pieces to learn; a small corpus yields fewer than asked.")
    joint = c_joint.checkbox("Joint vocabulary", key="train_joint_vocab", disabled=words,
                             help="One vocabulary for source and target (whole words always get one per side).")
    c_tie.checkbox("Tie embeddings", key="train_tie", disabled=words or not joint,
                   help="Source and target embeddings and the output layer share one matrix (needs one joint "
                        "vocabulary).")


def corpus_tokenizer_options() -> dict[str, Any]:
    """TaskSpec's tokenizer fields from the widgets (word vocabularies are always separate)."""
    state: dict[str, Any] = VOCAB_DEFAULTS | {k: st.session_state[k] for k in VOCAB_DEFAULTS if k in st.session_state}
    kind = state["train_tokenizer"]
    if kind == "word":
        return {"tokenizer": "word", "joint": False}
    return {"tokenizer": kind, "vocab_size": int(state["train_vocab_size"]), "joint": bool(state["train_joint_vocab"])}


def build_task() -> Task:
    """The chosen task with its data; raises DataError or ConfigError for bad data or settings."""
    state = st.session_state
    task, seed = state["train_task"], int(state["train_seed"])
    if task == "corpus":
        built = make_task(TaskSpec(name="corpus", text=corpus_text(), seed=seed, **corpus_tokenizer_options()))
    else:
        n_train = int(state["train_n_train"])
        if n_train > LIMITS.max_n_train:
            raise ConfigError(f"At most {LIMITS.max_n_train:,} training examples in the app.")
        built = make_task(TaskSpec(name=task, seed=seed, n_train=n_train, n_valid=200))
    # an encoder-only model reads both sentences of a pair as one input: one joint vocabulary
    return masked_lm_task(built) if state.get("train_architecture") == "encoder-only" else built


def length_note() -> tuple[str, str] | None:
    """("caption" or "error", text): the longest sentence the form's architecture and positions allow, and the
    memory a batch of that length takes in training (estimated); an error when the length is refused."""
    state = st.session_state
    architecture, positions = state.get("train_architecture"), state.get("train_positions")
    max_len, batch = int(state.get("train_max_len") or 0), int(state.get("train_batch_size") or 1)
    problem = length_problem(str(architecture), str(positions), max_len)
    if problem:
        return "error", problem[0].upper() + problem[1:] + "."
    vocab = int(state.get("train_vocab_size", DEFAULT_SUBWORD_VOCAB)) if state.get("train_task") == "corpus" else 64
    try:
        cfg = ModelConfig(vocab, vocab, **model_values(state))
    except (ConfigError, KeyError, TypeError):
        return None  # the form's own check says what is wrong when it starts
    need = training_memory(cfg, batch)
    return "caption", (f"Sentences of up to {max_len:,} tokens (this architecture and positions: at most "
                       f"{length_cap(str(architecture), str(positions)):,}); a batch of {batch:,} that long takes "
                       f"about {need / 2**30:,.2f} GB in training (estimated; refused past the machine's free memory).")


def build_configs(task: Task) -> tuple[ModelConfig, TrainConfig]:
    """Configs from the form (every field given); raises ConfigError for invalid combinations."""
    state = st.session_state
    problem = length_problem(str(state.get("train_architecture")), str(state.get("train_positions")),
                             int(state["train_max_len"]))
    if problem:
        raise ConfigError(problem[0].upper() + problem[1:] + ".")
    model = model_values(state)
    train = {f.name: state[f.key] for f in FIELDS if f.group == "train" and f.name not in ("beta1", "beta2")}
    train["betas"] = (float(state["train_beta1"]), float(state["train_beta2"]))
    train["max_steps"] = int(state["train_max_steps"])
    train["max_seconds"] = float(state["train_max_seconds"])
    train["seed"] = int(state["train_seed"])
    model["tie_embeddings"] = task.shares_vocabulary and bool(state.get("train_tie", VOCAB_DEFAULTS["train_tie"]))
    return default_configs(_task_key(task.name), task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                           model_overrides=model, train_overrides=train)


def build_plan() -> JobPlan:
    """The training job the form asks for, whole: the task with its data, the configs, the budgets, the
    processes, the probe and (stage demo on) the stop rule; raises DataError or ConfigError for bad data or
    settings."""
    state = st.session_state
    task = build_task()
    model_cfg, train_cfg = build_configs(task)
    if stage_rule() is not None and model_cfg.architecture == "encoder-only":
        raise ConfigError("The stage demo's picture is cross-attention: set Architecture to encoder-decoder, or "
                          "switch the stage demo off to train an encoder-only model.")
    return JobPlan(task=task, model_cfg=model_cfg, train_cfg=train_cfg, max_steps=train_cfg.max_steps,
                   max_seconds=float(state["train_max_seconds"]), stop_rule=stage_rule(),
                   processes=int(state["train_processes"]),
                   probe=state.get("train_probe", "").strip() or task.probe or None,
                   probe_every=int(state["train_probe_every"]),
                   snapshot_every=int(state.get("train_snapshot_every", 100)) if state.get("train_snapshots") else None)


def preset_names() -> list[str]:
    """Size presets offered (PRESETS, "base" shown as "paper base")."""
    return [p for p in PRESET_NAMES if p == "task default" or p in PRESETS]
