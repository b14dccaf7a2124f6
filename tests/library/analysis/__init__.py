"""Tests of the library's `analysis` stage (`transformer/analysis`)."""
