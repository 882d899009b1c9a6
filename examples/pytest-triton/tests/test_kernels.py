"""The kernels' tests: each against torch, on shapes with and without a partial last block."""
import pytest
import torch

from kernels import rowsum, scale


@pytest.mark.parametrize("n", [1024, 1000])
def test_scale(n):
    x = torch.randn(n, device="cuda")
    torch.testing.assert_close(scale(x, 2.0), x * 2.0)


@pytest.mark.parametrize("cols", [256, 200])
def test_rowsum(cols):
    x = torch.randn(64, cols, device="cuda")
    got = rowsum(x)
    want = x.sum(dim=1)
    err = (got - want).abs().max().item()
    assert err < 1e-3, f"max abs error {err:.3e} with {cols} columns ({cols % 64} in the last block)"


@pytest.mark.skipif(torch.cuda.get_device_capability() < (10, 0), reason="needs sm_100")
def test_blackwell_only():
    pass
