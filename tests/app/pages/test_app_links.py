"""AppTest: a link opens the page as it was: widgets -> URL -> a fresh session -> the same widgets and charts."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers.app_session import assert_no_exception, charts, open_app, open_link, poll, small_tables, texts
from tests.helpers.tiny_runs import start_tiny_run
from transformer.decode import MAX_INPUT_CHARS
from transformer.train import server_runs
from ui.links import EXAMPLE_LINKS
from ui.views import md_token

TEXT = "stressed"  # the tiny model says 4 tokens and the end for it: room for the steps below


def chart_data(at: AppTest) -> list[tuple[str, list[dict]]]:
    """Every chart's title and rows: what a user sees drawn."""
    return [(c["title"], [f.to_dict("records") for f in c["frames"].values()]) for c in charts(at)]


def widget_values(at: AppTest, keys: list[str]) -> dict:
    return {key: at.session_state[key] for key in keys}


def assert_same_view(at: AppTest, page: str, keys: list[str]) -> AppTest:
    """Open the URL `at` ended on in a fresh session; the widgets and charts must come back the same."""
    params = dict(at.query_params)
    fresh = open_link(page, params)
    assert widget_values(fresh, keys) == widget_values(at, keys)
    assert chart_data(fresh) == chart_data(at)
    assert dict(fresh.query_params) == params
    return fresh


def test_decode_round_trip_keeps_text_step_layer_head_and_view(studio_env):
    at = open_app("decode")
    at.text_input(key="decode_text").input(TEXT).run()
    at.button(key="decode_next").click().run()
    at.button(key="decode_next").click().run()
    at.selectbox(key="decode_layer").set_value(0).run()
    at.selectbox(key="decode_head").set_value(1).run()
    at.radio(key="decode_view").set_value("teacher").run()
    assert_no_exception(at)
    params = dict(at.query_params)
    assert params["model"] == "shipped:reverse" and params["text"] == TEXT and params["step"] == "3"
    assert (params["layer"], params["head"], params["view"]) == ("1", "2", "teacher")
    fresh = assert_same_view(at, "decode", ["decode_text", "decode_reference", "decode_step", "decode_layer",
                                            "decode_head", "decode_view", "decode_top_k"])
    assert fresh.subheader[0].value.startswith("Step 3 of")


def test_decode_round_trip_keeps_a_forced_token(studio_env):
    at = open_app("decode")
    at.text_input(key="decode_text").input(TEXT).run()
    at.button(key="decode_next").click().run()
    choice = at.selectbox(key="decode_force_token").options[0]
    at.selectbox(key="decode_force_token").set_value(choice).run()
    at.button(key="decode_force").click().run()
    at.run()  # the step-through fragment asked for a full rerun: the outputs above change too
    assert_no_exception(at)
    params = dict(at.query_params)
    assert params["view"] == "forced" and params["force"] == f"2:{choice}" and params["step"] == "2"
    forced_caption = [m.value for m in at.caption if "forced at step 2" in m.value]
    assert forced_caption
    fresh = assert_same_view(at, "decode", ["decode_text", "decode_step", "decode_layer", "decode_head",
                                            "decode_view", "decode_top_k"])
    assert [m.value for m in fresh.caption if "forced at step 2" in m.value] == forced_caption
    heading = fresh.subheader[0].value
    assert heading.startswith("Step 2 of") and f"output ‹{md_token(choice)}›" in heading


@pytest.mark.parametrize("force, note", [
    ("2", "force='2' ignored (expected STEP:TOKEN"),
    ("99:a", "force=99:'a' ignored (the output has"),
    ("2:no-such-token", "force=2:'no-such-token' ignored ('no-such-token' is not in this model's output vocabulary"),
])
def test_a_bad_forced_token_falls_back_to_the_plain_output_with_a_note(studio_env, force, note):
    at = open_link("decode", {"text": TEXT, "view": "forced", "force": force, "step": "2"})
    notes = [t for t in texts(at.info) if t.startswith("Parts of this link were ignored")]
    assert len(notes) == 1 and note in notes[0], notes
    assert at.session_state["decode_view"] == "greedy" and not [m for m in at.caption if "forced at step" in m.value]
    assert "force" not in at.query_params and at.subheader[0].value.startswith("Step 2 of")


def test_attention_round_trip_keeps_mode_kind_layer_head_and_scale(studio_env):
    at = open_app("attention")
    at.text_input(key="attention_text").input(TEXT).run()
    at.radio(key="attention_mode").set_value("teacher").run()
    at.text_input(key="attention_reference").input("desserts").run()
    at.radio(key="attention_kind").set_value("decoder_self").run()
    at.selectbox(key="attention_layer").set_value(0).run()
    at.selectbox(key="attention_head").set_value(1).run()
    at.toggle(key="attention_fixed_scale").set_value(False).run()
    assert_no_exception(at)
    assert dict(at.query_params)["fixed"] == "0" and dict(at.query_params)["ref"] == "desserts"
    assert_same_view(at, "attention", ["attention_text", "attention_mode", "attention_reference", "attention_kind",
                                       "attention_layer", "attention_head", "attention_fixed_scale"])


@pytest.mark.parametrize("page", ["decode", "attention"])
def test_ablated_heads_round_trip_with_the_same_ablated_run(studio_env, page):
    at = open_app(page)
    at.text_input(key=f"{page}_text").input(TEXT).run()
    at.multiselect(key=f"{page}_ablate").set_value(["cross:L2H1", "enc:L1H2"]).run()
    assert_no_exception(at)
    assert at.query_params["ablate"] == "cross.L2H1,enc.L1H2"  # what the user chose is in the link at once
    ablated = [m for m in texts(at.markdown) if m.startswith("**Without ")]
    assert ablated == ["**Without Cross L2 H1, Enc\\. self L1 H2**"]
    fresh = assert_same_view(at, page, [f"{page}_text", f"{page}_ablate"])  # the same ablated run's charts
    assert [m for m in texts(fresh.markdown) if m.startswith("**Without ")] == ablated
    at.multiselect(key=f"{page}_ablate").set_value([]).run()
    assert "ablate" not in at.query_params  # cleared: the link no longer switches heads off


def test_home_and_compare_round_trips(studio_env):
    at = open_app()
    at.text_input(key="home_text").input(TEXT).run()
    at.selectbox(key="home_layer").set_value(0).run()
    assert dict(at.query_params)["layer"] == "1"
    assert_same_view(at, "home", ["home_text", "home_layer"])
    at = open_app("compare")
    at.text_input(key="compare_text").input(TEXT).run()
    at.slider(key="compare_step").set_value(3).run()
    at.selectbox(key="compare_head").set_value(0).run()
    assert dict(at.query_params)["compare"] == "shipped:reverse" and dict(at.query_params)["step"] == "3"
    maps = [c for c in charts(at) if c["title"].startswith(("A · ", "B · "))]
    assert len(maps) == 2 and all(c["title"].endswith("· step 3") for c in maps)  # both columns follow the step
    for c in maps:
        rows = max(c["frames"].values(), key=len)["query_index"]
        assert rows.max() == 2  # rows up to step 3 drawn, the later ones not yet
    fresh = assert_same_view(at, "compare", ["compare_text", "compare_model", "compare_step", "compare_kind",
                                             "compare_layer", "compare_head"])
    at.radio(key="compare_kind").set_value("encoder_self").run()  # the encoder's map does not depend on the step
    assert not [c for c in charts(at) if c["title"].endswith("· step 3")]
    stale = open_link("compare", {**dict(fresh.query_params), "step": "999"})
    assert any(t.startswith("Step 999 is past both outputs") for t in texts(stale.info))
    assert stale.session_state["compare_step"] == stale.slider(key="compare_step").max


def test_a_model_compared_with_itself_shows_no_divergence_and_a_zero_difference(studio_env):
    at = open_link("compare", {"model": "shipped:reverse", "compare": "shipped:reverse", "text": TEXT})
    assert any(t.startswith("No divergence") for t in texts(at.success))
    diff = [c for c in charts(at) if c["title"].startswith("B − A")]
    assert len(diff) == 1
    frame = max(diff[0]["frames"].values(), key=len)
    assert len(frame) > 0 and (frame["difference"] == 0).all()
    (steps,) = small_tables(at)  # the step-by-step table: the same token and probability on both sides
    assert steps["columns"] == ["step", "A token", "A prob", "B token", "B prob", "tokens"]
    assert steps["rows"] and all(r[1] == r[3] and r[2] == r[4] and r[5] == "same" for r in steps["rows"])
    assert [r[0] for r in steps["rows"]] == [str(i + 1) for i in range(len(steps["rows"]))]


def test_compare_the_live_training_weights_with_a_saved_checkpoint_from_a_link(studio_env):
    trainer_tab = open_app("train")
    run = start_tiny_run(trainer_tab, train_max_steps=50_000, train_max_seconds=120.0)
    try:
        assert poll(trainer_tab, lambda a: run.job.snapshot().step >= 2), "the run never trained"
        link = {"model": "shipped:reverse", "compare": f"live:{run.id}", "text": TEXT, "step": "2"}
        other_browser = open_link("compare", link)  # a colleague's browser: the run belongs to the server
        assert other_browser.selectbox(key="compare_model").value == f"live:{run.id}"
        assert not [t for t in texts(other_browser.info) if t.startswith("Parts of this link were ignored")]
        said = [m.value for m in other_browser.markdown if m.value.startswith("**B** · ")]
        assert said and "Live training" in said[0] and " steps" in said[0]  # which weights B is
        maps = [c for c in charts(other_browser) if c["title"].startswith(("A · reverse", f"B · {run.name}"))]
        assert len(maps) == 2 and all(c["title"].endswith("· step 2") for c in maps)
        assert dict(other_browser.query_params)["compare"] == f"live:{run.id}"
    finally:
        run.job.stop()
        run.job.join(20)
    server_runs.clear()  # the server forgot the run (e.g. restarted): the same link opens with a note, no error
    later = open_link("compare", link)
    notes = [t for t in texts(later.info) if t.startswith("Parts of this link were ignored")]
    assert len(notes) == 1 and "no longer on this server" in notes[0]
    assert charts(later)


@pytest.mark.parametrize("page, params, note", [
    ("decode", {"model": "shipped:nope"}, "model 'shipped:nope' is not available"),
    ("decode", {"model": "../../etc/passwd"}, "model='../../etc/passwd' ignored"),
    ("decode", {"layer": "99"}, "layer 99 ignored"),
    ("attention", {"head": "99"}, "head 99 ignored"),
    ("attention", {"kind": "nonsense"}, "kind='nonsense' ignored"),
    ("decode", {"text": TEXT, "step": "999"}, "step 999 ignored"),
    ("decode", {"step": "-3"}, "step='-3' ignored"),
    ("decode", {"text": "x" * (MAX_INPUT_CHARS + 1)}, "text='xxxx"),
    ("attention", {"ablate": "cross.L9H1"}, "ablate='cross.L9H1' ignored"),
    ("compare", {"compare": "upload:0123456789ab"}, "compare 'upload:0123456789ab' is not available"),
    ("home", {"layer": "%00\u202e"}, "layer="),
])
def test_a_bad_parameter_falls_back_with_a_note(studio_env, page, params, note):
    at = open_link(page, params)
    notes = [t for t in texts(at.info) if t.startswith("Parts of this link were ignored")]
    assert len(notes) == 1 and note in notes[0]
    assert at.session_state["sidebar_model"] == "shipped:reverse"
    assert charts(at)  # the page still shows its maps, with defaults


def test_presenter_mode_from_the_link_hides_the_sidebar_and_keys_switch_heads(studio_env):
    at = open_link("attention", {"text": TEXT, "present": "1", "head": "mean"})
    css = [str(h.proto.body) for h in at.get("html") if "presenter mode" in str(h.proto.body)]
    assert len(css) == 1 and 'section[data-testid="stSidebar"]' in css[0] and "display: none" in css[0]
    assert any(m.value.startswith("**reverse  ·  Shipped** · ") for m in at.markdown)  # which model, still said
    at.button(key="attention_head_next").click().run()
    assert at.session_state["attention_head"] == 0 and dict(at.query_params)["head"] == "1"
    at.button(key="attention_head_prev").click().run()
    at.button(key="attention_head_prev").click().run()
    assert at.session_state["attention_head"] == 1  # wraps around: mean -> last head
    at.button(key="studio_present_leave").click().run()
    assert "present" not in at.query_params
    assert not [h for h in at.get("html") if "presenter mode" in str(h.proto.body)]


def test_presenter_decode_keeps_the_projector_frame_for_the_step(studio_env):
    at = open_link("decode", {"text": TEXT, "present": "1"})
    css = " ".join(str(h.proto.body) for h in at.get("html") if "presenter mode" in str(h.proto.body))
    assert ".st-key-decode_view" in css and ".st-key-attention_downloads" in css  # expert controls hidden
    assert not [e for e in at.expander if e.label.startswith("Switch heads off")]  # no empty ablation panel
    with_heads = open_link("decode", {"text": TEXT, "present": "1", "ablate": "cross.L1H1"})
    assert [e for e in with_heads.expander if e.label.startswith("Switch heads off")]  # a link's ablation still shows
    # one output card on a projector: the greedy output stepped through, no teacher-forced card beside it
    cards = [m.value for m in at.markdown if m.value in ("**Free-running (greedy)**", "**Teacher-forced**")]
    assert cards == ["**Free-running (greedy)**"], cards
    taught = open_link("decode", {"text": TEXT, "present": "1", "ref": "desserts", "view": "teacher"})
    assert "**Teacher-forced**" in [m.value for m in taught.markdown]  # unless the link steps through it
    plain = open_link("decode", {"text": TEXT, "ref": "desserts"})
    assert {"**Free-running (greedy)**", "**Teacher-forced**"} <= {m.value for m in plain.markdown}


def test_presenter_maps_are_larger_with_larger_token_labels(studio_env):
    def map_axis(at: AppTest, title: str) -> tuple[float, int]:
        spec = next(c["spec"] for c in charts(at) if c["title"].startswith(title))
        return spec["width"], spec["layer"][0]["encoding"]["x"]["axis"]["labelFontSize"]

    for page, title in (("attention", "Cross-attention · layer"), ("decode", "Cross-attention rows up to step")):
        params = {"text": TEXT, "kind": "cross"} if page == "attention" else {"text": TEXT}
        usual, presented = open_link(page, params), open_link(page, {**params, "present": "1"})
        (width, font), (big_width, big_font) = map_axis(usual, title), map_axis(presented, title)
        assert big_width > width and big_font > font, (page, width, font, big_width, big_font)


def test_the_copy_link_names_the_view(studio_env):
    at = open_app("attention")
    at.context = {"url": "http://studio.example:8501/attention"}
    at.selectbox(key="attention_head").set_value(1).run()
    assert not at.code  # closed, the control draws nothing inside
    at.session_state["studio_share"] = True  # opened: its fragment runs again and shows the link
    at.run()
    link = [c.value for c in at.code if c.value.startswith("http://studio.example:8501/attention?")]
    assert link and "head=2" in link[0] and "model=shipped%3Areverse" in link[0]


@pytest.mark.parametrize("example", EXAMPLE_LINKS, ids=lambda e: e.label)
def test_each_example_link_of_the_home_page_opens_exactly_what_it_names(example, monkeypatch):
    monkeypatch.delenv("ATTENTION_STUDIO_CHECKPOINTS", raising=False)  # the shipped checkpoints
    at = open_link(example.page, example.params())
    assert not [t for t in texts(at.info) if t.startswith("Parts of this link")]
    assert at.session_state["sidebar_model"] == f"shipped:{example.checkpoint}"
    assert at.session_state[f"{example.page}_layer"] == example.values["layer"]
    assert at.session_state[f"{example.page}_head"] == example.values["head"]
    named = {k: v for k, v in example.params().items() if k != "focus"}  # focus: acted on once, then dropped
    assert dict(at.query_params) == named | {k: v for k, v in at.query_params.items() if k not in named}
    assert "focus" not in at.query_params
