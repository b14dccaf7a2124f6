"""The Train page: the form, the controls and their actions, the live view of a run, the server's runs and the
training processes behind them."""
from .actions import BusyError, live_checkpoint, new_live_run, resume_run, start_run
from .form import (
    CORPUS_SOURCES,
    FIELDS,
    TASKS,
    apply_defaults,
    build_plan,
    field_widget,
    init_state,
    length_note,
    preset_names,
    tokenizer_widgets,
)
from .layer_fields import layers_problem
from .live_run import LIVE_RUN_KEY, live_run, run_just_ended
from .live_view import PLAYING_KEY, evaluation_panel, live_panel, timeline_panel
from .rope_base import rope_problem
from .run_list import server_runs_panel
from .stage_demo import STAGE_KEY, stage_available, stage_caption, stage_help, stage_on, stage_rule

__all__ = ["CORPUS_SOURCES", "FIELDS", "LIVE_RUN_KEY", "PLAYING_KEY", "STAGE_KEY", "TASKS", "BusyError",
           "apply_defaults", "build_plan", "evaluation_panel", "field_widget", "init_state", "length_note",
           "live_checkpoint", "live_panel", "live_run", "new_live_run", "preset_names", "resume_run", "run_just_ended",
           "server_runs_panel", "stage_available", "stage_caption", "stage_help", "stage_on", "stage_rule", "start_run",
           "timeline_panel", "tokenizer_widgets"]
__all__ += ["layers_problem", "rope_problem"]
