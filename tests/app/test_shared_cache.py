"""The decodes every session shares: kept once, read-only, dropped least recently used past a bound in bytes."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.app_session import assert_no_exception, open_app
from transformer.decode import greedy_decode
from ui.server import settings
from ui.server.shared_cache import SharedCache, SharedValueChanged, fingerprint, nbytes, shared, shared_cache
from ui.views.kit import inference

MB = 2**20


def test_the_cache_drops_the_least_recently_used_past_its_bytes():
    cache = SharedCache(limit=3 * MB)
    block = {name: torch.zeros(MB // 4) for name in "abcd"}  # 1 MB each (float32)
    for name in "abc":
        cache.get(name, lambda n=name: block[n])
    assert cache.nbytes == 3 * MB and len(cache) == 3
    assert cache.get("a", lambda: pytest.fail("a is kept")) is block["a"]  # a read: a is the most recent now
    cache.get("d", lambda: block["d"])
    assert "b" not in cache and {"a", "c", "d"} == {k for k in "abcd" if k in cache} and cache.nbytes == 3 * MB
    huge = torch.zeros(MB)  # 4 MB: returned, never kept, nothing dropped for it
    assert cache.get("huge", lambda: huge) is huge and "huge" not in cache and len(cache) == 3


def test_a_value_that_grows_after_it_is_kept_counts_its_new_bytes():
    cache, grows = SharedCache(limit=3 * MB), {"maps": {}}
    cache.get("g", lambda: grows)
    cache.get("x", lambda: torch.zeros(MB // 4))
    grows["maps"]["self"] = torch.zeros(MB // 2)  # a trace's maps materialised from its store when first read
    cache.get("g", lambda: None)
    assert cache.nbytes == 3 * MB
    grows["maps"]["cross"] = torch.zeros(MB // 4)
    cache.get("g", lambda: None)
    assert "x" not in cache and cache.nbytes == 3 * MB


def test_nbytes_counts_every_map_of_a_decode_once(tiny_checkpoint_dir):
    from transformer.adapters import adapter_for
    from transformer.store import load_checkpoint
    ckpt = load_checkpoint(tiny_checkpoint_dir / "reverse", load_optimizer=False)
    result = greedy_decode(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer), "abcde")
    maps = sum(t.untyped_storage().nbytes() for t in {id(m): m for m in result.trace.maps.values()}.values())
    assert maps <= nbytes(result) <= maps + 1024 * (len(result.steps) + 1)
    assert nbytes((result, result)) == nbytes(result)
    assert nbytes((result, adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer))) == nbytes(result)


def test_a_value_changed_after_it_was_kept_is_caught():
    cache = SharedCache(limit=MB, check=True)
    value = {"w": torch.ones(4)}
    cache.get("v", lambda: value)
    value["w"].mul_(2)  # what a view must never do to a shared decode
    with pytest.raises(SharedValueChanged):
        cache.get("v", lambda: value)


def test_the_bound_is_a_setting(monkeypatch):
    monkeypatch.setenv(settings.SHARED_CACHE_ENV, "64")
    assert settings.shared_cache_bytes() == 64 * MB
    monkeypatch.setenv(settings.SHARED_CACHE_ENV, "lots")
    assert settings.shared_cache_bytes() == settings.SHARED_CACHE_MB * MB


def test_the_decorator_keys_by_the_arguments_without_underscored_ones():
    calls = []

    @shared
    def twice(x: int, _ignored: object, k: int = 1) -> list[int]:
        calls.append(x)
        return [x * 2 * k]

    assert twice(3, object()) is twice(3, object()) and twice(3, None, k=2) == [12] and calls == [3, 3]


def test_two_sessions_read_one_decode_and_a_view_change_leaves_it_as_it_was(studio_env, monkeypatch):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECK_SHARED", "1")  # every hit checks the tensors it holds
    shared_cache.clear()
    a, b = open_app("decode"), open_app("decode")
    for at in (a, b):
        at.text_input(key="decode_text").input("sharedview").run()
        assert_no_exception(at)
    cache = shared_cache()
    assert cache.check and len(cache) >= 1
    decode = next(v for k, (v, _, _) in cache._items.items() if k[0] == f"{inference.__name__}._greedy")
    before = fingerprint(decode)
    a.multiselect(key="decode_ablate").set_value(["cross:L1H1"]).run()  # A changes its view
    a.button(key="decode_next").click().run()
    assert_no_exception(a)
    b.run()
    assert_no_exception(b)
    assert fingerprint(decode) == before  # B's decode (the one both read) is as it was
    shared_cache.clear()


def test_a_data_frame_counts_its_columns():
    import pandas as pd
    frame = pd.DataFrame({"a": torch.zeros(MB // 8).numpy(), "b": torch.zeros(MB // 8).numpy()})  # 0.5 MB each
    assert nbytes(frame) == MB and nbytes((frame, {"again": frame})) == MB  # each frame once


# What the app keeps in Streamlit's own resource cache: the shared table itself, the models (shared objects with
# their own locks, never a per-call output), and the training fork server's one start. Every per-call output a model
# gives (decodes, captures, parts, comparisons, masks, scores) goes through `shared`, inside the byte bound.
RESOURCES = {("ui/server/shared_cache.py", "shared_cache"), ("ui/models/catalog.py", "load_shared_checkpoint"),
             ("ui/models/hf.py", "_load_shared_hf"), ("ui/train/controls.py", "warm_up_training")}


def test_one_caching_policy_for_model_outputs():
    import ast

    from tests.helpers import ROOT
    cached = set()
    for path in [*(ROOT / "ui").rglob("*.py"), *(ROOT / "pages").glob("*.py"), ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for decorator in node.decorator_list:
                    call = decorator.func if isinstance(decorator, ast.Call) else decorator
                    if isinstance(call, ast.Attribute) and call.attr in ("cache_resource", "cache_data"):
                        cached.add((str(path.relative_to(ROOT)), node.name))
    assert cached == RESOURCES
