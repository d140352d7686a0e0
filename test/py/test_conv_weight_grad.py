"""A conv's weight gradient on tessera's kernel (``targets/x86/conv/weight_grad.py``), the op the
backward graph calls for it (``compiler/conv_weight_grad.py``) and the decomposition that traces
it (``compiler/conv_backward.py``): each against ATen's ``convolution_backward`` in float64."""

from __future__ import annotations

import pytest
import torch
from conftest import needs_avx2
from conv_backward_checks import assert_backward_matches_aten
from program_capture import programs_run

from tessera.compiler.conv_weight_grad import takes
from tessera.compiler.targets.x86.conv.errors import InvalidConvSpec
from tessera.compiler.targets.x86.conv.isa import CONV_ISAS, can_run_conv
from tessera.compiler.targets.x86.conv.spec import ConvSpec
from tessera.compiler.targets.x86.conv.weight_grad import (
    SUMS_BYTES,
    WgradSpec,
    choose_tiling,
    conv_weight_grad,
    load_wgrad,
)

aten = torch.ops.aten

CASES = [  # batch, C_in, C_out, size, kernel, stride, padding, dilation
    (2, 5, 7, (9, 11), (3, 3), 1, 1, 1),
    (1, 64, 64, (8, 8), (3, 3), 1, 1, 1),
    (2, 13, 33, (10, 7), (3, 3), 2, 1, 1),  # output channels past one block, a partial block
    (1, 150, 40, (5, 5), (3, 3), 1, 1, 1),  # input channels in three grid points, the last partial
    (1, 7, 17, (12, 13), (5, 3), (2, 1), (2, 0), (1, 2)),
    (3, 3, 24, (20, 20), (7, 7), 2, 3, 1),  # a stem
    (1, 8, 20, (6, 6), (1, 1), 1, 0, 1),
    (2, 6, 9, (5, 6, 7), (3, 3, 3), 1, 1, 1),
    (1, 4, 5, (3, 4, 4), (3, 1, 1), (1, 2, 1), (2, 0, 0), 1),
    (1, 40, 16, (3, 5, 5), (7, 7, 7), 1, 3, 1),  # 343 taps: a block of input channels per grid point
    (5, 8, 20, (4, 4), (3, 3), 1, 1, 1),  # chunks of 4 whole images, the last of one
    (3, 4, 6, (3, 4, 4), (3, 3, 3), 1, (0, 1, 1), 1),  # 3-D with one output plane: chunks of images too
]


def _aten_weight_grad(dy, x, weight_shape, stride, padding, dilation):
    w = torch.empty(weight_shape, dtype=dy.dtype)
    nsp = len(weight_shape) - 2
    return aten.convolution_backward(dy, x, w, None, stride, padding, dilation, False, [0] * nsp, 1,
                                     [False, True, False])[1]


def _case(case, dtype=torch.float64, seed=0):
    n, ci, co, size, k, s, p, d = case
    torch.manual_seed(seed)
    spec = ConvSpec(n, ci, co, size, k, s, p, d)
    x = torch.randn(n, ci, *size, dtype=dtype)
    dy = torch.randn(n, co, *spec.output_size, dtype=dtype)
    return spec, x, dy


@pytest.mark.parametrize("isa", CONV_ISAS)
@pytest.mark.parametrize("layout,x_layout,dy_layout", [
    ("contiguous", "channels_last", "channels_last"), ("channels_last", "channels_last", "channels_last"),
    ("contiguous", "contiguous", "contiguous"), ("channels_last", "contiguous", "channels_last")])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[1]}to{c[2]}_{'x'.join(map(str, c[3]))}_k{'x'.join(map(str, c[4]))}")
def test_kernel_matches_float64(case, layout, x_layout, dy_layout, isa):
    """Every layout of ``dw``; ``x`` and ``dy`` read channels-last or contiguous (NCHW:
    ``x``'s channels broadcast from planes apart, ``dy``'s packed by scalars)."""
    if not can_run_conv(isa):
        pytest.skip(f"this CPU cannot run the {isa} path")
    conv, x, dy = _case(case)
    spec = WgradSpec(ConvSpec(**{**conv.__dict__, "isa": isa, "input_layout": x_layout, "output_layout": dy_layout}),
                     layout)
    want = _aten_weight_grad(dy, x, spec.weight_shape(), conv.dims("stride"), conv.dims("padding"), conv.dims("dilation"))
    cl = torch.channels_last if x.dim() == 4 else torch.channels_last_3d
    out = torch.empty_strided(spec.weight_shape(), spec.weight_strides())

    def stored(t, how):
        return t.float().contiguous(memory_format=cl if how == "channels_last" else torch.contiguous_format)

    load_wgrad(spec)(stored(dy, dy_layout), stored(x, x_layout), out)
    got = out
    err = (got.double() - want).abs().max() / want.abs().max()
    assert err < 2e-6, err


@needs_avx2
def test_nan_in_dy_reaches_the_taps_it_feeds():
    conv, x, dy = _case(CASES[0], torch.float32)
    dy[0, 3, 4, 5] = float("nan")
    got = conv_weight_grad(dy, x, WgradSpec(ConvSpec(**{**conv.__dict__, "isa": "avx2"})))
    assert got[3].isnan().any() and not got[torch.arange(7) != 3].isnan().any()


def test_tiling_keeps_a_grid_point_near_l1():
    til = choose_tiling(ConvSpec(1, 150, 40, (5, 5), (3, 3), isa="avx2"))
    assert (til.nr, til.nc) == (16, 6)  # 12 accumulators, 2 dy vectors and a broadcast: 15 of 16 registers
    assert til.ci_groups == 3 and til.group_blocks * til.nc <= 64 + til.nc
    assert choose_tiling(ConvSpec(1, 64, 64, (8, 8), (3, 3), isa="avx512")).nc == 14
    small = choose_tiling(ConvSpec(8, 512, 512, (2, 2), (3, 3), padding=1, isa="avx2"))
    assert (small.planes, small.rows) == (8, 16)  # 2x2 images: chunks of 8 whole images, 32 pixels


def test_a_grid_point_keeps_its_stack_bounded():
    taps = ConvSpec(1, 40, 16, (3, 5, 5), (7, 7, 7), padding=3, isa="avx2")
    til = choose_tiling(taps)
    assert til.group_blocks == 1 and 4 * 343 * til.nc * til.nr <= SUMS_BYTES
    with pytest.raises(InvalidConvSpec, match="stack"):
        WgradSpec(ConvSpec(1, 4, 16, (3, 40000), (3, 3), padding=1, isa="avx2"))  # a chunk of dy: 2.5 MB


@needs_avx2
def test_op_leaves_to_aten_what_the_kernel_refuses():
    torch.manual_seed(0)
    x, dy = torch.randn(1, 4, 3, 40000), torch.randn(1, 16, 3, 40000)
    args = ([16, 4, 3, 3], [1, 1], [1, 1], [1, 1])
    got = torch.ops.tessera.conv_weight_grad(dy, x, *args, False)
    want = _aten_weight_grad(dy.double(), x.double(), *args)
    torch.testing.assert_close(got.double(), want, rtol=1e-4, atol=1e-4 * want.abs().max().item())


@pytest.mark.parametrize("bad", [dict(groups=2), dict(bias=True), dict(activation="relu")])
def test_spec_refuses_what_the_kernel_does_not_compute(bad):
    with pytest.raises(InvalidConvSpec):
        WgradSpec(ConvSpec(**{**dict(batch=1, in_channels=4, out_channels=4, input_size=(5, 5), kernel=(3, 3)), **bad}))
    with pytest.raises(InvalidConvSpec, match="weight_layout"):
        WgradSpec(ConvSpec(1, 4, 4, (5, 5), (3, 3)), "nhwc")


@pytest.mark.parametrize("x_format", [torch.contiguous_format, torch.channels_last])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_op_matches_aten_in_its_layout(dtype, channels_last, x_format):
    """float32 on the kernel (where the host has a conv path), float64 on ATen; the
    result in the layout the op was traced with, whatever the operands' layouts
    (an ``x`` of other strides copied)."""
    conv, x, dy = _case(CASES[2], dtype)
    x = x.contiguous(memory_format=x_format)
    dy = dy.contiguous(memory_format=torch.channels_last if x_format == torch.contiguous_format else torch.contiguous_format)
    if x_format == torch.contiguous_format and channels_last:
        x = x.transpose(2, 3).contiguous().transpose(2, 3)  # neither layout
    args = ([33, 13, 3, 3], [2, 2], [1, 1], [1, 1])
    got = torch.ops.tessera.conv_weight_grad(dy, x, *args, channels_last)
    want = _aten_weight_grad(dy.double(), x.double(), *args)
    assert got.dtype == dtype and got.is_contiguous(memory_format=torch.channels_last) == channels_last
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5 * want.abs().max().item())


@pytest.mark.parametrize("mask", [[True, True, True], [False, True, True], [True, True, False], [False, True, False]])
@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last])
def test_decomposition_matches_aten_and_its_layouts(mask, memory_format):
    """float32: the weight gradient on the kernel, the bias's a sum, the input's ATen's (or,
    for a 64-channel 3x3 conv, Winograd's conv); strides as ATen gives them."""
    torch.manual_seed(0)
    for shape, w_shape, stride in [((2, 64, 23, 21), (72, 64, 3, 3), 1), ((2, 5, 11, 9), (6, 5, 3, 3), 2)]:
        x = torch.randn(shape).contiguous(memory_format=memory_format)
        w = torch.randn(w_shape)
        dy = torch.randn(shape[0], w_shape[0], *[(s + 2 - 3) // stride + 1 for s in shape[2:]])
        dy = dy.contiguous(memory_format=memory_format)
        args = ([w_shape[0]], [stride] * 2, [1, 1], [1, 1], False, [0, 0], 1, mask)
        assert takes(x, w, False, 1, mask)
        assert_backward_matches_aten(dy, x, w, args)


@pytest.mark.parametrize("change", [
    dict(weight=(64, 64, 1, 1)),  # one tap: a GEMM, oneDNN's
    dict(groups=2, weight=(64, 32, 3, 3)),
    dict(transposed=True),
    dict(mask=[True, False, True]),  # no weight gradient asked
    dict(dtype=torch.float64),
    dict(dtype=torch.bfloat16),
])
def test_takes_dense_float32_windows(change):
    base = dict(shape=(1, 64, 24, 24), weight=(64, 64, 3, 3), groups=1, transposed=False, mask=[True, True, True],
                dtype=torch.float32)

    def ask(c):
        x, w = torch.empty(c["shape"], dtype=c["dtype"]), torch.empty(c["weight"], dtype=c["dtype"])
        return takes(x, w, c["transposed"], c["groups"], c["mask"])
    assert ask(base) == can_run_conv("avx2")
    assert not ask({**base, **change})


class _Net(torch.nn.Module):
    """A 3x3 conv, a strided one without bias, a 1x1 (left to oneDNN) and a 3-D one."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 32, 3, padding=1)
        self.c2 = torch.nn.Conv2d(32, 64, 3, stride=2, padding=1, bias=False)
        self.c3 = torch.nn.Conv2d(64, 64, 1)
        self.c4 = torch.nn.Conv3d(2, 8, 3, padding=1)

    def forward(self, x):
        y = self.c3(torch.relu(self.c2(torch.relu(self.c1(x)))))
        z = self.c4(y[:, :4].reshape(y.shape[0], 2, 2, *y.shape[2:]))
        return y.square().mean() + z.square().mean()


@needs_avx2
def test_training_step_computes_weight_gradients_on_the_kernel():
    from tessera.compiler.report import collect_reports

    torch.manual_seed(0)
    model = _Net()
    x = torch.randn(2, 3, 16, 16)
    model(x).backward()
    want = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    compiled = torch.compile(model, backend="tessera")
    with collect_reports() as reports:
        programs_run(lambda t: compiled(t).backward(), x)
    for (name, p), e in zip(model.named_parameters(), want, strict=True):
        torch.testing.assert_close(p.grad, e, rtol=1e-4, atol=1e-5 * e.abs().max().item(), msg=name)
    backward = reports[-1]
    assert backward.library["tessera.conv_weight_grad.default"] == 3  # c1, c2, c4; c3 is 1x1
    assert not any(k.startswith("tessera.") for k in backward.aten_ops)


class _Pair(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = torch.nn.Conv2d(16, 24, 3, stride=2, padding=1)

    def forward(self, x):
        return self.c2(torch.relu(self.c1(x))).square().mean()


@needs_avx2
def test_dynamic_training_loads_a_kernel_per_size():
    """``dynamic=True``: one backward graph for three sizes, the weight gradients on the kernel at each."""
    from tessera.compiler.report import collect_reports

    torch.manual_seed(0)
    model = _Pair()
    compiled = torch.compile(model, backend="tessera", dynamic=True)
    with collect_reports() as reports:
        for shape in [(2, 3, 12, 13), (3, 3, 9, 14), (4, 3, 15, 10)]:
            x = torch.randn(shape)
            model(x).backward()
            want = [p.grad.clone() for p in model.parameters()]
            model.zero_grad(set_to_none=True)
            compiled(x).backward()
            for p, e in zip(model.parameters(), want, strict=True):
                torch.testing.assert_close(p.grad, e, rtol=1e-4, atol=1e-5 * e.abs().max().item())
            model.zero_grad(set_to_none=True)
    backward = [r for r in reports if r.library.get("tessera.conv_weight_grad.default")]
    assert len(backward) == 1 and backward[0].library["tessera.conv_weight_grad.default"] == 2


@needs_avx2
def test_long_reductions_sum_chunk_by_chunk():
    """131072 pixels a weight: each chunk's sums start from zero and are added to the running
    ones (a sequential sum, like oneDNN's, was 1.5e-5 from float64 here; two levels 1.3e-6)."""
    torch.manual_seed(0)
    x, dy = torch.randn(8, 16, 128, 128, dtype=torch.float64), torch.randn(8, 16, 128, 128, dtype=torch.float64) + 0.5
    spec = WgradSpec(ConvSpec(8, 16, 16, (128, 128), (3, 3), padding=1, isa="avx2"))
    want = _aten_weight_grad(dy, x, spec.weight_shape(), (1, 1), (1, 1), (1, 1))
    got = conv_weight_grad(dy.float(), x.float(), spec)
    assert (got.double() - want).abs().max() / want.abs().max() < 3e-6
