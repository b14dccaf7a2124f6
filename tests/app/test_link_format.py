"""The link format: every parameter parses back to what was written; bad values are dropped with a note."""
from __future__ import annotations

import pytest

from transformer.decode import MAX_INPUT_CHARS
from transformer.model import Head
from ui.links import MEAN, ModelSizes, check_sizes, labels_to_heads, parse_ablated, parse_params, to_params

SIZES = ModelSizes(encoder_layers=3, decoder_layers=2, heads=4)


def test_a_view_survives_the_round_trip_through_its_parameters():
    view = {"model": "shipped:toy-en-de", "compare": "run:my run-2", "text": "the man sees the dog & co?",
            "ref": "der mann", "mode": "teacher", "view": "teacher", "kind": "encoder_self", "layer": 2, "head": MEAN,
            "step": 7, "topk": 9, "fixed": False, "words": True, "present": True,
            "ablate": (("cross", 0, 1), ("encoder_self", 2, 3)), "force": (3, "a:b c")}
    params = to_params(view)
    assert params["force"] == "3:a:b c"  # STEP:TOKEN, the token may hold a colon
    assert params["layer"] == "3" and params["head"] == "mean" and params["ablate"] == "cross.L1H2,enc.L3H4"
    values, notes = parse_params(params)
    assert notes == [] and values == view


@pytest.mark.parametrize("name, value", [
    ("layer", "0"), ("layer", "abc"), ("layer", "1e9"), ("head", "-1"), ("step", "0"), ("topk", "1"),
    ("topk", "21"), ("kind", "selfish"), ("mode", "sideways"), ("fixed", "maybe"),
    ("model", "../../etc/passwd"), ("model", "/work/main/checkpoints/reverse"), ("model", "shipped:../reverse"),
    ("compare", "run:a/../b"), ("compare", "run:a\\b"), ("model", "shipped:a//b"),
    ("ablate", "cross.L0H1"), ("ablate", "attn.L1H1"), ("ablate", "cross.L1H1;rm"),
    ("force", "3"), ("force", "0:x"), ("force", "x:y"), ("force", "2:"), ("force", "2:" + "x" * 201),
    ("text", "x" * (MAX_INPUT_CHARS + 1)),
])
def test_a_bad_parameter_is_dropped_with_a_note_naming_it(name, value):
    values, notes = parse_params({name: value, "step": "2"} if name != "step" else {name: value})
    assert name not in values
    assert len(notes) == 1 and notes[0].startswith(f"{name}=")
    assert len(notes[0]) < 200  # a long value is cut in the note


def test_unknown_parameters_are_ignored_and_repeated_ones_take_the_last_value():
    values, notes = parse_params({"utm_source": "talk", "layer": ["1", "2"]})
    assert values == {"layer": 1} and notes == []


def test_layers_heads_and_ablated_heads_are_checked_against_the_model():
    values, _ = parse_params({"layer": "3", "head": "5", "ablate": "enc.L3H4,cross.L3H1,dec.L2H5"})
    kept, notes = check_sizes(values, SIZES, "encoder_self")  # 3 encoder layers: layer 3 exists
    assert kept["layer"] == 2 and "head" not in kept and kept["ablate"] == (("encoder_self", 2, 3),)
    assert any("head 5" in n for n in notes) and any("cross.L3H1" in n and "dec.L2H5" in n for n in notes)
    kept, notes = check_sizes(values, SIZES, "cross")  # 2 decoder layers: layer 3 does not
    assert "layer" not in kept and any("layer 3" in n for n in notes)


def test_ablated_heads_are_deduplicated_and_an_empty_list_is_none():
    assert parse_ablated("") == ()
    assert parse_ablated("cross.L1H2, cross.L1H2,dec.L1H1") == (("cross", 0, 1), ("decoder_self", 0, 0))


def test_the_ablation_pickers_labels_read_as_link_heads_and_back():
    heads = (("cross", 1, 0), ("encoder_self", 0, 1))
    labels = [Head(*h).label for h in heads]
    assert labels == ["cross:L2H1", "enc:L1H2"]  # what the Decode and Attention pickers hold
    assert labels_to_heads(labels) == heads == parse_ablated("cross:L2H1,enc.L1H2")
    assert labels_to_heads([]) == ()


def test_a_decoder_only_models_kind_and_heads_go_through_a_link_and_others_are_dropped():
    decoder_only = ModelSizes.from_counts({"self": (3, 4)})
    values, notes = parse_params({"kind": "self", "layer": "3", "ablate": "self.L1H2,self:L3H4"})
    assert notes == [] and values["ablate"] == (("self", 0, 1), ("self", 2, 3))
    kept, notes = check_sizes(values, decoder_only, "self")
    assert notes == [] and kept == values
    assert to_params(kept)["ablate"] == "self.L1H2,self.L3H4"
    # a link of an encoder-decoder opened on the decoder-only model: its kind and cross heads are dropped, with notes
    values, _ = parse_params({"kind": "cross", "layer": "2", "ablate": "cross.L1H1"})
    kept, notes = check_sizes(values, decoder_only, "self")
    assert "kind" not in kept and kept["layer"] == 1 and kept["ablate"] == ()
    assert any("kind='cross' ignored" in n for n in notes) and any("ablate=" in n for n in notes)
    # and the other way round
    values, _ = parse_params({"kind": "self"})
    kept, notes = check_sizes(values, ModelSizes.from_counts({"encoder_self": (2, 4), "decoder_self": (2, 4),
                                                              "cross": (2, 4)}), "cross")
    assert "kind" not in kept and notes


def test_a_revealed_polls_votes_read_and_write_as_dotted_counts_within_the_polls_bounds():
    from ui.links.link_format import MAX_POLL_OPTIONS, MAX_POLL_VOTES
    from ui.server.polls import MAX_OPTIONS, MAX_VOTERS

    assert (MAX_POLL_OPTIONS, MAX_POLL_VOTES) == (MAX_OPTIONS, MAX_VOTERS)
    values, notes = parse_params({"votes": "0.3.1.0"})
    assert values == {"votes": (0, 3, 1, 0)} and notes == [] and to_params(values) == {"votes": "0.3.1.0"}
    for bad in ("3", "1.x", "1..2", "-1.2", "2000.1", ".".join(["0"] * 65)):
        values, notes = parse_params({"votes": bad})
        assert values == {} and len(notes) == 1 and "\n" not in notes[0], bad
