"""Attention Studio's transformer library: model, data, training, decoding, traces, checkpoints, charts."""
import os

# OpenMP threads that spin while waiting starve every other thread on a small, shared CPU (a training job
# beside the app's decoding, or two processes): measured on 2 cores, 1.4 steps/s spinning vs 40 passive.
# Must be set before torch is first imported; an explicit setting in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Tensors of 2 MB and more on transparent huge pages (torch's own switch: 2 MB-aligned, madvise(MADV_HUGEPAGE)).
# A long input's maps are allocated and freed layer by layer, and on 4 KB pages the kernel faulted and zeroed each
# page anew: at GPT-2's heads and 1,024 tokens Compare's patched runs spent more time in the kernel than computing
# (one AppTest: 28.7 s -> 19.7 s, system time 29.6 -> 15.3 s; bench/README.md, "The test suite"). Read by torch
# once, at its import: set before torch is first imported; an explicit setting in the environment wins.
os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")
