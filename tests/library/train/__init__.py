"""Tests of the library's `train` stage (`transformer/train`)."""
