"""In a real browser, three contexts (three Streamlit sessions on one server): the speaker in presenter mode at 1280x720
poses "Poll the room" on Decode; two phones (360x640) open the QR code's link, each votes once, a second vote and a
vote after the reveal are refused in one line; the speaker's screen counts the votes live and, on Reveal, draws them
beside the head's row, which equals the trace's row of a decode in this process. Its screenshots (the phone, the
speaker's screen) go to the tests' artifacts; docs/screenshots/poll-*.png are copies."""
from __future__ import annotations

import re
from urllib.parse import parse_qs, urlencode, urlsplit

from studio_browser import PAGE_SETUP_JS, ROOT, page_errors, wait_idle
from tests.helpers import ARTIFACTS
from transformer.adapters import adapter_for
from transformer.decode import greedy_decode
from transformer.store import load_checkpoint

TEXT = "A man plays the guitar on a stage."
PHONE = {"width": 360, "height": 640}
SHOTS = ARTIFACTS


def _context(browser, viewport: dict):
    context = browser.new_context(viewport=viewport)
    context.add_init_script(PAGE_SETUP_JS)
    page = context.new_page()
    page.set_default_timeout(90_000)
    return page


def _expected_row() -> list[float]:
    """Step 1's cross-attention row, last layer, mean of heads: what the speaker's Decode shows first."""
    ckpt = load_checkpoint(ROOT / "checkpoints" / "multi30k-en-de", load_optimizer=False)
    result = greedy_decode(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer), TEXT, top_k=5)
    trace = result.trace
    return trace.matrix("cross", trace.n_layers("cross") - 1, None)[trace.step_offset].tolist()


def test_the_room_votes_once_each_and_the_reveal_shows_the_heads_real_row(shipped_app, browser):
    SHOTS.mkdir(exist_ok=True)
    speaker = _context(browser, {"width": 1280, "height": 720})
    speaker.goto(f"{shipped_app.url}/decode?{urlencode({'text': TEXT, 'present': '1'})}")
    speaker.locator(".st-key-decode_poll_open button").first.wait_for(timeout=120_000)
    wait_idle(speaker, 120_000)
    speaker.locator(".st-key-decode_poll_open button").first.click()
    speaker.wait_for_function("() => new URLSearchParams(location.search).get('poll')")
    speaker.locator(".st-key-studio_poll_count").wait_for()
    params = {k: v[-1] for k, v in parse_qs(urlsplit(speaker.url).query).items() if k != "present"}
    link = f"{shipped_app.url}/decode?{urlencode(params)}"  # what the QR code holds: the view without presenting

    phones = [_context(browser, PHONE) for _ in range(2)]
    for phone in phones:
        phone.goto(link)
        phone.locator(".st-key-studio_poll_option_0 button").first.wait_for(timeout=120_000)
        wait_idle(phone, 120_000)
    n_options = phones[0].locator('.st-key-studio_poll_vote [class*="st-key-studio_poll_option_"]').count()
    assert n_options >= 4
    first_box = phones[0].locator(".st-key-studio_poll_option_0 button").first.bounding_box()
    assert first_box is not None and first_box["height"] >= 44 and first_box["y"] < PHONE["height"]  # large, in view
    phones[0].locator(".st-key-studio_poll_option_1 button").first.click()
    phones[0].get_by_text("Your vote: 2 ·").wait_for()
    phones[1].locator(".st-key-studio_poll_option_3 button").first.click()
    phones[1].get_by_text("Your vote: 4 ·").wait_for()
    phones[1].locator(".st-key-studio_poll_option_2 button").first.click()  # a second vote: refused, in one line
    refusal = phones[1].get_by_text("You have already voted in this poll")
    refusal.wait_for()
    assert "\n" not in refusal.inner_text().strip()
    speaker.locator(".st-key-studio_poll_count", has_text="2 votes").wait_for(timeout=30_000)  # live, no click
    phones[0].screenshot(path=str(SHOTS / "poll-phone.png"))

    speaker.locator(".st-key-studio_poll_reveal button").first.click()
    guessed = speaker.locator(".st-key-studio_poll_guessed")
    guessed.wait_for()
    speaker.locator(".st-key-studio_poll_result svg.marks").wait_for()
    wait_idle(speaker)
    drawn = speaker.locator(".st-key-studio_poll_result svg.marks").evaluate(
        "(svg) => [...svg.querySelectorAll('text')].map((t) => t.textContent.trim())")
    texts = [t for t in drawn if re.fullmatch(r"\d+\.\d%", t)]
    room, model = texts[0::2], texts[1::2]  # each token's two bars: the room's share, then the model's weight
    expected = _expected_row()
    assert len(model) == len(expected) == n_options
    assert model == [f"{100 * w:.1f}%" for w in expected]  # the head's real row, as the trace holds it
    assert sorted(room, reverse=True)[:2] == ["50.0%", "50.0%"]
    top = max(range(len(expected)), key=lambda i: expected[i])
    assert guessed.inner_text().startswith(f"{int(top in (1, 3))} of 2 guessed")
    speaker.screenshot(path=str(SHOTS / "poll-speaker.png"))
    votes = speaker.evaluate("() => new URLSearchParams(location.search).get('votes')")  # the result in the link
    assert votes is not None and [int(c) for c in votes.split(".")] == [int(i in (1, 3)) for i in range(n_options)]

    phones[0].locator(".st-key-studio_poll_option_0 button").first.click()  # after the reveal: refused
    phones[0].get_by_text("The votes are revealed").wait_for()
    for page in (speaker, *phones):
        assert page_errors(page) == []
    speaker.locator(".st-key-studio_poll_close button").first.click()  # closed: gone from the server and the link
    speaker.wait_for_function("() => !new URLSearchParams(location.search).get('poll')")
    for page in (speaker, *phones):
        page.context.close()


def test_a_poll_on_the_attention_page_reveals_the_picked_heads_row(shipped_app, browser):
    """Attention's "Poll the room" asks which key the map's middle row looks at most; a phone's vote is counted and the
    reveal draws the picked head's row as the trace holds it."""
    ckpt = load_checkpoint(ROOT / "checkpoints" / "multi30k-en-de", load_optimizer=False)
    trace = greedy_decode(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer), TEXT, top_k=5).trace
    queries = trace.labels("cross")[0]
    expected = trace.matrix("cross", 0, 0)[len(queries) // 2].tolist()  # layer 1, head 1, the middle row
    speaker = _context(browser, {"width": 1280, "height": 720})
    view = {"text": TEXT, "kind": "cross", "layer": "1", "head": "1"}
    speaker.goto(f"{shipped_app.url}/attention?{urlencode({**view, 'present': '1'})}")
    speaker.locator(".st-key-attention_poll_open button").first.wait_for(timeout=120_000)
    wait_idle(speaker, 120_000)
    speaker.locator(".st-key-attention_poll_open button").first.click()
    speaker.wait_for_function("() => new URLSearchParams(location.search).get('poll')")
    params = {k: v[-1] for k, v in parse_qs(urlsplit(speaker.url).query).items() if k != "present"}
    phone = _context(browser, PHONE)
    phone.goto(f"{shipped_app.url}/attention?{urlencode(params)}")
    phone.locator(".st-key-studio_poll_option_0 button").first.wait_for(timeout=120_000)
    wait_idle(phone, 120_000)
    phone.locator(".st-key-studio_poll_option_0 button").first.click()
    phone.get_by_text("Your vote: 1 ·").wait_for()
    speaker.locator(".st-key-studio_poll_count", has_text="1 vote").wait_for(timeout=30_000)
    speaker.locator(".st-key-studio_poll_reveal button").first.click()
    speaker.locator(".st-key-studio_poll_result svg.marks").wait_for()
    wait_idle(speaker)
    drawn = speaker.locator(".st-key-studio_poll_result svg.marks").evaluate(
        "(svg) => [...svg.querySelectorAll('text')].map((t) => t.textContent.trim())")
    model = [t for t in drawn if re.fullmatch(r"\d+\.\d%", t)][1::2]
    assert model == [f"{100 * w:.1f}%" for w in expected]
    for page in (speaker, phone):
        assert page_errors(page) == []
    speaker.locator(".st-key-studio_poll_close button").first.click()
    speaker.wait_for_function("() => !new URLSearchParams(location.search).get('poll')")
    for page in (speaker, phone):
        page.context.close()
