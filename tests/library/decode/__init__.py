"""Tests of the library's `decode` stage (`transformer/decode`)."""
