"""`train --positions`: a decoder-only model with RoPE is trained and saved with its scheme; the architectures
without it are refused in one line."""
from __future__ import annotations

from pathlib import Path

import pytest

from transformer.cli import main
from transformer.store import load_checkpoint

TINY = ["--task", "reverse", "--d-model", "16", "--heads", "2", "--dec-layers", "1", "--d-ff", "32",
        "--n-train", "200", "--n-valid", "10", "--eval-examples", "10", "--warmup", "2", "--steps", "3"]


def test_train_a_decoder_only_model_with_rope(tmp_path: Path) -> None:
    out = tmp_path / "rope"
    assert main(["train", *TINY, "--architecture", "decoder-only", "--positions", "rope", "--max-len", "4096",
                 "--out", str(out)]) == 0
    cfg = load_checkpoint(str(out)).model_config
    assert (cfg.positions, cfg.architecture, cfg.max_len) == ("rope", "decoder-only", 4096)


@pytest.mark.parametrize("architecture", ["encoder-decoder", "encoder-only"])
def test_rope_is_refused_for_the_other_architectures(tmp_path: Path, capsys, architecture: str) -> None:
    assert main(["train", *TINY, "--architecture", architecture, "--positions", "rope",
                 "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "decoder-only" in err
