"""Winograd F(m x m, 3 x 3) convs (``targets/x86/conv/winograd*.py``): the transform
matrices exact in rational arithmetic, the kernels against a float64 conv at
edge-heavy sizes and every epilogue, and the backend choosing them under freezing."""

from __future__ import annotations

import pickle
from fractions import Fraction

import pytest
import torch
import torch.nn.functional as F
from conftest import needs_avx2
from program_capture import programs_run

from tessera.compiler.targets.x86.conv.errors import InvalidConvSpec
from tessera.compiler.targets.x86.conv.isa import select_conv_isa
from tessera.compiler.targets.x86.conv.spec import ConvSpec
from tessera.compiler.targets.x86.conv.winograd_spec import TRANSFORMS, WinogradSpec
from tessera.compiler.targets.x86.conv.kept import KeptPack
from tessera.compiler.weight_cache import PackedWeight
from tessera.runtime.errors import SignatureMismatch
from tessera.runtime.program import Call


def _mul(a, b):
    return [[sum(x * y for x, y in zip(row, col, strict=True)) for col in zip(*b, strict=True)] for row in a]


def _t(a):
    return [list(col) for col in zip(*a, strict=True)]


@pytest.mark.parametrize("m", sorted(TRANSFORMS))
def test_transforms_compute_the_correlation_exactly(m):
    """A^T [(G g G^T) * (B^T d B)] A == the valid 3x3 correlation of d, in rationals."""
    bt, g, at = TRANSFORMS[m]
    a = m + 2
    d = [[Fraction((3 * i + 7 * j) % 11 - 5) for j in range(a)] for i in range(a)]
    k = [[Fraction((2 * i - 5 * j) % 7 - 3, 2) for j in range(3)] for i in range(3)]
    u = _mul(_mul(g, k), _t(g))
    v = _mul(_mul(bt, d), _t(bt))
    y = _mul(_mul(at, [[u[i][j] * v[i][j] for j in range(a)] for i in range(a)]), _t(at))
    want = [[sum(d[i + r][j + c] * k[r][c] for r in range(3) for c in range(3)) for j in range(m)] for i in range(m)]
    assert y == want


def test_spec_refuses_what_the_kernels_do_not_compute():
    with pytest.raises(InvalidConvSpec, match="stride 1"):
        WinogradSpec(ConvSpec(1, 16, 16, (8, 8), (3, 3), stride=2, padding=1))
    with pytest.raises(InvalidConvSpec):
        WinogradSpec(ConvSpec(1, 16, 16, (8, 8), (3, 3), padding=1, activation="gelu"))
    with pytest.raises(InvalidConvSpec, match="F\\(3, 3\\)"):
        WinogradSpec(ConvSpec(1, 16, 16, (8, 8), (3, 3), padding=1), m=3)
    with pytest.raises(InvalidConvSpec, match="kt x 3 x 3"):  # a 3-D conv's planes must be 3x3
        WinogradSpec(ConvSpec(1, 16, 16, (4, 8, 8), (3, 1, 1)))
    with pytest.raises(InvalidConvSpec, match="stride 1"):  # in time too
        WinogradSpec(ConvSpec(1, 16, 16, (4, 8, 8), (3, 3, 3), stride=(2, 1, 1), padding=1))


def _run(spec: ConvSpec, m: int, seed: int = 0):
    from tessera.compiler.targets.x86.conv.winograd import WinogradConv, WinogradPacker

    g = torch.Generator().manual_seed(seed)
    c = spec
    last = torch.channels_last if c.spatial_dims == 2 else torch.channels_last_3d
    x = torch.randn(c.input_shape(), generator=g).contiguous(memory_format=last)
    w = torch.randn(c.out_channels, c.in_channels, *c.kernel, generator=g) / (3 * c.in_channels ** 0.5)
    b = torch.randn(c.out_channels, generator=g)
    r = torch.randn(c.output_shape(), generator=g).contiguous(memory_format=last)
    conv = WinogradConv(c, m)
    args = [x, WinogradPacker(conv.ws)(w)] + ([b] if c.bias else []) + ([r] if c.residual else [])
    out = torch.full(c.output_shape(), float("nan")).contiguous(memory_format=last)
    conv(*args, out)
    conv_nd = F.conv2d if c.spatial_dims == 2 else F.conv3d
    want = conv_nd(x.double(), w.double(), b.double() if c.bias else None, padding=c.padding)
    if c.residual:
        want = want + r.double()
    if c.activation == "relu":
        want = want.relu()
    elif c.activation == "relu6":
        want = want.clamp(0, 6)
    elif c.activation == "silu":
        want = F.silu(want)
    return conv, args, out, want.float()


@needs_avx2
@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("batch,cin,cout,size,padding,bias,residual,activation", [
    (1, 64, 64, (56, 56), 1, True, False, "relu"),     # ResNet layer 1
    (1, 16, 32, (9, 11), 1, True, True, "relu6"),      # partial tiles on both edges, residual
    (2, 24, 40, (6, 6), 0, False, False, "silu"),      # channels past the vectors, no padding, batch 2
    (1, 7, 5, (5, 13), 1, True, False, "none"),        # fewer channels than a vector
])
def test_winograd_matches_a_float64_conv(m, batch, cin, cout, size, padding, bias, residual, activation):
    spec = ConvSpec(batch, cin, cout, size, (3, 3), padding=padding, bias=bias, residual=residual,
                    activation=activation, isa=select_conv_isa())
    _, _, out, want = _run(spec, m)
    assert not out.isnan().any()
    err = (out - want).abs().max() / want.abs().max().clamp_min(1.0)
    assert err < (2e-6 if m == 2 else 2e-5), err


@needs_avx2
@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("batch,cin,cout,size,kernel,padding,bias,residual,activation", [
    (1, 32, 32, (4, 12, 12), (3, 3, 3), 1, True, True, "relu"),           # r3d_18's block: time padded
    (2, 16, 24, (5, 9, 7), (3, 3, 3), (0, 1, 1), True, False, "silu"),    # a causal VAE's (time pad apart), batch 2
    (1, 20, 8, (3, 6, 10), (2, 3, 3), (1, 0, 1), False, False, "none"),   # 2 time taps, partial tiles, odd channels
    (1, 16, 16, (2, 8, 8), (1, 3, 3), 1, True, False, "relu6"),           # one time tap (r2plus1d's spatial conv)
])
def test_3d_winograd_matches_a_float64_conv(m, batch, cin, cout, size, kernel, padding, bias, residual, activation):
    """A 3-D conv: Winograd on each frame's plane, its time taps the GEMM's (``kt x 1`` grouped conv)."""
    spec = ConvSpec(batch, cin, cout, size, kernel, padding=padding, bias=bias, residual=residual,
                    activation=activation, isa=select_conv_isa())
    conv, _, out, want = _run(spec, m)
    assert conv.ws.gemm.kernel == (kernel[0], 1) and conv.ws.frames == (size[0], out.shape[2])
    assert not out.isnan().any()
    err = (out - want).abs().max() / want.abs().max().clamp_min(1.0)
    assert err < (2e-6 if m == 2 else 2e-5), err


@needs_avx2
@pytest.mark.parametrize("m", [2, 4])
def test_winograd_of_a_flipped_weight_is_the_input_gradient(m):
    """``ConvSpec.flipped_weight``: the transform reads ``w[C_in, C_out, 3, 3]`` flipped and
    transposed (its taps reversed in ``G (x) G``, each point's matrix packed transposed)."""
    from tessera.compiler.targets.x86.conv.winograd import WinogradConv, WinogradPacker

    torch.manual_seed(0)
    spec = ConvSpec(2, 40, 24, (9, 11), (3, 3), padding=1, isa=select_conv_isa(), flipped_weight=True)
    w = torch.randn(40, 24, 3, 3)
    dy = torch.randn(2, 40, 9, 11).contiguous(memory_format=torch.channels_last)
    conv = WinogradConv(spec, m)
    out = torch.empty_strided(spec.output_shape(), spec.output_strides())
    conv(dy, WinogradPacker(conv.ws)(w), out)
    want = F.conv2d(dy.double(), w.double().flip([2, 3]).transpose(0, 1), padding=1)
    err = (out - want).abs().max() / want.abs().max()
    assert err < (2e-6 if m == 2 else 2e-5), err


@needs_avx2
def test_winograd_checks_then_trusts_and_pickles():
    spec = ConvSpec(1, 16, 16, (8, 8), (3, 3), padding=1, bias=True, isa=select_conv_isa())
    conv, args, out, want = _run(spec, 4)
    conv.launch_trusted([*args, out])
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(SignatureMismatch):
        conv(args[0].contiguous(), *args[1:], out)  # NCHW strides: the input transform reads NHWC
    again = pickle.loads(pickle.dumps(conv))
    again(*args, out)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)


@needs_avx2
def test_convs_of_one_thread_share_the_largest_scratch():
    """Two convs of different sizes share V and M (grown to the larger one's), and a
    trusted launch after the other conv ran is still exact, on views of the grown scratch
    that later launches reuse."""
    from tessera.compiler.targets.x86.conv.winograd import _SCRATCH

    isa = select_conv_isa()
    small = ConvSpec(1, 16, 16, (8, 8), (3, 3), padding=1, isa=isa)
    large = ConvSpec(1, 32, 48, (20, 20), (3, 3), padding=1, isa=isa)
    _SCRATCH.flat = [torch.empty(0), torch.empty(0)]  # this thread's, as a fresh thread has them
    conv_s, args_s, out_s, want_s = _run(small, 4)
    _, _, out_l, want_l = _run(large, 4, seed=1)
    ws_l = WinogradSpec(large, 4)
    assert [t.numel() for t in _SCRATCH.flat] == [ws_l.points * ws_l.tiles * n for n in (32, 48)]
    out_s.fill_(float("nan"))
    conv_s.launch_trusted([*args_s, out_s])
    views = conv_s._views_of  # its views, kept between launches, are of the grown scratch (the old block let go)
    assert views[0] is _SCRATCH.flat[0] and views[1] is _SCRATCH.flat[1]
    conv_s.launch_trusted([*args_s, out_s])
    assert conv_s._views_of is views
    for got, want in ((out_s, want_s), (out_l, want_l)):
        assert (got - want).abs().max() / want.abs().max().clamp_min(1.0) < 2e-5


class _Block(torch.nn.Module):
    """A ResNet basic block of 3x3 convs: conv-bn-relu, conv-bn, + x, relu (``dims=3``:
    a video ResNet's, r3d_18's, of 3x3x3 convs)."""

    def __init__(self, c: int, dims: int = 2):
        super().__init__()
        conv, bn = (torch.nn.Conv2d, torch.nn.BatchNorm2d) if dims == 2 else (torch.nn.Conv3d, torch.nn.BatchNorm3d)
        self.c1, self.b1 = conv(c, c, 3, padding=1, bias=False), bn(c)
        self.c2, self.b2 = conv(c, c, 3, padding=1, bias=False), bn(c)

    def forward(self, x):
        return torch.relu(self.b2(self.c2(torch.relu(self.b1(self.c1(x))))) + x)


def _winograd_launches(compiled, x) -> int:
    from tessera.compiler.targets.x86.conv.winograd import WinogradConv
    from tessera.runtime.program import Launch

    return sum(isinstance(s, Launch) and isinstance(s.kernel, WinogradConv)
               for p in programs_run(compiled, x) for s in p.steps)


@needs_avx2
@pytest.mark.parametrize("freezing", [True, False])
def test_backend_runs_3x3_convs_by_winograd_under_freezing(freezing):
    torch.manual_seed(0)
    model = _Block(128).eval()
    for bn in (model.b1, model.b2):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    x = torch.randn(1, 128, 20, 20)
    with torch.no_grad():
        compiled = torch.compile(model, backend="tessera", options={"freezing": freezing})
        want = model(x)
        torch.testing.assert_close(compiled(x), want, rtol=1e-4, atol=1e-4 * want.abs().max().item())
        launches = _winograd_launches(compiled, x)
    assert launches == (2 if freezing else 0)  # 25 tiles each; weights transformed once only under freezing


@needs_avx2
@pytest.mark.parametrize("freezing", [True, False])
def test_backend_runs_3x3x3_convs_by_winograd(freezing):
    """A video ResNet block: 16 tiles a frame over 4 frames pay for the weight's transform
    on every call too (64 tiles, ``prefers_winograd_per_call``)."""
    torch.manual_seed(0)
    model = _Block(64, dims=3).eval()
    for bn in (model.b1, model.b2):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    x = torch.randn(1, 64, 4, 16, 16)
    with torch.no_grad():
        compiled = torch.compile(model, backend="tessera", options={"freezing": freezing})
        want = model(x)
        torch.testing.assert_close(compiled(x), want, rtol=1e-4, atol=1e-4 * want.abs().max().item())
        assert _winograd_launches(compiled, x) == 2


@needs_avx2
@pytest.mark.parametrize("freezing", [True, False])
def test_backend_runs_3x3x3_convs_by_winograd_per_size(freezing):
    """Of dynamic sizes (one program), Winograd's ``m`` per size (``conv/sized.py``): F(4x4)
    at 2x4x16x16, F(2x2) under freezing at 1x3x6x10 (6 tiles a frame, 18 in all), and
    without freezing there no Winograd at all (too few tiles to pay for the transform)."""
    from tessera.compiler.targets.x86.conv.sized import SizedWinograd

    torch.manual_seed(0)
    model = _Block(64, dims=3).eval()
    compiled = torch.compile(model, backend="tessera", dynamic=True, options={"freezing": freezing})
    with torch.no_grad():
        for shape, m in (((2, 64, 4, 16, 16), 4), ((1, 64, 3, 6, 10), 2 if freezing else None)):
            x = torch.randn(*shape)
            want = model(x)
            torch.testing.assert_close(compiled(x), want, rtol=1e-4, atol=1e-4 * want.abs().max().item())
            convs = [s.kernel for p in programs_run(compiled, x) for s in p.steps
                     if isinstance(getattr(s, "kernel", None), SizedWinograd)]
            assert len(convs) == 2
            assert {c._sized(tuple(x.shape)).m for c in convs} == {m}


def test_weight_transform_is_g_w_g_transposed():
    """The per-call float32 transform against ``G w G^T`` in float64, within a few ulp."""
    from tessera.compiler.targets.x86.conv.winograd import transform_weight

    torch.manual_seed(0)
    w = torch.randn(24, 16, 3, 3)
    for m in (2, 4):
        ws = WinogradSpec(ConvSpec(1, 16, 24, (8, 8), (3, 3), padding=1, isa="avx2"), m)
        g = torch.tensor([[float(x) for x in row] for row in TRANSFORMS[m][1]], dtype=torch.float64)
        want = (g @ w.double() @ g.T).permute(2, 3, 0, 1).reshape(ws.points * 24, 16, 1, 1)
        got = transform_weight(w, ws)
        assert got.dtype == torch.float32 and got.shape == want.shape
        assert ((got.double() - want).abs().max() / want.abs().max()).item() < 4 * 2.0 ** -24


@pytest.mark.parametrize("isa,channels,tiles,m", [
    ("avx2", 64, 16, None), ("avx2", 64, 36, 4), ("avx2", 128, 64, 4), ("avx2", 256, 36, 2), ("avx2", 32, 256, None),
    ("avx512", 64, 16, None), ("avx512", 64, 32, None), ("avx512", 64, 36, 4), ("avx512", 32, 36, None),
    ("avx512", 32, 64, 4), ("avx512", 16, 128, None), ("avx512", 16, 256, 4), ("avx512", 256, 36, 4),
    ("avx512", 512, 36, 2)])
def test_winograd_per_call_needs_tiles_to_pay_for_its_transform(isa, channels, tiles, m):
    from tessera.compiler.targets.x86.conv_kernel_model import prefers_winograd_per_call
    from tessera.passes.target_models import ConvShape

    shape = ConvShape(spatial=2, dtype="f32", in_channels=channels, out_channels=channels, groups=1,
                      kernel=(3, 3), stride=(1, 1))
    assert prefers_winograd_per_call(shape, tiles, isa) == m


@needs_avx2
def test_backend_runs_3x3_convs_by_winograd_per_call_without_freezing():
    """Without freezing, 64 output tiles pay for transforming the weight on every call:
    a weight changed between calls (even through ``.data``) is seen."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(64, 64, 3, padding=1)).eval()
    x = torch.randn(1, 64, 32, 32).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        compiled = torch.compile(model, backend="tessera")
        for scale in (1.0, -1.5):
            model[0].weight.data.mul_(scale)
            want = model(x)
            torch.testing.assert_close(compiled(x), want, rtol=1e-4, atol=1e-4 * want.abs().max().item())
        assert _winograd_launches(compiled, x) == 2
        packs = [s.fn for p in programs_run(compiled, x) for s in p.steps
                 if isinstance(s, Call) and isinstance(s.fn, PackedWeight)]
        kept = [p._fn for p in packs if isinstance(p._fn, KeptPack)]
        assert len(kept) == 2  # each packed into buffers of its own, kept between calls
        first = [b.data_ptr() for k in kept for b in k._local.kept.values()]
        compiled(x)
        assert [b.data_ptr() for k in kept for b in k._local.kept.values()] == first
        assert len(first) == 4  # the transformed weight and the packed one
        clone = pickle.loads(pickle.dumps(kept[0]))  # as the graph cache stores a program: buffers of its own
        w = model[0].weight.detach()
        assert torch.equal(clone(w), kept[0](w)) and clone(w).data_ptr() not in first


@needs_avx2
def test_backend_leaves_a_first_conv_of_3_channels_off_winograd():
    """A channels-last 3-channel input: its 3x3 conv is the direct path's (Winograd's GEMM
    over 3 channels measured 0.22x oneDNN), the next 32-channel conv Winograd's."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(32, 32, 3, padding=1)).eval()
    x = torch.randn(1, 3, 32, 32).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        compiled = torch.compile(model, backend="tessera", options={"freezing": True})
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        assert _winograd_launches(compiled, x) == 1


def _sized_winograd(compiled, x):
    from tessera.compiler.targets.x86.conv.sized import SizedWinograd
    from tessera.runtime.program import Launch

    return [s.kernel for p in programs_run(compiled, x) for s in p.steps
            if isinstance(s, Launch) and isinstance(s.kernel, SizedWinograd)]


@needs_avx2
def test_sized_winograd_chooses_per_size_and_packs_each_form_once():
    """At each size the chosen m's Winograd or the direct kernel, each exact; each
    form of the weight packed once however the sizes alternate; pickled, it
    chooses again."""
    from tessera.compiler.targets.x86.conv.sized import SizedWinograd
    from tessera.compiler.targets.x86.conv_choice import winograd_m_at

    isa = select_conv_isa()
    spec = ConvSpec(1, 32, 32, (3, 3), (3, 3), padding=1, bias=True, isa=isa)
    conv = SizedWinograd(spec, winograd_m_at)
    g = torch.Generator().manual_seed(0)
    w = torch.randn(32, 32, 3, 3, generator=g) / 20
    b = torch.randn(32, generator=g)
    sizes = [(2, 2), (28, 28), (2, 2), (28, 28), (1, 9)]
    for size in [*sizes, *sizes]:
        x = torch.randn(1, 32, *size, generator=g).contiguous(memory_format=torch.channels_last)
        shape, strides, _ = conv.layout(x)
        out = torch.full(shape, float("nan")).as_strided(shape, strides)
        conv(x, w, b, out)
        want = F.conv2d(x.double(), w.double(), b.double(), padding=1).float()
        torch.testing.assert_close(out, want, rtol=2e-5, atol=2e-5)
    assert {size: conv._sized((1, 32, *size)).m for size in ((2, 2), (28, 28))} == {(2, 2): None, (28, 28): 4}
    assert {m: form.packs for m, form in conv._forms.items()} == {None: 1, 4: 1}
    again = pickle.loads(pickle.dumps(conv))
    assert again._forms == {} and again._sized((1, 32, 28, 28)).m == 4


@needs_avx2
def test_backend_runs_3x3_convs_of_dynamic_sizes_by_winograd_per_size():
    """``dynamic=True`` under freezing: one program, Winograd at the sizes with the
    tiles for it and the direct kernel below, each matching eager; two instances
    of the block called in turn keep their own weights' forms."""
    torch.manual_seed(0)
    models = [_Block(32).eval() for _ in range(2)]
    for model in models:
        for bn in (model.b1, model.b2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
    with torch.no_grad():
        compiled = [torch.compile(m, backend="tessera", dynamic=True, options={"freezing": True}) for m in models]
        for size in (20, 3, 12, 20):
            for model, fn in zip(models, compiled):
                x = torch.randn(1, 32, size, size)
                want = model(x)
                torch.testing.assert_close(fn(x), want, rtol=1e-4, atol=1e-4 * want.abs().max().item())
        convs = _sized_winograd(compiled[0], x)
    assert len(convs) == 2
    small, large = (convs[0]._sized((1, 32, s, s)).m for s in (3, 20))
    assert small is None and large in (2, 4)  # 1 tile: the direct kernel; 25: F(2x2) or F(4x4) by the vector path


@needs_avx2
def test_backend_runs_3x3_convs_of_dynamic_sizes_by_winograd_per_call_without_freezing():
    """``dynamic=True`` without freezing: Winograd at the sizes whose tiles pay for
    transforming the weight on every call; below, as a static conv of that size: the direct
    kernel at most 13x13 points, else oneDNN's call (a weight-bound one on the plain weight),
    each matching eager; a weight changed through ``.data`` is seen, and the transformed
    weight is made on every call into the same buffers."""
    from tessera.compiler.targets.x86.conv.sized import _LibraryLaunch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.SiLU(),
                                torch.nn.Conv2d(64, 256, 3, padding=1)).eval()
    with torch.no_grad():
        compiled = torch.compile(model, backend="tessera", dynamic=True)
        for size, scale in ((32, 1.0), (5, 1.0), (34, -1.5), (6, 1.0), (12, 1.0), (20, 1.0), (32, 0.5)):
            model[2].weight.data.mul_(scale)
            x = torch.randn(1, 64, size, size)
            want = model(x)
            torch.testing.assert_close(compiled(x), want, rtol=1e-4, atol=1e-4 * want.abs().max().item())
        convs = _sized_winograd(compiled, x)
        assert len(convs) == 2  # the 64->256 conv's weight (147k elements) no longer sends it to the library
        for conv in convs:
            assert conv._sized((1, 64, 32, 32)).m == 4 and conv._sized((1, 64, 34, 34)).m == 4  # 64, 81 tiles
            assert isinstance(conv._sized((1, 64, 5, 5)).kernel, _LibraryLaunch)  # 4 tiles, weight-bound
            assert isinstance(conv._sized((1, 64, 20, 20)).kernel, _LibraryLaunch)  # 25 tiles, 400 points
            form = conv._forms[4]
            assert isinstance(form, KeptPack)
            first = [b.data_ptr() for b in form._local.kept.values()]
            compiled(x)
            assert [b.data_ptr() for b in form._local.kept.values()] == first
        assert not isinstance(convs[0]._sized((1, 64, 12, 12)).kernel, _LibraryLaunch)  # 144 points: the direct kernel
        again = pickle.loads(pickle.dumps(convs[1]))
        assert again._forms == {} and again._sized((1, 64, 5, 5)).m is None


@pytest.mark.parametrize("channels,size,direct", [(64, 8, True), (64, 24, False), (256, 24, True), (256, 64, True)])
def test_a_dynamic_conv_off_winograd_runs_the_direct_kernel_as_a_static_one_would(channels, size, direct):
    """A size Winograd leaves, weight packed per call (``conv_choice.direct_at``): the
    direct kernel where the static rule gives it that size (its output points), and at
    every size where the kernel packs the weight block by block (256 -> 256 3x3: 2.3 MB,
    which oneDNN would reorder whole on every call)."""
    from tessera.compiler.targets.x86.conv.spec import ConvSpec
    from tessera.compiler.targets.x86.conv.tiling import packs_in_kernel
    from tessera.compiler.targets.x86.conv_choice import direct_at

    spec = ConvSpec(8, channels, channels, (size, size), (3, 3), padding=1, isa="avx512")
    assert packs_in_kernel(spec) == (channels == 256)
    assert direct_at(spec) == direct
