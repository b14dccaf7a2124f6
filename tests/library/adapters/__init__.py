"""Tests of the library's `adapters` stage (`transformer/adapters`)."""
