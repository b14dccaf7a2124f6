"""The studio's dictionaries and SAELens's agree (sae-lens 6.54.12, installed apart from the project): a folder
written here loads in SAELens with the same encoder output and reconstruction (ReLU, top-k, JumpReLU, an attention
site's hook_z), and a folder SAELens wrote loads here with the same encoder output.

sae-lens pins transformer-lens, wandb, datasets and more, so it is not one of the project's requirements: it runs in a
virtual environment of its own (tests/helpers/saelens_venv.py: built once per machine, in the background from the
moment a session collects these tests, which run last). Where no package registry answers, they skip with one
line."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from tests.helpers.dictionaries import random_dictionary
from transformer.dictionaries import (
    Dictionary,
    Site,
    TrainSettings,
    load_dictionary,
    save_dictionary,
)
from transformer.dictionaries import train_dictionary as train

SCRIPT = """
import sys, torch
from safetensors.torch import load_file, save_file
from sae_lens import SAE, StandardSAE, StandardSAEConfig
torch.manual_seed(0)
written = StandardSAE(StandardSAEConfig(d_in=12, d_sae=20))
with torch.no_grad():
    written.b_enc.normal_(); written.b_dec.normal_()
written.cfg.metadata.hook_name = "blocks.0.hook_resid_pre"
written.save_model(sys.argv[1])
x = torch.randn(4, 12)
save_file({"x": x, "acts": written.encode(x).contiguous()}, sys.argv[1] + "/check.safetensors")
for folder in sys.argv[2:]:
    sae = SAE.load_from_disk(folder)
    x = load_file(folder + "/x.safetensors")["x"]
    if sae.cfg.reshape_activations == "hook_z":
        x = x.view(*x.shape[:-1], 4, -1)
    acts = sae.encode(x)
    recon = sae.decode(acts).reshape(*acts.shape[:-1], -1)
    save_file({"acts": acts.contiguous(), "recon": recon.contiguous()}, folder + "/saelens.safetensors")
"""
KINDS = ("relu", "topk", "jumprelu", "hook_z", "trained")


def _trained(site: Site) -> Dictionary:
    data = torch.randn(600, 16) @ torch.randn(16, 16)
    return train(data, site, TrainSettings(24, k=3, steps=30, batch_size=128))[0]


@pytest.fixture(scope="module")
def folders(tmp_path_factory, saelens_python: Path) -> Path:
    """One folder per kind written here with its input, and one SAELens wrote; SAELens run once over them all."""
    root = tmp_path_factory.mktemp("saelens")
    for kind in KINDS:
        site = Site.parse("attn:self:L1" if kind == "hook_z" else "resid:L2")
        d = _trained(site) if kind == "trained" else random_dictionary(site, 16, 40,
                                                                        "relu" if kind == "hook_z" else kind)
        save_dictionary(d, root / kind)
        save_file({"x": torch.randn(3, 5, 16)}, str(root / kind / "x.safetensors"))
    done = subprocess.run([str(saelens_python), "-c", SCRIPT, str(root / "written"),
                           *(str(root / kind) for kind in KINDS)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return root


@pytest.mark.parametrize("kind", KINDS)
def test_a_folder_written_here_encodes_the_same_in_saelens(kind: str, folders: Path):
    theirs = load_file(str(folders / kind / "saelens.safetensors"))
    x = load_file(str(folders / kind / "x.safetensors"))["x"]
    ours = load_dictionary(folders / kind)
    acts = ours.encode(x)
    torch.testing.assert_close(acts, theirs["acts"], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ours.decode(acts), theirs["recon"], atol=1e-5, rtol=1e-5)
    assert (acts > 0).any() and (acts == 0).any()


def test_a_folder_saelens_wrote_encodes_the_same_here(folders: Path):
    ours = load_dictionary(folders / "written")
    assert ours.site.label == "resid:L1" and (ours.activation, ours.n_features) == ("relu", 20)
    theirs = load_file(str(folders / "written" / "check.safetensors"))
    torch.testing.assert_close(ours.encode(theirs["x"]), theirs["acts"], atol=1e-5, rtol=1e-5)
    assert (theirs["acts"] > 0).any()
