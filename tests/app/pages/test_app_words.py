"""AppTest: the words a newcomer reads say what things are, the formulas behind a tooltip: the beam search's ranking,
the contribution map's switch, caption and colour, the vector charts' dimension labels and colour scale, the training
layout, and counts in the right number."""
from __future__ import annotations

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, charts, open_app, open_link, texts
from transformer.charts.head_computation import CONTRIBUTION_TITLE, DIMENSIONS_TITLE
from ui.views import MAP_VALUES


def test_beam_ranking_in_words_with_its_formula_in_the_help(studio_env):
    at = open_link("decode", {"text": "abcdef", "beam": "3"})
    ranked = [c for c in at.caption if "final hypotheses" in c.value]
    assert len(ranked) == 1 and "ranked by their score" in ranked[0].value, texts(at.caption)
    assert "**" not in ranked[0].value and "GNMT" not in ranked[0].value
    assert "((5 + length) / 6) **" in ranked[0].help or "length **" in ranked[0].help


def test_contribution_switch_says_what_it_shows_and_keeps_the_formula_in_its_help(studio_env):
    at = open_app("decode")
    assert_no_exception(at)
    switch = at.toggle(key="decode_contribution")
    assert switch.label == "Also show what each key adds to the output" and "‖α_ij · W_O^h v_j‖" in switch.help
    assert MAP_VALUES == {"weight": "Weight", "contribution": "What each key adds"}


def test_vector_charts_name_their_dimensions_and_show_a_colour_scale(studio_env):
    at = open_app("learn")
    assert_no_exception(at)
    query = next(c for c in charts(at) if c.get("title") == "Query vector")
    encoding = query["spec"]["encoding"]
    assert encoding["x"]["title"] == DIMENSIONS_TITLE
    assert encoding["color"]["legend"]["title"].startswith("value")


def test_the_card_and_titles_count_heads_in_the_right_number():
    from transformer.charts.style import counted
    from ui.models.options import card_lines

    assert counted(1, "head") == "1 head" and counted(4, "head") == "4 heads"
    card = {"task": "reverse", "level": "char", "d_model": 32, "n_heads": 1, "n_encoder_layers": 1,
            "n_decoder_layers": 1, "d_ff": 64, "metrics": {"exact_match": 0.5}}
    size = next(line for line in card_lines(card) if line.startswith("**Size**"))
    assert "· 1 head ·" in size and "1 heads" not in size


def test_the_contribution_map_says_what_it_shows_in_words_and_keeps_its_formula_in_the_help(studio_env):
    at = open_app("attention")
    at.segmented_control(key="attention_show").set_value("contribution").run()
    assert_no_exception(at)
    (said,) = [c for c in at.caption if "how much key j adds" in c.value]
    assert "‖" not in said.value and "W_O" not in said.value
    assert "‖α_ij · W_O^h (W_V x_j + b_V)‖" in said.help and "mean vector" in said.help
    chart = next(c for c in charts(at) if c["title"].endswith("· contribution"))
    assert chart["spec"]["encoding"]["color"]["legend"]["title"] == CONTRIBUTION_TITLE


def test_a_one_head_model_is_counted_in_the_singular(studio_env, monkeypatch):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))  # sort: one head, one decoder layer
    at = open_link("attention", {"model": "shipped:sort", "text": "transformer", "mode": "greedy", "kind": "cross"})
    words = [c["title"] for c in charts(at)] + texts(at.caption)
    assert any(t.endswith("1 layer × 1 head and mean") for t in words), words
    assert any(t.startswith("1 layer × 1 head;") for t in words), words
    assert not [t for t in words if "1 heads" in t or "1 layers" in t]
