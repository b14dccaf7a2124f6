"""The model picker's options (shipped checkpoints, saved runs, uploads, live runs, Hugging Face models), loading
them, and the model a session uses now."""
from .catalog import (
    add_upload,
    checkpoint_stamp,
    current_model,
    live_cache_key,
    live_option_id,
    load_shared_checkpoint,
    model_options,
    resolve,
    run_of,
    selected_option,
    shared_model,
    train_page_note,
    uploaded_bundle,
    uploaded_checkpoint,
)
from .hf import hf_loader, loading_message
from .options import (
    HF,
    LIVE,
    LOAD_ERROR_KEY,
    MODEL_KEY,
    PICKER_FONT_PX,
    PICKER_LABEL_PX,
    RUN,
    SHIPPED,
    UPLOAD,
    ActiveModel,
    ModelOption,
    card_help,
    card_lines,
    select_model,
)

__all__ = ["HF", "LIVE", "LOAD_ERROR_KEY", "MODEL_KEY", "PICKER_FONT_PX", "PICKER_LABEL_PX", "RUN", "SHIPPED", "UPLOAD",
           "ActiveModel", "ModelOption", "add_upload", "card_help", "card_lines", "checkpoint_stamp", "current_model",
           "hf_loader",
           "live_cache_key", "live_option_id", "load_shared_checkpoint", "loading_message", "model_options", "resolve",
           "run_of", "select_model", "selected_option", "shared_model", "train_page_note", "uploaded_bundle",
           "uploaded_checkpoint"]
