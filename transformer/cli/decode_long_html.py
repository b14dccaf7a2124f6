"""`decode --html PATH` above the store's threshold: the replay page's document mode (`charts.replay_html`, the
app's Download replay): the overview of each head of `--layer`, the region `--region ROWS,KEYS` with its weights
recomputed exactly from the store (by default the last 256 rows by the last 256 keys, as the app's document view
opens), and each decode step's row over every key; within the replay's 20 MB, refused in one line past it."""
from __future__ import annotations

import argparse
import re

from ..analysis import attention_source
from ..charts import REGION_MAX, REGION_SIDE, ReplayTooLargeError, replay_html
from ..decode import STORE_ABOVE, DecodeResult
from .common import UsageError, positive_int, write_output

_RANGE = r"\s*(\d[\d_]*)\s*-\s*(\d[\d_]*)\s*"
Region = tuple[int, int, int, int]  # first row, end row, first key, end key (ends excluded)


def add_long_html_arguments(dec: argparse.ArgumentParser) -> None:
    """--layer and --region: what the long replay page shows."""
    dec.add_argument("--layer", type=positive_int, metavar="N",
                     help=f"--html above {STORE_ABOVE:,} prompt tokens: the layer (from 1, default 1) whose heads the "
                          "long replay page shows")
    dec.add_argument("--region", metavar="ROWS,KEYS",
                     help=f"--html above {STORE_ABOVE:,} prompt tokens: the region whose exact weights the page holds, "
                          "0-based first-last rows and keys as the app's zoom= (e.g. 686-1159,302-720; at most "
                          f"{REGION_MAX:,} a side); default the last {REGION_SIDE} rows by the last {REGION_SIDE} keys")


def check_long_html_flags(args: argparse.Namespace) -> None:
    """Before the model loads: --layer and --region need --html, and the region reads as ROWS,KEYS."""
    given = [flag for flag, value in (("--layer", args.layer), ("--region", args.region)) if value is not None]
    if given and not args.html:
        raise UsageError(f"{', '.join(given)}: only with --html (the long replay page)")
    if args.region is not None:
        parse_region(args.region)


def long_html_conflict(args: argparse.Namespace, long: bool, layers: int) -> str | None:
    """Before the decode: why --layer or --region cannot be used (a short input's replay holds every layer; a layer
    the model has not got), or None."""
    given = [flag for flag, value in (("--layer", args.layer), ("--region", args.region)) if value is not None]
    if given and not long:
        return (f"{', '.join(given)}: only above {STORE_ABOVE:,} prompt tokens (the replay of a shorter input holds "
                "every layer and every weight)")
    if args.layer is not None and args.layer > layers:
        return f"--layer {args.layer}: this model has layers 1-{layers}"
    return None


def parse_region(text: str) -> Region:
    """ROWS,KEYS as 0-based first-last each (`686-1159,302-720`) -> (first row, end row, first key, end key)."""
    found = re.fullmatch(_RANGE + "," + _RANGE, text)
    if found is None:
        raise UsageError(f"--region {text!r}: give ROWS,KEYS as first-last, e.g. 686-1159,302-720")
    r0, r_last, k0, k_last = (int(v.replace("_", "")) for v in found.groups())
    if r_last < r0 or k_last < k0:
        raise UsageError(f"--region {text!r}: each range runs from its first to its last position")
    if max(r_last - r0, k_last - k0) + 1 > REGION_MAX:
        raise UsageError(f"--region {text!r}: at most {REGION_MAX:,} rows and {REGION_MAX:,} keys")
    return r0, r_last + 1, k0, k_last + 1


def write_long_replay(path: str, result: DecodeResult, model_name: str, weights: str, args: argparse.Namespace
                      ) -> None:
    """Write `result`'s long replay page to `path`: UsageError for a layer or region outside the model or input,
    ReplayTooLargeError (naming the limit) past the replay's 20 MB."""
    layer = args.layer or 1
    n_layers = attention_source(result.trace).shape("self")[0]
    if layer > n_layers:
        raise UsageError(f"--layer {layer}: this model has layers 1-{n_layers}")
    region = None if args.region is None else parse_region(args.region)  # None: the last rows by the last keys
    try:
        page = replay_html(result, model_name, weights, layer=layer - 1, region=region)
    except ReplayTooLargeError as exc:
        raise ReplayTooLargeError(str(exc).replace("Zoom to a smaller region.", "Give fewer --max-steps or a "
                                                   "smaller --region.")) from None
    except ValueError as exc:  # a region outside the input
        raise UsageError(f"--region: {exc}") from None
    write_output(path, page)
