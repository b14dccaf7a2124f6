"""Attention Studio's transformer library: model, data, training, decoding, traces, checkpoints, charts."""
import os

# OpenMP threads that spin while waiting starve every other thread on a small, shared CPU (a training job
# beside the app's decoding, or two processes): measured on 2 cores, 1.4 steps/s spinning vs 40 passive.
# Must be set before torch is first imported; an explicit setting in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
