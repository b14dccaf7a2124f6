"""`python -m transformer decode MODEL TEXT`: the greedy (or teacher-forced, sampled, beam) output of one input, and
on request what the decode holds: the trace JSON, the logit lens, one head's computation, every head's contributions,
the replay page and the step-through as a video. Each of those lives in a `decode_*.py` module beside this one."""
from __future__ import annotations

import argparse
import json
import sys

from ..adapters import InspectableModel
from ..analysis import head_mask
from ..decode import greedy_decode, save_trace_json, teacher_forced
from ..store import open_model
from . import HELP
from .common import (
    Commands,
    UsageError,
    add_model_arguments,
    add_video_view_arguments,
    parse_ablate,
    positive_int,
    printable,
    video_head,
    video_target,
    write_output,
)
from .decode_beam import beam_entry
from .decode_input import add_input_arguments, is_long, long_decode, read_input
from .decode_insides import add_insides_arguments, insides_conflict, insides_entry
from .decode_lens import add_lens_arguments, lens_conflict, lens_entry
from .decode_outputs import (
    add_html_arguments,
    check_html_flags,
    html_conflict,
    weights_line,
    write_decode_video,
    write_replay,
)
from .decode_sampling import add_sampling_arguments, print_samples, sampling_from


def register(commands: Commands) -> None:
    """Add `decode` and its flags."""
    dec = commands.add_parser("decode", help=HELP["decode"],
                              description="Decode one input with a model (greedily, teacher-forced, sampled or "
                              "with a beam) and print the output; optionally write the trace JSON (with the lens, "
                              "one head's computation, every head's contributions, the beam tree), the replay page "
                              "and a video of the steps.")
    dec.add_argument("dir", metavar="DIR", help="checkpoint, Hugging Face model folder or hub id")
    add_input_arguments(dec)
    dec.add_argument("--top-k", type=positive_int, default=5, help="candidates recorded per step")
    dec.add_argument("--max-steps", type=positive_int, help="stop after this many output tokens")
    dec.add_argument("--reference", help="teacher-force this target instead of decoding greedily")
    dec.add_argument("--trace-json", metavar="PATH", help="write the trace JSON (tokens, steps, attention) here")
    add_html_arguments(dec)
    dec.add_argument("--video", metavar="FILE", help="write the step-through as a video, FILE.mp4 (H.264) or FILE.gif: "
                     "1920x1080, a second a step, the map of --video-layer and --video-head beside the top-k")
    add_video_view_arguments(dec, "video-")
    dec.add_argument("--verbose", action="store_true", help="print each step's token, probability and top-k")
    dec.add_argument("--beam", type=positive_int, default=1, metavar="N",
                     help="beam width: print the best beam hypothesis; --trace-json also gets the beam tree (the "
                          "trace itself stays greedy); every family")
    dec.add_argument("--length-penalty", type=float, default=0.6, metavar="X",
                     help="beam search: GNMT alpha (our models; Hugging Face ones use their generation config)")
    add_model_arguments(dec)
    dec.add_argument("--ablate", action="append", metavar="HEADS",
                     help="switch heads off, e.g. cross:L1H2,enc:L2H1 (1-based; repeatable)")
    add_lens_arguments(dec)
    add_sampling_arguments(dec)
    add_insides_arguments(dec)
    dec.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """`decode`: print the greedy (or teacher-forced) output; optionally write the trace JSON, the replay page and
    the step-through as a video."""
    if args.video:  # a bad file name or head fails before the model loads
        video_target(args.video)
        video_head(args.video_head)
    if insides_conflict(args):  # before the model loads
        raise UsageError(insides_conflict(args))
    check_html_flags(args)
    text = args.text = read_input(args)  # a missing file or bytes that are not UTF-8 fail before the model loads
    adapter = open_model(args.dir, prefix=args.prefix, max_params=args.max_params, chat=args.chat)
    long = is_long(adapter, text, args.keep)
    why = html_conflict(args, long, adapter.head_counts().get("self", (0, 0))[0])
    if why:
        raise UsageError(why)
    if long:
        return _long(adapter, text, args)
    mask = head_mask(adapter, parse_ablate(args.ablate, adapter)) if args.ablate else None
    if lens_conflict(args):
        raise UsageError(lens_conflict(args))
    if args.reference is not None:
        result = teacher_forced(adapter, text, args.reference, top_k=args.top_k, head_mask=mask, residuals=args.lens)
    else:
        result = greedy_decode(adapter, text, top_k=args.top_k, max_steps=args.max_steps, head_mask=mask,
                               residuals=args.lens, encoder_layer=args.encoder_layer, sampling=sampling_from(args),
                               keep=args.keep)
    if result.unknown_tokens:
        unknown = " ".join(printable(tok) for tok in result.unknown_tokens)
        print(f"warning: not in the vocabulary (read as <unk>): {unknown}", file=sys.stderr)
    if result.mode in ("greedy", "sampled") and not result.finished:
        print(f"warning: stopped after {len(result.steps)} steps without producing an end token", file=sys.stderr)
    if args.verbose:
        for i, step in enumerate(result.steps, start=1):
            top = "  ".join(f"{tok} {p:.3f}" for tok, p in step.top_k)
            print(f"{i:>3}  {step.token:<12} {step.prob:.3f}   top: {top}", file=sys.stderr)
        print_samples(result)
    lens = lens_entry(adapter, result, args)
    tree, beam = beam_entry(adapter, args)
    try:
        insides = insides_entry(adapter, result, args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.trace_json:
        write_output(args.trace_json, json.dumps({**result.to_dict(), **lens, **insides, **beam}))
    if args.html:
        write_replay(args.html, result, adapter.name, weights_line(args.dir), args, tree)
    if args.video:
        write_decode_video(args.video, result, f"{adapter.name} · {weights_line(args.dir).lower()}",
                           layer=args.video_layer, head=args.video_head)
    if tree is not None:
        print(tree.hypotheses[0].text)
        return 0
    print(result.output_text)
    return 0


def _long(adapter: InspectableModel, text: str, args: argparse.Namespace) -> int:
    """A decoder-only prompt past the store's threshold: decoded with the attention store; the trace JSON keeps the
    store in a side file when its maps would be large, --html writes the long replay page."""
    result = long_decode(adapter, text, args)
    if args.verbose:
        for i, step in enumerate(result.steps, start=1):
            print(f"{i:>3}  {step.token:<12} {step.prob:.3f}", file=sys.stderr)
    if args.trace_json:
        save_trace_json(result, args.trace_json)
    if args.html:
        write_replay(args.html, result, adapter.name, weights_line(args.dir), args)
    print(result.output_text)
    return 0
