"""The server reads ahead the transformers code of the models directory's folders after it starts, so a first
GPT-2 or BART open only reads weights; a folder the app would refuse is skipped, and no weights are loaded."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT
from tests.helpers.hf_causal_models import build

pytestmark = pytest.mark.slow

# in a fresh interpreter, for an empty models directory and then the test's: which folders it read ahead, and whether
# GPT-2's model code was imported (no weights read)
PROBE = ("import os, sys\nfrom ui.shell.serve import read_ahead_hf_code\n"
         "for models in sys.argv[1:]:\n    os.environ['ATTENTION_STUDIO_HF_MODELS'] = models\n"
         "    print(read_ahead_hf_code())\n    print('transformers.models.gpt2.modeling_gpt2' in sys.modules)")


def test_the_models_directorys_code_is_imported_and_refused_folders_are_skipped(tmp_path):
    build("gpt2", tmp_path / "gpt2-tiny")
    custom = tmp_path / "custom-code"
    custom.mkdir()
    (custom / "config.json").write_text(json.dumps({"model_type": "gpt2", "auto_map": {"AutoModel": "x.Model"}}))
    vision = tmp_path / "vision-like"  # an image model: not a family the studio opens
    vision.mkdir()
    (vision / "config.json").write_text(json.dumps({"model_type": "vit"}))
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "none"), str(tmp_path)], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120,
                          check=True)
    empty, full = done.stdout.split("\n")[:2], done.stdout.split("\n")[2:4]
    assert empty == ["[]", "False"]  # nothing to read ahead: nothing imported
    assert full == ["['gpt2-tiny']", "True"]
