"""The browser tests' shared pieces: every test here is marked `browser` (left out of `make test-fast`) and skips
with a reason when Chromium is missing (under CI=true that skip is a failure: tests/conftest.py); `server` is a fresh
app on the tiny checkpoint for each test (the tests that train), `page` a headless Chromium tab on it; `shipped_app`
is one server per worker (the shipped checkpoints and the tiny one, `shipped:tiny`), shared by the tests that only
read; `browser` is the worker's one Chromium, lent to each test (the contexts it opened are closed after it: a test
opens its pages in fresh contexts, so nothing it did carries over to the next). The driving code itself (servers,
Chromium, waits) is `studio_browser`, which bench/ uses too."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from studio_browser import SharedChromium, chromium_missing, new_page, running_app, waits
from tests.helpers import ARTIFACTS

# The tests time nothing they wait for: the page is looked at every 50 ms, not at every frame (a frame-by-frame look
# keeps a headless Chromium making frames: about 5 % of a core for each waiting page; benches keep it for drawn_at).
waits.POLLING = 50


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here, missing = Path(__file__).parent, chromium_missing()
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.browser)
            if missing is not None:
                item.add_marker(pytest.mark.skip(reason=missing))


@pytest.fixture
def server(tiny_checkpoint_dir, tmp_path):
    """The app served by Streamlit on the tiny checkpoint with an empty runs directory; stopped after the test."""
    with running_app(tiny_checkpoint_dir, tmp_path / "runs") as app:
        yield app


@pytest.fixture
def page(server, browser, request):
    """A headless Chromium page on the app's home page."""
    ARTIFACTS.mkdir(exist_ok=True)
    tab = new_page(browser)
    tab.set_default_timeout(30_000)
    tab.goto(server.url)
    yield tab
    # what the page showed when the test ended (passed or failed)
    tab.screenshot(path=str(ARTIFACTS / f"e2e_last_{request.node.name}.png"))


TINY = "tiny"  # the tiny checkpoint's name in `shipped_app` (its link value: shipped:tiny)
QWEN2_14 = dict(d_model=56, layers=4, heads=14, kv_heads=2, ffn=64, positions=8192)  # Qwen2-0.5B's heads, tiny width


@pytest.fixture(scope="session")
def shipped_app(tiny_checkpoint_dir, tmp_path_factory):
    """One app per worker on the shipped checkpoints (default model Multi30k), the tiny checkpoint beside them
    (`shipped:tiny`: 2 layers, 2 heads, barely trained) and three Hugging Face models: bart-large's heads
    (`hf:bart-large-heads`), Qwen2-0.5B's 14 a layer (`hf:qwen2-14-heads`) and a tiny Qwen2 with an 8,192-token
    context (`hf:qwen2-long`). Every test that only reads shares it, each page in a fresh browser context (its own
    Streamlit session); a test that trains starts its own (`server`)."""
    from studio_browser import shipped_checkpoints
    from tests.helpers.hf_causal_models import SIZE
    from tests.helpers.hf_causal_models import build as build_causal
    from tests.helpers.hf_tiny_models import BART_LARGE_HEADS, build

    checkpoints = tmp_path_factory.mktemp("checkpoints")  # checkpoints/ as it is, and the tiny one
    for entry in shipped_checkpoints().iterdir():
        (checkpoints / entry.name).symlink_to(entry)
    (checkpoints / TINY).symlink_to(tiny_checkpoint_dir / "reverse")
    hf = tmp_path_factory.mktemp("hf")
    build("bart", hf / "bart-large-heads", size=BART_LARGE_HEADS)
    build_causal("qwen2", hf / "qwen2-14-heads", size=QWEN2_14)
    build_causal("qwen2", hf / "qwen2-long", size={**SIZE, "positions": 8192})  # a tiny Qwen2 reading documents
    with running_app(checkpoints, tmp_path_factory.mktemp("runs"), start_timeout=180,
                     extra_env={"ATTENTION_STUDIO_HF_MODELS": str(hf)}) as app:
        yield app


@pytest.fixture(scope="session")
def chromium() -> Iterator[SharedChromium]:
    """One headless Chromium (and one Playwright driver) per worker for every browser test: Playwright's sync API
    cannot start twice in one thread, and a start costs about 0.8 s of CPU."""
    shared = SharedChromium()
    try:
        yield shared
    finally:
        shared.close()


@pytest.fixture
def browser(chromium: SharedChromium) -> Iterator[Any]:
    """The worker's Chromium, lent to one test: each page the test opens is in a fresh context (`new_page`), and every
    context it opened is closed after it."""
    with chromium.lent() as lent:
        yield lent
