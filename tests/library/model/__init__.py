"""Tests of the library's `model` stage (`transformer/model`)."""
