"""A stride-1 conv's input gradient on tessera's kernel with the weight read flipped and
transposed as it is packed (``ConvSpec.flipped_weight``), the op the backward graph calls
for it (``compiler/conv_input_grad.py``) and the decomposition that traces it
(``compiler/conv_backward.py``): each against ATen's ``convolution_backward`` in float64."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from conftest import needs_avx2
from conv_backward_checks import assert_backward_matches_aten
from program_capture import programs_run

from tessera.compiler.conv_input_grad import takes
from tessera.compiler.targets.x86.conv.api import load_conv, weight_packer
from tessera.compiler.targets.x86.conv.errors import ConvOperandMismatch, InvalidConvSpec
from tessera.compiler.targets.x86.conv.isa import CONV_ISAS, can_run_conv
from tessera.compiler.targets.x86.conv.packing import pack_weight
from tessera.compiler.targets.x86.conv.spec import ConvSpec

aten = torch.ops.aten

CASES = [  # batch, C_in, C_out, size, kernel, padding, dilation (of the forward conv, stride 1)
    (2, 40, 24, (9, 11), (3, 3), 1, 1),  # dx's 40 channels: a whole block and a partial one
    (1, 64, 64, (8, 8), (3, 3), 1, 1),
    (1, 33, 17, (7, 7), (3, 3), 0, 1),  # dy padded by 2
    (2, 3, 32, (16, 16), (3, 3), 1, 1),  # a decoder's last conv: dx of 3 channels
    (1, 36, 20, (6, 7), (2, 2), 0, 1),  # a polyphase 2x2 window
    (1, 8, 12, (12, 13), (5, 3), (2, 0), (1, 2)),
    (2, 6, 9, (5, 6, 7), (3, 3, 3), 1, 1),
    (1, 16, 16, (3, 8, 8), (3, 1, 1), 0, 1),  # a temporal window
]


def _aten_input_grad(dy, w, x_shape, padding, dilation):
    nsp = len(x_shape) - 2
    x = torch.empty(x_shape, dtype=dy.dtype)
    return aten.convolution_backward(dy, x, w, None, [1] * nsp, padding, dilation, False, [0] * nsp, 1,
                                     [True, False, False])[0]


def _case(case, dtype=torch.float64, seed=0):
    n, ci, co, size, k, p, d = case
    torch.manual_seed(seed)
    fwd = ConvSpec(n, ci, co, size, k, 1, p, d)
    w = torch.randn(co, ci, *k, dtype=dtype)
    dy = torch.randn(n, co, *fwd.output_size, dtype=dtype)
    return fwd, w, dy


def _grad_spec(fwd: ConvSpec, **kw) -> ConvSpec:
    """The conv ``dy -> dx`` of ``fwd``: its channels swapped, ``dy`` padded by ``d*(k-1) - p``."""
    pad = tuple(d * (k - 1) - p for p, d, k in zip(fwd.dims("padding"), fwd.dims("dilation"), fwd.kernel))
    return ConvSpec(fwd.batch, fwd.out_channels, fwd.in_channels, fwd.output_size, fwd.kernel, 1, pad,
                    fwd.dilation, flipped_weight=True, **kw)


def _stored(t: torch.Tensor, layout: str) -> torch.Tensor:
    cl = torch.channels_last if t.dim() == 4 else torch.channels_last_3d
    return t.float().contiguous(memory_format=cl if layout == "channels_last" else torch.contiguous_format)


@pytest.mark.parametrize("isa", CONV_ISAS)
@pytest.mark.parametrize("packs_weight", [False, True])
@pytest.mark.parametrize("layout", ["channels_last", "contiguous"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[1]}to{c[2]}_{'x'.join(map(str, c[3]))}_k{'x'.join(map(str, c[4]))}")
def test_kernel_of_a_flipped_weight_is_the_input_gradient(case, layout, packs_weight, isa):
    """The weight packed by the packing kernel (its bytes ``pack_weight``'s of the flipped,
    transposed weight) or by the conv kernel a block at a time; ``dy`` and ``dx`` in either layout."""
    if not can_run_conv(isa):
        pytest.skip(f"this CPU cannot run the {isa} path")
    fwd, w, dy = _case(case)
    spec = _grad_spec(fwd, isa=isa, input_layout=layout, output_layout=layout, packs_weight=packs_weight)
    want = _aten_input_grad(dy, w, fwd.input_shape(), fwd.dims("padding"), fwd.dims("dilation"))
    if packs_weight:
        weight = w.float()
    else:
        weight = weight_packer(spec)(w.float())
        assert torch.equal(weight, pack_weight(w.float(), spec).data)
    out = torch.empty_strided(spec.output_shape(), spec.output_strides())
    load_conv(spec)(_stored(dy, layout), weight, out)
    assert tuple(out.shape) == fwd.input_shape()
    err = (out.double() - want).abs().max() / want.abs().max()
    assert err < 2e-6, err


def test_spec_flips_only_a_plain_weight():
    base = ConvSpec(1, 8, 8, (5, 5), (3, 3), padding=1, flipped_weight=True)
    assert base.plain_weight_shape() == (8, 8, 3, 3) and base.kernel_name.endswith("_wflip")
    assert dataclasses.replace(base, in_channels=4).plain_weight_shape() == (4, 8, 3, 3)  # [C_in, C_out, k...]
    assert dataclasses.replace(base, out_channels=12, groups=2).plain_weight_shape() == (8, 6, 3, 3)  # per group
    with pytest.raises(InvalidConvSpec, match="flipped"):
        dataclasses.replace(base, packs_weight=True, weight_layout="dhwio")


@pytest.mark.parametrize("packs_weight", [False, True])
def test_a_grouped_flipped_weight_swaps_each_groups_channels(packs_weight):
    """Of ``g`` groups, ``W[g*cout_g + o, i, t] = w[g*cin_g + i, o, K-1-t]`` (the Winograd GEMM of
    an input gradient reads its transformed weight so): the packing kernel's bytes are
    ``pack_weight``'s, and the conv is the grouped conv of that weight."""
    isa = next((i for i in CONV_ISAS if can_run_conv(i)), None)
    if isa is None:
        pytest.skip("no conv path on this CPU")
    g, cin_g, cout_g = 4, 8, 20
    spec = ConvSpec(2, g * cin_g, g * cout_g, (6, 6), (3, 3), padding=1, groups=g, isa=isa, flipped_weight=True,
                    packs_weight=packs_weight)
    torch.manual_seed(0)
    w = torch.randn(g * cin_g, cout_g, 3, 3)
    logical = w.reshape(g, cin_g, cout_g, 3, 3).transpose(1, 2).flip([3, 4]).reshape(g * cout_g, cin_g, 3, 3)
    x = torch.randn(2, g * cin_g, 6, 6).contiguous(memory_format=torch.channels_last)
    if not packs_weight:
        assert torch.equal(weight_packer(spec)(w), pack_weight(w, spec).data)
    out = torch.empty_strided(spec.output_shape(), spec.output_strides())
    load_conv(spec)(x, w if packs_weight else pack_weight(w, spec).data, out)
    want = torch.nn.functional.conv2d(x.double(), logical.double(), padding=1, groups=g)
    assert ((out.double() - want).abs().max() / want.abs().max()).item() < 2e-6


@needs_avx2
@pytest.mark.parametrize("dy_format", [torch.contiguous_format, torch.channels_last])
@pytest.mark.parametrize("channels_last", [False, True])
def test_op_matches_aten_in_its_layout(channels_last, dy_format):
    """The result in the layout the op was traced with, whatever ``dy``'s (one of neither copied)."""
    fwd, w, dy = _case(CASES[0])
    dy32 = dy.float().contiguous(memory_format=dy_format)
    if dy_format == torch.contiguous_format and channels_last:
        dy32 = dy32.transpose(2, 3).contiguous().transpose(2, 3)  # neither layout
    got = torch.ops.tessera.conv_input_grad(dy32, w.float(), [1, 1], [1, 1], channels_last)
    want = _aten_input_grad(dy, w, fwd.input_shape(), [1, 1], [1, 1])
    assert got.is_contiguous(memory_format=torch.channels_last) == channels_last
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5 * want.abs().max().item())


@needs_avx2
@pytest.mark.parametrize("dy_format", [torch.contiguous_format, torch.channels_last])
def test_op_at_a_size_whose_weight_outweighs_dx_is_the_librarys(dy_format):
    """Traced at symbolic sizes the op runs every size; one whose weight outweighs ``dx``
    (as ``takes`` leaves at static sizes) is the library's call, ``dy`` contiguous as the
    backward table says, the result in the traced layout."""
    from tessera.compiler import conv_input_grad

    torch.manual_seed(0)
    w, dy = torch.randn(128, 96, 3, 3), torch.randn(2, 128, 2, 2).contiguous(memory_format=dy_format)
    seen = []
    library = conv_input_grad._aten_input_grad

    def spy(dy, *args):
        seen.append(dy.is_contiguous())
        return library(dy, *args)

    conv_input_grad._aten_input_grad = spy
    try:
        for channels_last in (False, True):
            got = torch.ops.tessera.conv_input_grad(dy, w, [1, 1], [1, 1], channels_last)
            want = aten.convolution_backward.default(dy.double(), torch.empty(2, 96, 2, 2, dtype=torch.float64),
                                                     w.double(), None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                                     [True, False, False])[0]
            assert got.is_contiguous(memory_format=torch.channels_last) == channels_last
            torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5 * want.abs().max().item())
    finally:
        conv_input_grad._aten_input_grad = library
    assert seen == [True, True]


@needs_avx2
@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("channels_last", [False, True])
def test_op_at_a_size_with_winograds_tiles_runs_winograd(padding, channels_last, winograd_launches):
    """A 3x3 conv's input gradient at a size where the per-call rule gives Winograd (traced so
    at symbolic sizes) runs Winograd of the flipped, transposed weight: ATen's gradient
    within Winograd's rounding, in the traced layout."""
    torch.manual_seed(0)
    w = torch.randn(64, 64, 3, 3)
    dy = torch.randn(2, 64, 24 + 2 * padding - 2, 23 + 2 * padding - 2)
    got = torch.ops.tessera.conv_input_grad(dy, w, [padding] * 2, [1, 1], channels_last)
    x = torch.empty(2, 64, 24, 23, dtype=torch.float64)
    want = aten.convolution_backward.default(dy.double(), x, w.double(), None, [1, 1], [padding] * 2, [1, 1],
                                             False, [0, 0], 1, [True, False, False])[0]
    assert len(winograd_launches) == 1
    assert got.is_contiguous(memory_format=torch.channels_last) == channels_last
    torch.testing.assert_close(got.double(), want, rtol=1e-4, atol=1e-4 * want.abs().max().item())


@needs_avx2
def test_op_refuses_dy_of_other_channels():
    fwd, w, dy = _case(CASES[0], torch.float32)
    with pytest.raises(ConvOperandMismatch, match="channels"):
        torch.ops.tessera.conv_input_grad(dy[:, :20], w, [1, 1], [1, 1], False)


def test_op_in_float64_is_atens():
    fwd, w, dy = _case(CASES[2])
    got = torch.ops.tessera.conv_input_grad(dy, w, [0, 0], [1, 1], False)
    torch.testing.assert_close(got, _aten_input_grad(dy, w, fwd.input_shape(), [0, 0], [1, 1]))


@needs_avx2
def test_nan_in_dy_reaches_the_window_it_feeds():
    fwd, w, dy = _case(CASES[0], torch.float32)
    dy[0, 3, 4, 5] = float("nan")
    got = torch.ops.tessera.conv_input_grad(dy, w, [1, 1], [1, 1], False)
    nan = got.isnan()
    assert nan[0, :, 3:6, 4:7].all() and nan.sum() == 40 * 9


@pytest.mark.parametrize("mask", [[True, True, True], [True, False, False], [True, True, False]])
def test_decomposition_matches_aten(mask):
    """float32: the input gradient on the kernel, the weight's too, the bias's a sum."""
    torch.manual_seed(0)
    x, w = torch.randn(2, 32, 12, 10), torch.randn(48, 32, 3, 3)
    dy = torch.randn(2, 48, 12, 10)
    args = ([48], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, mask)
    assert takes(x, w, [1, 1], [1, 1], [1, 1], False, 1, mask) == can_run_conv("avx2")
    assert_backward_matches_aten(dy, x, w, args)


@pytest.mark.parametrize("change", [
    dict(weight=(64, 64, 1, 1)),  # one tap: a GEMM, oneDNN's
    dict(groups=2, weight=(64, 32, 3, 3)),
    dict(transposed=True),
    dict(stride=[2, 2]),
    dict(padding=[3, 3]),  # past the window's reach
    dict(padding=[1]),  # one size for both dims (an OpInfo sample's): ATen's to expand
    dict(mask=[False, True, True]),  # no input gradient asked
    dict(dtype=torch.float64),
    dict(shape=(1, 512, 2, 2), weight=(512, 512, 3, 3)),  # the weight outweighs dx: the library's
])
def test_takes_dense_stride_1_windows_whose_weight_does_not_outweigh_dx(change):
    base = dict(shape=(1, 64, 24, 24), weight=(64, 64, 3, 3), groups=1, transposed=False, mask=[True, True, True],
                dtype=torch.float32, stride=[1, 1], padding=[1, 1])

    def ask(c):
        x, w = torch.empty(c["shape"], dtype=c["dtype"]), torch.empty(c["weight"], dtype=c["dtype"])
        return takes(x, w, c["stride"], c["padding"], [1, 1], c["transposed"], c["groups"], c["mask"])
    assert ask(base) == can_run_conv("avx2")
    assert not ask({**base, **change})


class _Net(torch.nn.Module):
    """Input gradients on the kernel (c2, c4, the 3-D c5), Winograd's conv (c3: 64 channels
    at 32x32) and ATen's (c1's is not asked for; c6 is strided)."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 64, 3, padding=1)
        self.c2 = torch.nn.Conv2d(64, 64, 3, padding=1)
        self.c3 = torch.nn.Conv2d(64, 64, 3, padding=1)
        self.c4 = torch.nn.Conv2d(64, 8, 2, padding=0)
        self.c5 = torch.nn.Conv3d(2, 4, 3, padding=1)
        self.c6 = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1)

    def forward(self, x):
        silu = torch.nn.functional.silu  # smooth: a ReLU after Winograd's conv may flip its mask (BENCHMARKS.md, session 28)
        y = self.c4(silu(self.c3(silu(self.c2(silu(self.c1(x)))))))
        z = self.c5(y.reshape(y.shape[0], 2, 4, *y.shape[2:]))
        return z.square().mean() + self.c6(y).square().mean()


@needs_avx2
@pytest.mark.parametrize("dynamic", [False, True])
def test_training_step_computes_input_gradients_on_the_kernel(dynamic):
    """Static, and ``dynamic=True`` at two sizes (backward graphs of symbolic sizes, a kernel
    loaded per size, Winograd where a size has the tiles for it)."""
    from tessera.compiler.report import collect_reports

    torch.manual_seed(0)
    model = _Net()
    compiled = torch.compile(model, backend="tessera", dynamic=dynamic)
    with collect_reports() as reports:
        for shape in [(2, 3, 32, 32), (3, 3, 20, 24)][:1 + dynamic]:
            x = torch.randn(shape, requires_grad=True)
            model(x).backward()
            want = [x.grad.clone()] + [p.grad.clone() for p in model.parameters()]
            model.zero_grad(set_to_none=True)
            x.grad = None
            programs_run(lambda t: compiled(t).backward(), x)
            got = [x.grad] + [p.grad for p in model.parameters()]
            for g, e in zip(got, want, strict=True):
                torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-5 * e.abs().max().item())
            model.zero_grad(set_to_none=True)
    backward = [r for r in reports if r.kind == "backward"]
    assert backward and all(r.library["tessera.conv_input_grad.default"] == 5 and r.dynamic == dynamic
                            for r in backward)
