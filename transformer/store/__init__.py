"""The store stage: everything that touches disk (checkpoint directories, their file formats, bundles, atomic
writes)."""
from .atomic import write_file_atomic
from .bundles import MAX_BUNDLE_BYTES, bundle_bytes, load_bundle
from .checkpoint import (
                         FORMAT_VERSION,
                         SNAPSHOTS,
                         Checkpoint,
                         CheckpointError,
                         checkpoint_family,
                         checkpoint_task,
                         is_valid_run_name,
                         list_checkpoints,
                         list_snapshots,
                         load_checkpoint,
                         load_probe_frames,
                         model_card,
                         save_checkpoint,
                         snapshot_name,
                         task_for_checkpoint,
)
from .checkpoint_format import PROBE_FRAMES, finite_json
from .known_heads import name_circuit_heads, write_known_heads
from .models import is_checkpoint_folder, list_hf_folders, open_model
from .probe_frames import MAX_PROBE_FRAMES, ProbeFramesError, thin_frames
from .saved_metrics import write_metrics

__all__ = ["FORMAT_VERSION", "MAX_BUNDLE_BYTES", "MAX_PROBE_FRAMES", "PROBE_FRAMES", "SNAPSHOTS", "Checkpoint",
           "CheckpointError", "ProbeFramesError", "bundle_bytes", "checkpoint_family", "checkpoint_task", "finite_json",
           "is_checkpoint_folder", "is_valid_run_name", "list_checkpoints", "list_hf_folders", "list_snapshots",
           "load_bundle", "load_checkpoint", "load_probe_frames", "model_card", "name_circuit_heads", "open_model",
           "save_checkpoint", "snapshot_name", "task_for_checkpoint", "thin_frames", "write_file_atomic",
           "write_known_heads", "write_metrics"]
