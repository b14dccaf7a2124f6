"""On the shipped default model, "A soldier holds a rifle." tokenises with a piece `if` (▁r · if · le): Home's Try it
map, the Attention map and Decode's maps draw it as an axis label, with no error in the browser's console."""
from __future__ import annotations

from urllib.parse import urlencode

from studio_browser import new_page, page_errors, wait_charts

SENTENCE = "A soldier holds a rifle."
PIECES = r"\| ▁r \| if \| le \|"  # the map's axis labels, one after another
# a failed resource is judged by its response below: another host's (the tests run offline) or Streamlit's probe
# of a page path for its server (/attention/_stcore/health, then /_stcore/health) is no error of the page
LOAD_FAILED = "Failed to load resource"
PROBES = ("/_stcore/health", "/_stcore/host-config")


def test_a_token_if_draws_on_home_attention_and_decode(shipped_app, browser):
    app, logged = shipped_app, len(shipped_app.log_text())  # the server's log before this test
    for path, maps in (("", 1), ("attention", 1), ("decode", 1)):
        page = new_page(browser)
        console: list[str] = []
        page.on("console", lambda m, seen=console: seen.append(m.text)
                if m.type == "error" and not m.text.startswith(LOAD_FAILED) else None)
        page.on("response", lambda r, seen=console: seen.append(f"{r.status} {r.url}")
                if r.status >= 400 and r.url.startswith(app.url) and not r.url.endswith(PROBES) else None)
        page.on("pageerror", lambda e, seen=console: seen.append(str(e)))
        page.goto(f"{app.url}/{path}?{urlencode({'text': SENTENCE})}")
        view = wait_charts(page, PIECES, maps, timeout_ms=120_000)
        assert view.charts_matching(PIECES) >= maps, path
        assert page_errors(page) == [], path
        assert console == [], f"/{path}: {console}"
        page.close()
    assert "Traceback" not in app.log_text()[logged:]
