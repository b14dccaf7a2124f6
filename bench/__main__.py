"""`make bench` (`python -m bench`): every benchmark that finishes in a few minutes, one after another, each in its own
process (so one's threads and caches do not colour the next). Figures go into bench/README.md.

`python -m bench --list` names them and the long ones; run a long one by itself with `python -m bench.NAME`.
"""
import subprocess
import sys
import time

QUICK = ("throughput", "decode_speed", "reverse_budget", "hf_decode_speed", "ablation_speed", "export_speed",
         "animation_speed", "sweep_speed", "decoder_only_speed", "grid_render", "app_start", "app_links",
         "patching_speed")
LONG = ("app_speed", "app_load", "app_training", "app_real_size", "distributed_speed", "multi30k", "multi30k_recipe",
        "repetition", "run_frames", "screenshots", "screenshots_links", "screenshots_real_size",
        "screenshots_patching")


def main(argv: list[str]) -> int:
    from pathlib import Path
    here = Path(__file__).parent
    quick = [name for name in QUICK if (here / f"{name}.py").exists()]
    if "--list" in argv:
        print("quick (make bench):", " ".join(quick))
        print("long (python -m bench.NAME):", " ".join(LONG))
        return 0
    failed = []
    for name in quick:
        print(f"\n== bench.{name}", flush=True)
        began = time.perf_counter()
        code = subprocess.call([sys.executable, "-m", f"bench.{name}"])
        print(f"== bench.{name}: exit {code} after {time.perf_counter() - began:.0f} s", flush=True)
        if code:
            failed.append(name)
    if failed:
        print("failed:", " ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
