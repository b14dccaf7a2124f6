"""The store stage: everything that touches disk (checkpoint directories, their file formats, bundles, atomic writes)."""
from .atomic import write_file_atomic
from .bundles import MAX_BUNDLE_BYTES, bundle_bytes, load_bundle
from .checkpoint import (
                         FORMAT_VERSION,
                         Checkpoint,
                         CheckpointError,
                         checkpoint_family,
                         is_valid_run_name,
                         SNAPSHOTS,
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

__all__ = ["Checkpoint", "CheckpointError", "checkpoint_family", "FORMAT_VERSION", "MAX_BUNDLE_BYTES", "bundle_bytes", "finite_json",
           "is_checkpoint_folder", "is_valid_run_name", "list_checkpoints", "list_hf_folders", "load_bundle",
           "load_checkpoint", "load_probe_frames", "MAX_PROBE_FRAMES", "model_card", "open_model", "PROBE_FRAMES",
           "ProbeFramesError", "save_checkpoint", "thin_frames", "SNAPSHOTS", "list_snapshots", "snapshot_name",
           "task_for_checkpoint", "write_file_atomic", "name_circuit_heads", "write_known_heads"]
