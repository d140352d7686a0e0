"""tessera's channels-last fp32 conv kernels (compiler/targets/x86/conv) against eager
``F.conv2d``/``F.conv3d`` (+ residual, activation) on random inputs, for both
vector paths (AVX-512 zmm and AVX2 ymm) where this CPU runs them; odd spatial
sizes, 1x1 / 3x3 / 3x3x3 / 5x5 windows, stride 2, dilation 2, groups,
depthwise, channel counts off the vector width, batch > 1, every epilogue."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tessera.compiler.targets.x86.conv import (
    CONV_ISAS,
    ConvIsaUnavailable,
    ConvOperandMismatch,
    ConvSpec,
    InvalidConvSpec,
    UnknownConvIsa,
    can_run_conv,
    conv_assembly,
    conv_channels_last,
    load_conv,
    pack_weight,
    select_conv_isa,
    spec_for,
)
from tessera.compiler.targets.x86.conv.api import pack_weight_kernel, weight_packer
from tessera.compiler.targets.x86.conv.isa import isa_of_features
from tessera.compiler.targets.x86.conv.tiling import aliased_pixels, choose_tiling
from tessera.compiler.errors import TesseraError

from conftest import record_launches

GEN = torch.Generator().manual_seed(0)
ACTS = {"relu": F.relu, "relu6": F.relu6, "silu": F.silu, "gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}


def runnable(isa: str) -> str:
    if not can_run_conv(isa):
        pytest.skip(f"this CPU cannot run the {isa} conv path (checked as assembly only)")
    return isa


def channels_last(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous(memory_format=torch.channels_last if t.dim() == 4 else torch.channels_last_3d)


def reference(x, w, b, res, act, **kw):
    y = (F.conv2d if x.dim() == 4 else F.conv3d)(x, w, b, **kw)
    if res is not None:
        y = y + res
    return ACTS[act](y) if act else y


def check(isa, n, cin, cout, size, kernel, *, bias=True, residual=False, act=None, input_layout="channels_last",
          output_layout="channels_last", **kw):
    x = torch.randn(n, cin, *size, generator=GEN)
    x = channels_last(x) if input_layout == "channels_last" else x
    w = torch.randn(cout, cin // kw.get("groups", 1), *kernel, generator=GEN)
    b = torch.randn(cout, generator=GEN) if bias else None
    want = reference(x, w, b, None, None, **kw)
    res = torch.randn(want.shape, generator=GEN) if residual else None
    res = channels_last(res) if residual and output_layout == "channels_last" else res
    want = reference(x, w, b, res, act, **kw)
    got = conv_channels_last(x, w, b, res, act, isa=isa, input_layout=input_layout, output_layout=output_layout, **kw)
    assert got.shape == want.shape
    assert (got.is_contiguous() if output_layout == "contiguous" else
            got.is_contiguous(memory_format=torch.channels_last if x.dim() == 4 else torch.channels_last_3d))
    scale = want.abs().max().item()
    torch.testing.assert_close(got, want, rtol=0, atol=1e-4 * scale)
    return got


SHAPES = [
    # (n, cin, cout, spatial, kernel, kwargs)
    (1, 16, 32, (9, 11), (3, 3), dict(padding=1)),                       # odd spatial, one tile per row
    (2, 5, 37, (13, 17), (3, 3), dict(padding=1, stride=2)),             # batch 2, stride 2, C off the width
    (1, 8, 20, (15, 14), (3, 3), dict(padding=2, dilation=2)),           # dilation 2
    (1, 33, 65, (7, 29), (1, 1), {}),                                    # 1x1, wide row (dynamic tiles)
    (1, 130, 50, (6, 35), (3, 3), dict(padding=1)),                      # input-channel blocks, partial last block
    (1, 12, 18, (9, 10), (3, 3), dict(padding=1, groups=3)),             # groups
    (1, 104, 104, (9, 10), (3, 3), dict(padding=1, stride=2, groups=13)),  # 8 per group (RegNetY), 13 groups
    (2, 40, 40, (11, 13), (3, 3), dict(padding=1, groups=40)),           # depthwise, 40 = 2.5 vectors
    (1, 40, 40, (9, 11), (3, 3), dict(padding=1, groups=10)),            # 4 per group: channelwise, 2.5 zmm
    (2, 24, 24, (7, 9), (3, 3), dict(padding=2, dilation=2, groups=12)),  # 2 per group, dilated
    (1, 48, 48, (3, 7, 9), (3, 3, 3), dict(padding=1, groups=6)),        # 3-D, 8 per group (zmm: channelwise)
    (1, 24, 24, (7, 9), (5, 5), dict(padding=2, stride=2, groups=24)),   # depthwise 5x5 stride 2
    (1, 8, 16, (6, 5), (3, 3), dict(padding=(0, 2))),                    # asymmetric padding, all tiles static
    (1, 24, 40, (5, 12, 12), (3, 3, 3), {}),                             # 3x3x3, unpadded (a pre-padded input)
    (2, 7, 9, (5, 7, 6), (3, 3, 3), dict(padding=1)),                    # 3-D padding, tiny channels
    (1, 16, 16, (4, 9, 11), (3, 3, 3), dict(padding=1, groups=16)),      # 3-D depthwise
    (1, 6, 12, (5, 9, 8), (3, 1, 1), dict(padding=(1, 0, 0), stride=(1, 2, 2))),  # temporal kernel, strided
    (1, 3, 24, (9, 90), (7, 7), dict(padding=3, stride=2)),              # a 7x7 stem: taps rolled, static and dynamic tiles
    (1, 512, 40, (3, 30), (1, 1), dict(stride=2)),                       # pixels read 4 KB apart: narrower tiles
]


@pytest.mark.parametrize("isa", CONV_ISAS)
@pytest.mark.parametrize("n,cin,cout,size,kernel,kw", SHAPES, ids=lambda v: str(v).replace(" ", ""))
def test_matches_eager(isa, n, cin, cout, size, kernel, kw):
    check(runnable(isa), n, cin, cout, size, kernel, **kw)


DENSE = [s for s in SHAPES if s[5].get("groups", 1) != s[1]]


@pytest.mark.parametrize("isa", CONV_ISAS)
@pytest.mark.parametrize("n,cin,cout,size,kernel,kw", DENSE, ids=lambda v: str(v).replace(" ", ""))
def test_contiguous_input_layout_matches_eager(isa, n, cin, cout, size, kernel, kw):
    """The kernel reading NCHW/NCDHW input (a relayout folded into the conv), output channels-last."""
    check(runnable(isa), n, cin, cout, size, kernel, input_layout="contiguous", residual=True, act="relu", **kw)


@pytest.mark.parametrize("isa", CONV_ISAS)
@pytest.mark.parametrize("n,cin,cout,size,kernel,kw", DENSE, ids=lambda v: str(v).replace(" ", ""))
def test_contiguous_output_layout_matches_eager(isa, n, cin, cout, size, kernel, kw):
    """The kernel writing NCHW/NCDHW output and reading an NCHW residual (a relayout after the conv folded in)."""
    check(runnable(isa), n, cin, cout, size, kernel, output_layout="contiguous", residual=True, act="silu", **kw)


@pytest.mark.parametrize("isa", CONV_ISAS)
@pytest.mark.parametrize("act", [None, *ACTS])
def test_contiguous_output_takes_every_activation(isa, act):
    """Channel rows transposed in registers: 20 output channels (a partial vector), tiles of
    pixels past one vector's lanes and a last partial one, each activation on the rows."""
    check(runnable(isa), 2, 8, 20, (5, 37), (3, 3), output_layout="contiguous", act=act, padding=1)


def test_depthwise_reads_channels_last_only():
    with pytest.raises(InvalidConvSpec, match="depthwise"):
        ConvSpec(1, 8, 8, (5, 5), (3, 3), groups=8, input_layout="contiguous")
    with pytest.raises(InvalidConvSpec, match="depthwise"):
        ConvSpec(1, 8, 8, (5, 5), (3, 3), groups=8, output_layout="contiguous")


@pytest.mark.parametrize("act", [None, *ACTS])
def test_epilogues(act):
    isa = runnable(CONV_ISAS[0]) if can_run_conv(CONV_ISAS[0]) else runnable("avx2")
    check(isa, 1, 20, 24, (5, 19), (3, 3), residual=True, act=act, padding=1)
    check(isa, 1, 9, 9, (4, 6, 7), (3, 3, 3), bias=False, residual=act == "silu", act=act, padding=1, groups=9)


@pytest.mark.parametrize("act", [None, "relu6", "silu"])
def test_narrow_groups_run_channelwise_with_every_epilogue(act):
    """Groups of 4 channels, two or four to a vector: the rotated-weight tile, bias, residual
    and activation, a last block of fewer channels."""
    isa = select_conv_isa()
    assert choose_tiling(ConvSpec(1, 40, 40, (9, 11), (3, 3), padding=1, groups=10, isa=isa)).group_width == 4
    check(isa, 1, 40, 40, (9, 11), (3, 3), residual=True, act=act, padding=1, stride=2, groups=10)


def test_activation_edges_follow_torch():
    """Large |x| (exp overflow / saturation) and NaN go through the epilogue like torch."""
    isa = "avx512" if can_run_conv("avx512") else runnable("avx2")
    x = channels_last(torch.randn(1, 4, 5, 5, generator=GEN))
    w = torch.randn(16, 4, 1, 1, generator=GEN)
    b = torch.tensor([100.0, -100.0, 30.0, -30.0] * 3 + [float("nan"), 0.0, 5.0, -5.0])
    for act in ACTS:
        got = conv_channels_last(x, w, b, activation=act, isa=isa)
        want = ACTS[act](F.conv2d(x, w, b))
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-4, equal_nan=True)


@pytest.mark.parametrize("isa", ["avx512", "avx2"])
def test_silu_epilogue_is_within_2_ulp_of_float64_over_the_floats(isa):
    """The SiLU epilogue (``expand_math.silu``) on values from 1e-40 to 3e38 of either
    sign, -100..100 densely, and the edges (+-0, +-inf, NaN, the clamp's ends): within
    2 ulp of a float64 reference where torch's float32 silu is a normal float (below
    -88.7 its ``exp(-x)`` overflows to inf and the quotient to -0, as ours does), and
    NaN and inf where torch's gives them. A 1-channel 1x1 conv of weight 1 is the
    identity, so the epilogue sees each value alone."""
    runnable(isa)
    mag = torch.logspace(-40, 38.5, 1 << 17, dtype=torch.float64)
    edges = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 88.0, -88.0, 89.0, -89.0, 88.7, -88.7, 1e-45]
    x = torch.cat([mag, -mag, torch.linspace(-100, 100, 1 << 17, dtype=torch.float64), torch.tensor(edges)]).float()
    got = conv_channels_last(x.reshape(1, 1, 1, -1), torch.ones(1, 1, 1, 1), activation="silu", isa=isa).reshape(-1)
    want32, want = F.silu(x), F.silu(x.double())
    assert torch.equal(got.isnan(), want32.isnan()) and torch.equal(got.isinf(), want32.isinf())
    normal = want32.isfinite() & (want32.abs() >= torch.finfo(torch.float32).tiny)
    ulps = (got.double() - want).abs()[normal] / (want.abs()[normal] * torch.finfo(torch.float32).eps)
    assert ulps.max() <= 2.0, ulps.max()
    tiny = want.isfinite() & ~normal
    assert (got.double() - want)[tiny].abs().max() < 1e-36


def test_packed_weight_is_reused_and_checked():
    isa = "avx512" if can_run_conv("avx512") else runnable("avx2")
    x = channels_last(torch.randn(1, 32, 10, 10, generator=GEN))
    w = torch.randn(48, 32, 3, 3, generator=GEN)
    spec = spec_for(x, w.shape, padding=1, isa=isa)
    pw = pack_weight(w, spec)
    torch.testing.assert_close(conv_channels_last(x, pw, padding=1), F.conv2d(x, w, padding=1), rtol=0, atol=1e-3)
    with pytest.raises(ConvOperandMismatch, match="packed for"):
        conv_channels_last(x[:, :16].contiguous(memory_format=torch.channels_last), pw, padding=1)
    with pytest.raises(ConvOperandMismatch, match="groups"):
        conv_channels_last(x, pw, padding=1, groups=2)


def test_contiguous_input_is_accepted():
    isa = "avx512" if can_run_conv("avx512") else runnable("avx2")
    x = torch.randn(1, 8, 7, 7, generator=GEN)  # NCHW strides: copied to channels-last first
    w = torch.randn(8, 8, 3, 3, generator=GEN)
    got = conv_channels_last(x, w, padding=1, isa=isa)
    torch.testing.assert_close(got, F.conv2d(x, w, padding=1), rtol=0, atol=1e-4)


def test_tiling_choices():
    t = choose_tiling(ConvSpec(1, 96, 96, (5, 26, 26), (3, 3, 3)))
    assert (t.nv, t.mr, t.nr) == (2, 12, 32) and all(not x.static for x in t.row_tiles)
    assert t.mr * t.nv + t.nv <= 32
    t = choose_tiling(ConvSpec(1, 128, 128, (64, 64), (3, 3), padding=1))
    assert [x.static for x in t.row_tiles] == [True, False, False, False, True]  # edge tiles only
    assert t.ci_blocks > 1  # 3x3x128x32 floats exceed the L1 budget
    t = choose_tiling(ConvSpec(1, 40, 40, (8, 8), (3, 3), groups=40, isa="avx2"))
    assert t.channelwise and t.group_width == 1 and t.nr == 8 and t.blocks == 5
    # narrow groups: channelwise where two or more fill a vector, with k accumulators a pixel
    t = choose_tiling(ConvSpec(1, 104, 104, (28, 28), (3, 3), padding=1, groups=13))
    assert t.channelwise and t.group_width == 8 and t.mr * (8 + 1) <= 32 and t.blocks == 7
    assert not choose_tiling(ConvSpec(1, 104, 104, (28, 28), (3, 3), groups=13, isa="avx2")).channelwise  # 8 = lanes
    assert not choose_tiling(ConvSpec(1, 104, 104, (28, 28), (3, 3), groups=13, output_layout="contiguous")).channelwise
    assert not choose_tiling(ConvSpec(1, 24, 48, (28, 28), (3, 3), groups=6)).channelwise  # 4 in, 8 out a group


def test_tiles_keep_their_input_pixels_apart_in_l1():
    # 1024 channels: every pixel's line falls in one L1 set; 768: four sets; 512 at stride 2 alike
    wide = choose_tiling(ConvSpec(1, 1024, 512, (14, 14), (1, 1)))
    assert wide.nv == 2 and wide.mr == 7 and aliased_pixels(ConvSpec(1, 1024, 512, (14, 14), (1, 1)), 14) == 14
    assert choose_tiling(ConvSpec(1, 768, 768, (14, 14), (1, 1))).mr == 14
    assert choose_tiling(ConvSpec(1, 512, 1024, (28, 28), (1, 1), stride=2)).mr == 7
    assert choose_tiling(ConvSpec(1, 512, 1024, (28, 28), (1, 1))).mr == 14  # 2 KB apart: two sets
    assert choose_tiling(ConvSpec(1, 1024, 1024, (14, 14), (3, 3), padding=1, input_layout="contiguous")).mr == 14


def test_assembly_paths():
    spec = ConvSpec(1, 20, 40, (9, 13), (3, 3), padding=1)
    zmm = conv_assembly(spec, "+avx512f")
    assert "vfmadd231ps" in zmm and "%zmm" in zmm
    ymm = conv_assembly(ConvSpec(1, 20, 40, (9, 13), (3, 3), padding=1, isa="avx2"), "+avx2,+fma")
    assert "%ymm" in ymm and "%zmm" not in ymm and "vfmadd" in ymm
    assert isa_of_features("+avx2,+fma") == "avx2" and isa_of_features("+avx512f,+avx512vl") == "avx512"


@pytest.mark.parametrize("isa,features", [("avx512", "+avx512f,+avx512vl,+avx512dq,+avx512bw,+avx2,+fma"),
                                          ("avx2", "+avx2,+fma")])
@pytest.mark.parametrize("layout", ["channels_last", "contiguous"])
def test_a_stems_taps_are_loops_without_spilled_broadcasts(isa, features, layout):
    """A conv of few input channels loops over its ``kw`` taps (``microkernel._rolled_taps``):
    unrolled, LLVM kept each stride-2 broadcast live from tap ``kw`` to ``kw + 2`` and spilled
    them (ResNet's 7x7 stem: 992 spills on AVX-512, 83 GFLOP/s; rolled: 16, 169 GFLOP/s)."""
    for cin, cout, k, stride, pad in [(3, 64, 7, 2, 3), (3, 32, 3, 2, 1), (3, 64, 3, 1, 1), (4, 512, 3, 1, 1)]:
        spec = ConvSpec(1, cin, cout, (224, 224), (k, k), stride, pad, bias=True, isa=isa, input_layout=layout)
        asm = conv_assembly(spec, features)
        assert asm.count("Spill") < 32, (cin, cout, k, stride)


def test_a_weight_over_l2_is_prefetched_a_block_ahead():
    """A dense conv whose packed weight is read from memory on every call prefetches the next
    input-channel block's weights as its tiles compute (``prefetcht1``); one that stays in L2 does not."""
    big = conv_assembly(ConvSpec(1, 2048, 512, (1, 49), (1, 1)), "+avx512f,+avx512vl,+avx512dq,+avx512bw,+avx2,+fma")
    small = conv_assembly(ConvSpec(1, 64, 64, (8, 8), (3, 3), padding=1), "+avx512f,+avx512vl,+avx512dq,+avx512bw,+avx2,+fma")
    assert "prefetcht1" in big and "prefetch" not in small


def test_invalid_specs_raise_typed_errors():
    with pytest.raises(InvalidConvSpec, match="groups"):
        ConvSpec(1, 10, 8, (5, 5), (3, 3), groups=3)
    with pytest.raises(InvalidConvSpec, match="larger than the padded input"):
        ConvSpec(1, 4, 4, (2, 2), (3, 3))
    with pytest.raises(InvalidConvSpec, match="stride"):
        ConvSpec(1, 4, 4, (5, 5), (3, 3), stride=0)
    with pytest.raises(InvalidConvSpec, match="activation"):
        ConvSpec(1, 4, 4, (5, 5), (3, 3), activation="tanh")
    with pytest.raises(InvalidConvSpec, match="float32"):
        ConvSpec(1, 4, 4, (5, 5), (3, 3), dtype="bfloat16")
    with pytest.raises(UnknownConvIsa):
        ConvSpec(1, 4, 4, (5, 5), (3, 3), isa="neon")
    with pytest.raises(ConvIsaUnavailable):
        conv_assembly(ConvSpec(1, 4, 4, (5, 5), (3, 3)), "+avx2,+fma")  # avx512 spec, avx2 features
    x = channels_last(torch.randn(1, 4, 5, 5))
    with pytest.raises(ConvOperandMismatch, match="weight"):
        conv_channels_last(x, torch.randn(4, 3, 3, 3))
    with pytest.raises(ConvOperandMismatch, match="bias"):
        conv_channels_last(x, torch.randn(4, 4, 3, 3), bias=torch.randn(5))
    with pytest.raises(ConvOperandMismatch, match="residual"):
        conv_channels_last(x, torch.randn(4, 4, 3, 3), residual=torch.randn(1, 4, 5, 5))
    with pytest.raises(ConvOperandMismatch, match="4-D or 5-D"):
        conv_channels_last(torch.randn(4, 5, 5), torch.randn(4, 4, 3))
    assert issubclass(ConvOperandMismatch, TesseraError)


def test_kernel_runs_split_across_threads():
    """The grid split into several chunks (as on every core) gives the same result."""
    isa = "avx512" if can_run_conv("avx512") else runnable("avx2")
    spec = ConvSpec(1, 16, 48, (9, 10), (3, 3), padding=1, isa=isa)
    x = channels_last(torch.randn(spec.input_shape(), generator=GEN))
    w = torch.randn(48, 16, 3, 3, generator=GEN)
    kern = load_conv(spec)
    want = F.conv2d(x, w, padding=1)
    for chunks in (1, 2, 7):
        out = torch.empty(spec.output_shape()).contiguous(memory_format=torch.channels_last)
        kern.launch(x, pack_weight(w, spec).data, out, chunks=chunks)
        torch.testing.assert_close(out, want, rtol=0, atol=1e-3)


def test_cost_model_rules():
    from tessera.compiler.targets.x86.conv_kernel_model import prefers_tessera, rule_for
    from tessera.passes.target_models import ConvShape

    def shape(**kw):
        base = dict(spatial=2, dtype="f32", in_channels=128, out_channels=128, groups=1, kernel=(3, 3), stride=(1, 1))
        return ConvShape(**{**base, **kw})

    assert rule_for("x86", shape(dtype="bf16")).what == "not f32" and not prefers_tessera("x86", shape(dtype="bf16"))
    assert rule_for("x86", shape(groups=128)).what == "depthwise 2-D"
    assert rule_for("x86", shape(in_channels=3)).what == "C_in < 16, one group"
    assert rule_for("x86", shape(in_channels=96, groups=32)).what == "C_in/groups < 16"
    assert rule_for("x86", shape(in_channels=104, groups=13)).what == "grouped, 8-15 channels per group"
    assert prefers_tessera("x86", shape(in_channels=128, groups=32))  # 4 per group in and out: channelwise
    assert not prefers_tessera("x86", shape(in_channels=96, groups=32))  # 3 per group: oneDNN
    assert prefers_tessera("x86", shape(in_channels=3, stride=(2, 2)))  # MobileNet's stem
    resnet_stem = shape(in_channels=3, out_channels=64, kernel=(7, 7), stride=(2, 2))
    assert prefers_tessera("x86", resnet_stem) and prefers_tessera("x86", resnet_stem, "contiguous")  # reads the image
    assert rule_for("x86", shape(kernel=(1, 1))).what == "1x1 conv2d"
    assert prefers_tessera("x86", shape(in_channels=512, out_channels=512, points=49))  # ResNet's stage 4
    assert not prefers_tessera("x86", shape(points=56 * 56))
    assert rule_for("x86", shape(spatial=3, kernel=(1, 1, 1))).what == "1x1x1 conv3d"
    assert not prefers_tessera("ptx", shape())  # only x86 has the kernel
    # a squeeze-excite expansion: one output point, few input channels (oneDNN's call is all overhead)
    se = shape(in_channels=8, kernel=(1, 1), points=1)
    assert rule_for("x86", se).what.startswith("one output point") and prefers_tessera("x86", se)
    assert prefers_tessera("x86", se, "contiguous", "contiguous")
    assert prefers_tessera("x86", shape(in_channels=8, kernel=(1, 1), points=4))  # few channels: the kernel's too
    assert not prefers_tessera("x86", shape(in_channels=128, kernel=(1, 1)), "contiguous")  # the relayout stays
    assert not prefers_tessera("x86", shape(groups=128, points=1), "contiguous")  # depthwise reads channels-last only


def test_cost_model_decides_by_the_measured_gain(monkeypatch):
    """tessera's kernel exactly where the class's speedup over oneDNN reaches MIN_GAIN."""
    import tessera.compiler.targets.x86.conv_kernel_model as model
    from tessera.compiler.targets.x86.conv_kernel_model import MIN_GAIN, prefers_tessera
    from tessera.passes.target_models import ConvShape, Rule

    conv = ConvShape(2, "f32", 64, 64, 1, (3, 3), (1, 1))
    for speedup, expected in ((MIN_GAIN - 0.01, False), (MIN_GAIN, True), (1.5, True)):
        monkeypatch.setitem(model.RULES, "x86", (Rule("t", lambda c: True, speedup),))
        assert prefers_tessera("x86", conv) is expected, speedup


def _force_tessera_convs(monkeypatch, contiguous_input: bool = True) -> None:
    """Every x86 conv on tessera's direct kernel (reading and writing NCHW too, unless
    not ``contiguous_input``); none by Winograd (``test_winograd.py``)."""
    import tessera.compiler.targets.x86.conv_choice as host

    if host.host_isa() is None:
        pytest.skip("this CPU runs no conv kernel path")
    monkeypatch.setattr(host, "prefers_winograd", lambda conv, tiles, isa: None)
    monkeypatch.setattr(host, "prefers_tessera", lambda target, conv, *layouts: (
        target == "x86" and (contiguous_input or all(v == "channels_last" for v in layouts))))


def test_host_program_runs_tessera_conv_where_the_model_prefers_it(monkeypatch, pack_count, prepare_count):
    """With the cost model preferring tessera (forced here), a compiled model's
    channels-last f32 convs are launches of tessera's kernel, the SiLU in the
    kernel's epilogue, weights packed once (in the one step that prepares
    weights), and the result equals eager's on every call (the second one
    takes the trusted launch path)."""
    _force_tessera_convs(monkeypatch)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(16, 24, 3, padding=1), torch.nn.SiLU(),
                                torch.nn.Conv2d(24, 24, 1)).eval()
    x = torch.randn(2, 16, 9, 11)
    with torch.no_grad():
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="tessera", options={"freezing": True})
        names = record_launches(monkeypatch)
        for _ in range(3):
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    torch._dynamo.reset()
    convs = [n for n in names if n.startswith("conv2d_")]
    assert len(convs) == 6  # both convs, three calls
    assert ["_silu" in n for n in convs[:2]] == [True, False]  # the SiLU is the first conv's epilogue
    assert pack_count["n"] == 2  # each weight packed once over three calls
    assert prepare_count["n"] == 1  # by one step, which checks the parameters on each call


def test_weights_packed_with_the_prepared_ones_follow_an_in_place_update(monkeypatch, pack_count, prepare_count):
    """Under freezing tessera's conv weights are packed in the step that prepares
    weights: an in-place update of one parameter (a new version) runs that step
    again, every weight is packed again, and the result is eager's."""
    _force_tessera_convs(monkeypatch)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(16, 24, 3, padding=1), torch.nn.BatchNorm2d(24), torch.nn.ReLU(),
                                torch.nn.Conv2d(24, 24, 1)).eval()
    x = torch.randn(1, 16, 9, 11)
    with torch.no_grad():
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="tessera", options={"freezing": True})
        for _ in range(2):
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        assert (pack_count["n"], prepare_count["n"]) == (2, 1)
        model[3].weight.mul_(-0.5)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        model[1].running_var.mul_(4.0)  # the BatchNorm folded into the first conv's weight
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    torch._dynamo.reset()
    assert (pack_count["n"], prepare_count["n"]) == (6, 3)


def test_resnet_shortcut_is_the_kernels_residual_epilogue(monkeypatch):
    """With tessera's kernel chosen and the BatchNorms folded (freezing),
    ``fuse-conv-residuals`` hands it the block's shortcut: relu(conv2 + x) is one kernel launch, equal to eager. (The first conv
    reads a relayout of x, which the shortcut then reuses; reading x itself, it
    would leave no NHWC x, and the add stays in the kernel that reads x in NCHW.)"""
    _force_tessera_convs(monkeypatch, contiguous_input=False)
    from conftest import load_example_module

    block = load_example_module("resnet_block").make_block(16)
    x = torch.randn(2, 16, 9, 11)
    with torch.no_grad():
        torch._dynamo.reset()
        compiled = torch.compile(block, backend="tessera", options={"freezing": True})  # BatchNorm folded
        names = record_launches(monkeypatch)
        got = compiled(x)
        torch.testing.assert_close(got, block(x), rtol=1e-4, atol=1e-4)
    torch._dynamo.reset()
    assert ["_res_" in n for n in names if n.startswith("conv2d_")] == [False, True]


def test_a_1x1_conv_runs_on_its_pixels_as_rows_and_pickles(monkeypatch):
    """A 1x1 conv at 7x7 with a residual and a ReLU: its kernel computes the 49 pixels as
    one row (``conv/rows.py``) on the tensors of the 7x7 conv, equal to eager;
    the kernel checks them as 7x7 tensors, and pickled it loads the same way."""
    import pickle

    from tessera.compiler.targets.x86.conv.api import load_conv, load_conv_as
    from tessera.compiler.targets.x86.conv.rows import rows_spec
    from tessera.runtime.errors import SignatureMismatch

    isa = select_conv_isa()
    spec = ConvSpec(2, 96, 40, (7, 7), (1, 1), bias=True, residual=True, activation="relu", isa=isa)
    assert rows_spec(spec).input_size == (1, 49)
    kernel = load_conv_as(spec, rows_spec(spec))
    kernel = pickle.loads(pickle.dumps(kernel))
    assert "1x49" in kernel.name
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 96, 7, 7, generator=g).contiguous(memory_format=torch.channels_last)
    w, b = torch.randn(40, 96, 1, 1, generator=g) / 10, torch.randn(40, generator=g)
    r = torch.randn(2, 40, 7, 7, generator=g).contiguous(memory_format=torch.channels_last)
    out = torch.full((2, 40, 7, 7), float("nan")).contiguous(memory_format=torch.channels_last)
    kernel(x, weight_packer(spec)(w), b, r, out)
    torch.testing.assert_close(out, torch.relu(F.conv2d(x, w, b) + r), rtol=1e-5, atol=1e-5)
    with pytest.raises(SignatureMismatch):
        kernel(x.reshape(2, 96, 1, 49), weight_packer(spec)(w), b, r, out)
    row = load_conv(rows_spec(spec))  # a conv of 1 x 49 pixels itself (a linear of 49 rows) keeps its own shapes
    row(x.reshape(2, 96, 1, 49), weight_packer(spec)(w), b, r.reshape(2, 40, 1, 49), out.reshape(2, 40, 1, 49))
    assert load_conv_as(spec, rows_spec(spec)) is not kernel and row.signature.args[0].shape == (2, 96, 1, 49)
    model = torch.nn.Sequential(torch.nn.Conv2d(96, 40, 1), torch.nn.ReLU()).eval()
    x = x.contiguous()
    with torch.no_grad():
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="tessera", options={"freezing": True})
        names = record_launches(monkeypatch)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    torch._dynamo.reset()
    assert [n for n in names if n.startswith("conv2d_")] == [f"conv2d_{isa}_n2_96to40_1x49_k1x1_bias_relu"]


def test_a_1x1_conv_of_dynamic_sizes_runs_each_size_as_rows(monkeypatch):
    """``dynamic=True``: the kernel of each size computes its pixels as rows, equal to eager."""
    model = torch.nn.Sequential(torch.nn.Conv2d(96, 40, 1), torch.nn.ReLU()).eval()
    isa = select_conv_isa()
    with torch.no_grad():
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="tessera", dynamic=True, options={"freezing": True})
        names = record_launches(monkeypatch)
        for size in (7, 9, 7):
            x = torch.randn(1, 96, size, size)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    torch._dynamo.reset()
    assert [n for n in names if n.startswith("conv2d_")] == [
        f"conv2d_{isa}_n1_96to40_1x{n}_k1x1_bias_relu" for n in (49, 81, 49)]


@pytest.mark.parametrize("isa", ["avx512", "avx2"])
@pytest.mark.parametrize("cin, cout, kernel, groups", [
    (256, 1024, (1, 1), 1), (48, 40, (3, 3), 1), (3, 20, (3, 3), 1), (30, 50, (5, 5), 5),
    (32, 32, (3, 3), 32), (24, 24, (3, 3, 3), 1), (16, 16, (3, 3, 3), 16), (20, 36, (1, 3), 4),
    (40, 40, (3, 3), 10), (104, 104, (3, 3), 13), (24, 24, (3, 3, 3), 12),  # channelwise groups: rotated weights
])
def test_the_packing_kernel_writes_pack_weights_bytes(isa, cin, cout, kernel, groups):
    """The kernel that packs a weight on every call (``pack_kernel``) writes exactly the
    reference packing, zero channels past the weight's included."""
    runnable(isa)
    spec = ConvSpec(1, cin, cout, (8,) * len(kernel), kernel, groups=groups, isa=isa)
    w = torch.randn(cout, cin // groups, *kernel, generator=GEN)
    assert torch.equal(pack_weight_kernel(w, spec).data, pack_weight(w, spec).data)


def test_the_per_call_packer_checks_the_weight_before_its_trusted_launch():
    """``weight_packer`` (every call without freezing) launches its kernel unchecked,
    so it checks the weight itself: a parameter of another shape is a typed error,
    not a write past the packed buffer; a half weight is packed as f32."""
    spec = ConvSpec(1, 16, 24, (8, 8), (3, 3), isa=select_conv_isa())
    pack = weight_packer(spec)
    w = torch.randn(24, 16, 3, 3, generator=GEN)
    assert torch.equal(pack(w), pack_weight(w, spec).data)
    assert torch.equal(pack(w.bfloat16()), pack_weight(w.bfloat16().float(), spec).data)
    with pytest.raises(ConvOperandMismatch, match=r"shape \(24, 16, 3, 3\)"):
        pack(torch.randn(24, 16, 5, 5))


PLAIN_WEIGHT_SHAPES = [
    # (n, cin, cout, spatial, kernel, kwargs): dense convs whose kernel packs its weight block by block
    (1, 33, 65, (1, 29), (1, 1), dict(bias=True)),                                  # a linear's rows, last block partial
    (1, 130, 50, (6, 35), (3, 3), dict(padding=1, residual=True, act="silu")),     # input-channel blocks
    (2, 5, 37, (13, 17), (3, 3), dict(padding=1, stride=2)),                        # batch 2, stride 2
    (1, 12, 18, (9, 10), (3, 3), dict(padding=1, groups=3)),                         # groups
    (1, 24, 40, (5, 12, 12), (3, 3, 3), dict(padding=1)),                            # 3-D
    (1, 16, 32, (9, 11), (3, 3), dict(padding=1, input_layout="contiguous", output_layout="contiguous")),
]


@pytest.mark.parametrize("isa", CONV_ISAS)
@pytest.mark.parametrize("n,cin,cout,size,kernel,kw", PLAIN_WEIGHT_SHAPES, ids=lambda v: str(v).replace(" ", ""))
def test_a_kernel_that_packs_its_weight_matches_eager(isa, n, cin, cout, size, kernel, kw):
    """``ConvSpec.packs_weight``: the kernel reads the plain weight and packs each channel
    block on its stack as the grid reaches it; the result is eager's, whether the grid runs
    as one chunk or split over threads (each chunk packs the blocks it reaches)."""
    import dataclasses

    runnable(isa)
    kw = dict(kw)
    act, residual, bias = kw.pop("act", None), kw.pop("residual", False), kw.pop("bias", False)
    layouts = {k: kw.pop(k, "channels_last") for k in ("input_layout", "output_layout")}
    x = torch.randn(n, cin, *size, generator=GEN)
    x = channels_last(x) if layouts["input_layout"] == "channels_last" else x
    w = torch.randn(cout, cin // kw.get("groups", 1), *kernel, generator=GEN)
    b = torch.randn(cout, generator=GEN) if bias else None
    spec = dataclasses.replace(spec_for(x, w.shape, bias=bias, residual=residual, activation=act, isa=isa,
                                        **layouts, **kw), packs_weight=True)
    assert spec.kernel_name.endswith("_wplain") and not choose_tiling(spec).rows_outer
    want = reference(x, w, b, None, None, **kw)
    res = torch.randn(want.shape, generator=GEN) if residual else None
    res = channels_last(res) if residual and layouts["output_layout"] == "channels_last" else res
    want = reference(x, w, b, res, act, **kw)
    kern = load_conv(spec)
    for chunks in (1, 3):
        out = torch.full(spec.output_shape(), float("nan")).as_strided(spec.output_shape(), spec.output_strides())
        kern.launch(x, w, *([b] if bias else []), *([res] if residual else []), out, chunks=chunks)
        torch.testing.assert_close(out, want, rtol=0, atol=1e-4 * want.abs().max().item())


@pytest.mark.parametrize("isa", CONV_ISAS)
@pytest.mark.parametrize("cin, cout, kernel, groups", [(40, 65, (1, 1), 1), (24, 40, (3, 3), 1), (12, 18, (3, 3), 3)])
def test_a_kernel_reads_a_weight_stored_output_channels_innermost(isa, cin, cout, kernel, groups):
    """``weight_layout="dhwio"``: the plain weight stored ``[kh, kw, C_in/groups, C_out]`` (a
    linear's ``[K, N]`` as a 1x1 conv's), each block copied out of it, the last one partial."""
    import dataclasses

    runnable(isa)
    x = channels_last(torch.randn(2, cin, 7, 9, generator=GEN))
    w = torch.randn(cout, cin // groups, *kernel, generator=GEN)
    dhwio = w.permute(2, 3, 1, 0).contiguous().permute(3, 2, 0, 1)  # same values, output channels innermost
    spec = dataclasses.replace(spec_for(x, w.shape, padding=kernel[0] // 2, groups=groups, isa=isa),
                               packs_weight=True, weight_layout="dhwio")
    assert spec.kernel_name.endswith("_wdhwio") and spec.weight_strides() == dhwio.stride()
    want = F.conv2d(x, w, padding=kernel[0] // 2, groups=groups)
    out = torch.full(spec.output_shape(), float("nan")).contiguous(memory_format=torch.channels_last)
    load_conv(spec).launch(x, dhwio, out, chunks=2)
    torch.testing.assert_close(out, want, rtol=0, atol=1e-4 * want.abs().max().item())
    with pytest.raises(InvalidConvSpec, match="weight_layout"):
        dataclasses.replace(spec, packs_weight=False)


def test_only_a_dense_kernel_packs_its_weight():
    with pytest.raises(InvalidConvSpec, match="depthwise"):
        ConvSpec(1, 16, 16, (8, 8), (3, 3), groups=16, packs_weight=True, isa="avx2")


def test_without_freezing_a_large_weight_is_packed_inside_the_conv_and_every_write_is_seen(monkeypatch):
    """Without freezing a conv whose packed weight outgrows L2 (``host.packs_in_kernel``) is
    one launch of the kernel that packs its weight (no packing step before it): the result
    is eager's on every call, after an in-place update and after a write through ``.data``
    (which no version counter records), and with the weight stored channels-last."""
    from tessera.compiler.targets.x86.conv.tiling import packs_in_kernel
    from tessera.compiler.targets.x86.conv_choice import host_isa

    isa = host_isa()
    if isa is None:
        pytest.skip("this CPU runs no conv kernel path")
    _force_tessera_convs(monkeypatch)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(256, 320, 3, padding=1), torch.nn.ReLU()).eval()
    x = torch.randn(1, 256, 14, 14)  # an output of more than 1/16 of the weight's elements: not weight-bound
    assert packs_in_kernel(ConvSpec(1, 256, 320, (14, 14), (3, 3), padding=1, isa=isa))
    assert not packs_in_kernel(ConvSpec(1, 64, 64, (14, 14), (3, 3), padding=1, isa=isa))  # packed weight in L2
    with torch.no_grad():
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="tessera")
        names = record_launches(monkeypatch)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        model[0].weight.mul_(-0.5)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        model[0].weight.data.mul_(3.0)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        model.to(memory_format=torch.channels_last)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    torch._dynamo.reset()
    convs = [n for n in names if n.startswith("conv")]
    assert len(convs) == 4 and all(n.startswith(f"conv2d_{isa}_n1_256to320_14x14_k3x3") and n.endswith("_wplain")
                                   for n in convs)


def test_without_freezing_a_large_weight_of_dynamic_sizes_is_packed_inside_each_sizes_conv(monkeypatch):
    """``dynamic=True`` without freezing: the conv of each size is the kernel that packs its
    weight (at static sizes the same), equal to eager at every size; no packing step."""
    from tessera.compiler.targets.x86.conv_choice import host_isa

    isa = host_isa()
    if isa is None:
        pytest.skip("this CPU runs no conv kernel path")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(256, 320, 3, padding=1, stride=2), torch.nn.ReLU()).eval()
    with torch.no_grad():
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="tessera", dynamic=True)
        names = record_launches(monkeypatch)
        for size in (9, 14, 9):
            x = torch.randn(1, 256, size, size).contiguous(memory_format=torch.channels_last)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    torch._dynamo.reset()
    assert [n for n in names if n.startswith("conv")] == [
        f"conv2d_{isa}_n1_256to320_{s}x{s}_k3x3_s2x2_p1x1_bias_relu_wplain" for s in (9, 14, 9)]
