"""AppTest: the shipped recall model (checkpoints/recall) on the head page and the Learn page: the card beside them
names its recall head and the previous-token head it reads, and the recall head's page opens with its composition
partners."""
from __future__ import annotations

import pytest

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, open_link

RECALL = ROOT / "checkpoints" / "recall"
pytestmark = pytest.mark.skipif(not (RECALL / "config.json").exists(), reason="checkpoints/recall not shipped")


def _card(at) -> str:
    return "\n".join(m.value for m in at.sidebar.markdown)


@pytest.mark.parametrize("page, params", [("head", {"kind": "self", "layer": "2", "head": "1"}), ("learn", {})])
def test_the_card_names_the_recall_head_on_the_head_and_learn_pages(monkeypatch, studio_env, page, params):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    at = open_link(page, {"model": "shipped:recall", **params})
    assert_no_exception(at)
    assert "`self:L2H1` retrieval" in _card(at) and "`self:L1H1` previous-token" in _card(at)
    if page == "head":  # the recall head reads the previous-token head (its composition partners, from the weights)
        assert "**Earlier heads it reads**" in [m.value for m in at.markdown]
