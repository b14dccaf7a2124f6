"""Comparing the weights of two training runs (for the data-parallel tests)."""
from __future__ import annotations

import torch


def assert_same_weights(a: torch.nn.Module, b: torch.nn.Module) -> None:
    """Equal within float tolerance, except the attention key biases: softmax ignores a shift of all scores, so
    their true gradient is zero and Adam turns the rounding noise of two summation orders into lr-sized steps."""
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for name in sa:
        x, y = sa[name], sb[name]
        if name.endswith("in_proj.bias"):
            d = x.numel() // 3
            x, y = torch.cat([x[:d], x[2 * d:]]), torch.cat([y[:d], y[2 * d:]])
        torch.testing.assert_close(x, y, atol=2e-6, rtol=1e-4, msg=name)
