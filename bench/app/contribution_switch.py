"""The contribution switch on the Attention page at bart-large's shape: the server's time for
the page's script run (Streamlit's AppTest, in this process) when a head's map shows its weights against the run when
the same head's map switches to contributions, interleaved head by head, after the first capture of the decode's
queries, keys and values (that first switch is reported apart: it is the capture row of the table).

A random BART of bart-large's shape (bench.common.shapes.save_model: 12+12 layers x 16 heads, a byte-level BPE on
Multi30k's English) is opened by link on the 20-word caption (24 tokens). One JSON line:

    nice .venv/bin/python -m bench.app.contribution_switch [--heads 8]

Figures: bench/README.md, "Inside one head".
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

CAPTION = ("Two young children in blue shirts are playing soccer on a green field near the old church while their "
           "parents watch.")


def _run(at) -> float:
    start = time.perf_counter()
    at.run()
    seconds = time.perf_counter() - start
    if at.exception:
        raise RuntimeError([e.value for e in at.exception])
    return seconds


def measure(n_heads: int) -> dict:
    import torch
    from streamlit.testing.v1 import AppTest

    from bench.common.shapes import BART, save_model
    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory() as tmp:
        models = Path(tmp) / "hf"
        save_model(BART, models / BART)
        os.environ["ATTENTION_STUDIO_HF_MODELS"] = str(models)
        os.environ.setdefault("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
        os.environ["ATTENTION_STUDIO_RUNS"] = str(Path(tmp) / "runs")
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=900)
        at.switch_page("pages/attention.py")
        at.query_params = {"model": f"hf:{BART}", "text": CAPTION}
        opened = _run(at)  # the model's load and the decode
        weight_first = _run(at)  # a rerun: the decode and the charts are cached
        at.segmented_control(key="attention_show").set_value("contribution")
        first_switch = _run(at)  # the capture of every layer's q, k, v and the first contribution map
        picks = [(layer, head) for layer in range(11, -1, -1) for head in (3, 11)][:n_heads]
        weights, contributions = [], []
        for layer, head in picks:  # each head's weight map, then the switch to its contributions
            at.segmented_control(key="attention_show").set_value("weight")
            at.selectbox(key="attention_layer").set_value(layer)
            at.selectbox(key="attention_head").set_value(head)
            weights.append(_run(at))
            at.segmented_control(key="attention_show").set_value("contribution")
            contributions.append(_run(at))
        w, c = statistics.median(weights), statistics.median(contributions)
        return {"model": BART, "open_s": round(opened, 2), "rerun_s": round(weight_first, 3),
                "first_switch_s": round(first_switch, 2), "heads": len(picks), "weight_view_s": round(w, 3),
                "contribution_view_s": round(c, 3), "contribution_ratio": round(c / w, 3),
                "weights_s": [round(x, 3) for x in weights], "contributions_s": [round(x, 3) for x in contributions]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heads", type=int, default=8, help="heads picked in turn (each: weight, then contribution)")
    print(json.dumps(measure(parser.parse_args().heads)), flush=True)


if __name__ == "__main__":
    main()
