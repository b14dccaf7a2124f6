"""The Train form's longest sentence is the architecture's: 256 with a table of positions, up to 131,072 for the
decoder-only architecture with rope, with the training memory of a batch that long estimated on the form and a
length or a batch the machine cannot hold refused in one line."""
from __future__ import annotations

import pytest

from tests.helpers.app_session import assert_no_exception, open_app, texts
from tests.helpers.tiny_runs import TINY_FORM, live_run_of
from transformer.model import ModelConfig, default_configs
from ui.server import LIMITS, length_cap, length_problem, limit_violations, training_memory
from ui.server import limits as limits_module

ROPE = dict(architecture="decoder-only", positions="rope")


def _configs(max_len: int, batch_size: int = 8, **model):
    return default_configs("reverse", 30, 30, model_overrides=dict(d_model=32, n_heads=2, d_ff=64, max_len=max_len,
                                                                   **model),
                           train_overrides=dict(batch_size=batch_size))


def test_rope_reads_its_own_length_and_a_table_stops_at_the_apps_cap():
    assert length_cap("decoder-only", "rope") == 131_072 and length_cap("decoder-only", "sinusoidal") == 256
    assert length_cap("encoder-decoder", "sinusoidal") == LIMITS.max_len
    assert limit_violations(*_configs(32_768, **ROPE), max_seconds=60) == []
    problems = limit_violations(*_configs(512, architecture="decoder-only"), max_seconds=60)
    assert problems == ["max length is 512; this app allows at most 256 with sinusoidal positions (the decoder-only "
                        "architecture with rope positions reads up to 131,072)"]
    assert "rope positions reads at most 131,072 tokens" in length_problem("decoder-only", "rope", 200_000)


def test_the_memory_estimate_grows_with_the_length_and_an_absurd_batch_is_refused(monkeypatch):
    short, long = (training_memory(ModelConfig(64, 64, max_len=n, **ROPE), 8) for n in (1024, 32_768))
    assert long > 20 * short  # the batch's activations: linear in the length (nothing n x n is kept)
    monkeypatch.setattr(limits_module, "free_memory", lambda: 8 * 2**30)
    problems = limit_violations(*_configs(131_072, batch_size=512, **ROPE), max_seconds=60)
    assert len(problems) == 1 and problems[0].startswith("a batch of 512 sentences of 131,072 tokens needs about ")
    assert "this machine has 8.0 GB free (lower the batch size or the max length)" in problems[0]


@pytest.fixture
def train_page(studio_env):
    at = open_app("train")
    at.selectbox(key="train_preset").set_value("tiny").run()
    for key, value in {**TINY_FORM, "train_n_decoder_layers": 1}.items():
        at.number_input(key=key).set_value(value)
    at.selectbox(key="train_architecture").set_value("decoder-only").run()
    return at


def test_the_form_takes_a_long_length_for_rope_and_shows_its_memory(train_page):
    at = train_page
    at.selectbox(key="train_positions").set_value("rope").run()
    at.number_input(key="train_max_len").set_value(32_768).run()
    assert_no_exception(at)
    note = [c for c in texts(at.caption) if c.startswith("Sentences of up to 32,768 tokens")]
    assert note and "at most 131,072" in note[0] and "GB in training (estimated" in note[0], texts(at.caption)
    assert not texts(at.error)


def test_the_form_refuses_a_long_length_with_a_table_of_positions_in_one_line(train_page):
    at = train_page
    at.selectbox(key="train_positions").set_value("sinusoidal").run()
    at.number_input(key="train_max_len").set_value(4096).run()
    said = "Max length is 4,096; this app allows at most 256 with sinusoidal positions"
    assert any(e.startswith(said) for e in texts(at.error)), texts(at.error)
    at.button(key="train_start").click().run()
    assert_no_exception(at)
    assert live_run_of(at) is None
    assert any(said in e for e in texts(at.error) if e.startswith("Training did not start")), texts(at.error)
