"""benchmarks/roofline.py's FLOP count by shape (MatmulShapes), which benchmarks/peer_trl.py uses too: every matrix
product recorded with hand-worked shapes, in and out of inference mode, an attention's backward included."""

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import roofline  # noqa: E402


def test_linear_layers_and_matmuls_are_recorded_by_shape():
    lin = torch.nn.Linear(3, 4)
    x, a, b = torch.ones(5, 3), torch.ones(2, 6, 3), torch.ones(2, 3, 7)
    with roofline.MatmulShapes() as seen:
        lin(x)  # (5 x 3) @ (3 x 4) as addmm
        torch.matmul(a, b)  # two (6 x 3) @ (3 x 7) as bmm
    assert seen.shapes == {("matmul", 1, 5, 3, 4): 1, ("matmul", 2, 6, 3, 7): 1}
    assert roofline.shape_flops(seen.shapes) == 2 * 5 * 3 * 4 + 2 * 2 * 6 * 3 * 7
    with roofline.MatmulShapes() as whole, torch.inference_mode():
        lin(x)  # arrives as one aten.linear
    assert whole.shapes == {("matmul", 1, 5, 3, 4): 1}


def test_an_attention_counts_two_products_forward_and_five_backward():
    # (B, H, T, hd) = (1, 2, 3, 4) queries over S = 5 keys: each product is 2 * 2 * 3 * 5 * 4 = 240 FLOPs
    q = torch.randn(1, 2, 3, 4, requires_grad=True)
    k, v = torch.randn(1, 2, 5, 4, requires_grad=True), torch.randn(1, 2, 5, 4, requires_grad=True)
    with roofline.MatmulShapes() as fwd:
        out = F.scaled_dot_product_attention(q, k, v)
    assert fwd.shapes == {("attention", 2, 3, 4, 5): 1, ("attention", 2, 3, 5, 4): 1}
    assert roofline.shape_flops(fwd.shapes) == 2 * 240
    with roofline.MatmulShapes() as bwd:
        out.sum().backward()
    assert bwd.shapes == {("attention", 2, 3, 4, 5): 1, ("attention", 2, 3, 5, 4): 4}
    assert roofline.shape_flops(bwd.shapes) == 5 * 240
    assert roofline.shape_flops(bwd.shapes, ("matmul",)) == 0
