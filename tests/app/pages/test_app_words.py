"""AppTest: the words a newcomer reads say what things are, the formulas behind a tooltip: the beam search's ranking,
the contribution map's switch, the vector charts' dimension labels and colour scale, the training layout."""
from __future__ import annotations

from tests.helpers.app_session import assert_no_exception, charts, open_app, open_link, texts
from transformer.charts.head_computation import DIMENSIONS_TITLE
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
