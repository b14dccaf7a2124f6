"""Tests of the library's `data` stage (`transformer/data`)."""
