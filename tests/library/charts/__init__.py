"""Tests of the library's `charts` stage (`transformer/charts`)."""
