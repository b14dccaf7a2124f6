"""Tests of the library's `store` stage (`transformer/store`)."""
