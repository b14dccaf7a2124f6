"""Run the library benchmarks: `python -m bench` (figures go into bench/README.md)."""
import json

import torch

from bench import decode_speed, reverse_budget, throughput

torch.set_num_threads(2)
print("training throughput, case-study config:", json.dumps(throughput.run()))
print("decoding 100 tokens with the trace:", json.dumps(decode_speed.run()))
for seed in (0, 1, 2):
    print("reverse in 15 s:", json.dumps(reverse_budget.run(seed)))
