"""Graphs with symbolic sizes (``dynamic=True``, ``mark_dynamic``, Dynamo's
automatic dynamic shapes) run compiled at every size, matching eager: no
graph falls back to ATen (``strict``), in inference and training.

AOTAutograd traces such a model once; tessera compiles each of its graphs
once, its kernels taking their sizes at run time (``test_dynamic_kernels.py``),
or where a part of it cannot be (or with ``dynamic_kernels=False``) once per
concrete size class (``size_specialization.py``). These tests pin what a user
sees: one ``torch.compile`` serving many resolutions and batch sizes, with no
new Dynamo or AOTAutograd trace per size.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from functorch.compile import make_boxed_func

from tessera.compiler.capture import aot_backend
from tessera.compiler.report import collect_reports
from tessera.compiler.size_specialization import SizeSpecializedGraph

from conftest import example
from program_capture import programs_run
from zoo_models import ZOO

STRICT = {"strict": True}


def _x86_conv_kernel() -> bool:
    from tessera.compiler.targets.x86.conv_choice import host_isa

    return host_isa() is not None


def _close(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    assert type(got) is torch.Tensor and got.shape == want.shape and got.dtype == want.dtype, what
    scale = max(1.0, want.abs().max().item())
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4 * scale, equal_nan=True, msg=what)


def _all_compiled(reports) -> None:
    assert reports and all(r.compiled for r in reports), [r.summary() for r in reports]


def _sizes(shape: tuple[int, ...], spatial: int, scales=(1, 2, 3, 5)) -> list[tuple[int, ...]]:
    """``shape`` at several resolutions (the last ``spatial`` dims scaled) and a second batch size."""
    out = []
    for s in scales:
        out.append((*shape[:-spatial], *(d * s if d > 1 else d for d in shape[-spatial:])))
    out.append((shape[0] + 1, *out[1][1:]))
    return out


@pytest.mark.parametrize("name", ["video_vae_block", "vae2d_block", "resnet_block", "mobilenet_block"])
def test_example_blocks_at_every_size(name):
    """One compile with ``dynamic=True`` serves 4 resolutions and 2 batch sizes."""
    model, (x,) = example(name)
    compiled = torch.compile(model, backend="tessera", dynamic=True, options=STRICT)
    spatial = x.dim() - 2
    with torch.no_grad(), collect_reports() as reports:
        for shape in _sizes(tuple(x.shape), spatial):
            xs = torch.randn(shape)
            _close(compiled(xs), model(xs), f"{name} at {shape}")
    _all_compiled(reports)
    # compiled for dynamic sizes: a new report only where Dynamo traced again (a size of 1, or
    # the first size where it equals a static one: duck sizing specializes it)
    assert reports[-1].dynamic and len(reports) < 5, [r.summary() for r in reports]


@pytest.mark.parametrize("name", ["video_vae_block", "vae2d_block"])
def test_frozen_vae_blocks_fold_their_upsample_at_dynamic_sizes(name):
    """Under freezing (oneDNN's weights reordered once, for the first size's
    input) the blocks' upsample + conv folds into a polyphase conv in the one
    program for dynamic sizes, exact at every size."""
    model, (x,) = example(name)
    compiled = torch.compile(model, backend="tessera", dynamic=True, options={**STRICT, "freezing": True})
    with torch.no_grad(), collect_reports() as reports:
        for shape in _sizes(tuple(x.shape), x.dim() - 2, scales=(1, 3, 2)):
            xs = torch.randn(shape)
            _close(compiled(xs), model(xs), f"{name} at {shape}")
    _all_compiled(reports)
    assert reports[-1].dynamic and reports[-1].library["aten.polyphase_weight"] == 1, reports[-1].summary()


class _NearestExactUp(nn.Module):
    """The WAN VAE's upsample: nearest-exact by 2, then a 3x3 conv."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        return self.conv(nn.functional.interpolate(x, scale_factor=2.0, mode="nearest-exact"))


def test_nearest_exact_by_a_whole_scale_folds_at_dynamic_sizes():
    """A nearest-exact upsample whose output the shape environment proves twice
    its input is nearest's, and folds into the conv after it (a polyphase conv)."""
    torch.manual_seed(0)
    model = _NearestExactUp().eval()
    compiled = torch.compile(model, backend="tessera", dynamic=True, options=STRICT)
    with torch.no_grad(), collect_reports() as reports:
        for shape in [(1, 8, 6, 6), (2, 8, 5, 9), (1, 8, 12, 7)]:
            x = torch.randn(shape)
            _close(compiled(x), model(x), f"at {shape}")
    assert reports[-1].dynamic and reports[-1].library["aten.polyphase_weight"] == 1, reports[-1].summary()


def test_automatic_dynamic_compiles_the_second_size():
    """Without ``dynamic``, Dynamo makes a graph dynamic when a second size comes;
    tessera compiles that graph too, and the first size still runs compiled."""
    model, (x,) = example("vae2d_block")
    compiled = torch.compile(model, backend="tessera", options=STRICT)
    with torch.no_grad(), collect_reports() as reports:
        for s in (8, 12, 16, 8):
            xs = torch.randn(1, x.shape[1], s, s)
            _close(compiled(xs), model(xs), f"size {s}")
    _all_compiled(reports)


def test_mark_dynamic():
    model, (x,) = example("resnet_block")
    compiled = torch.compile(model, backend="tessera", options=STRICT)
    with torch.no_grad(), collect_reports() as reports:
        for s in (x.shape[-1], x.shape[-1] * 2):
            xs = torch.randn(*x.shape[:-2], s, s)
            torch._dynamo.mark_dynamic(xs, 2)
            torch._dynamo.mark_dynamic(xs, 3)
            _close(compiled(xs), model(xs), f"size {s}")
    _all_compiled(reports)


def test_training_step_at_two_sizes():
    """Forward and backward graphs with symbolic sizes (the forward returns sizes
    the backward takes): outputs, input and parameter gradients and BatchNorm
    statistics match eager at each size."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 4, 1)).train()
    ref = copy.deepcopy(model)
    compiled = torch.compile(model, backend="tessera", dynamic=True, options=STRICT)
    with collect_reports() as reports:
        for s in (8, 12, 20):
            x = torch.randn(2, 3, s, s)
            xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
            ya, yb = compiled(xa), ref(xb)
            ya.square().mean().backward()
            yb.square().mean().backward()
            _close(ya, yb, f"output at {s}")
            _close(xa.grad, xb.grad, f"input gradient at {s}")
            for (n, p), q in zip(model.named_parameters(), ref.parameters()):
                _close(p.grad, q.grad, f"{n}.grad at {s}")
                p.grad = q.grad = None
            _close(model[1].running_var, ref[1].running_var, f"running_var at {s}")
    _all_compiled(reports)
    assert {r.kind for r in reports} == {"forward", "backward"}
    # BatchNorm's unbiased variance, n / (n - 1) of a symbolic n, is float arithmetic on sizes
    assert all(r.dynamic for r in reports), [r.summary() for r in reports]


class _SqueezeExcite(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 1)

    def forward(self, x):
        y = self.conv(x)
        return y * torch.sigmoid(y.mean((2, 3), keepdim=True))


def test_a_mean_backward_of_symbolic_sizes_broadcasts_in_its_kernel():
    """The backward of a mean over symbolic planes, ``expand(dy, n, c, h, w) / (h * w)``:
    the division by a size is fused (a 0-d tensor the kernel reads) and ``sink-expands``
    lets the kernel that reads it broadcast ``dy``; no host op writes the expanded
    gradient. Gradients equal eager's at each size."""
    torch.manual_seed(0)
    model = _SqueezeExcite(16).train()
    ref = copy.deepcopy(model)
    compiled = torch.compile(model, backend="tessera", dynamic=True, options=STRICT)
    for h, w in ((5, 7), (9, 4), (12, 12)):
        x = torch.randn(3, 16, h, w)
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        programs = programs_run(lambda t: compiled(t).square().sum().backward(), xa)
        ref(xb).square().sum().backward()
        _close(xa.grad, xb.grad, f"input gradient at {h}x{w}")
        for (n, p), q in zip(model.named_parameters(), ref.parameters()):
            _close(p.grad, q.grad, f"{n}.grad at {h}x{w}")
            p.grad = q.grad = None
        host = {getattr(s.fn, "__name__", "") for p in programs for s in p.steps if hasattr(s, "fn")}
        assert not host & {"tsr.expand", "tsr.div"}, host


class _GatedSqueezeExcite(nn.Module):
    """EfficientNet's squeeze-excite: a pooled gate through two 1x1 convs."""

    def __init__(self, c: int):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.reduce, self.expand = nn.Conv2d(c, c // 4, 1), nn.Conv2d(c // 4, c, 1)

    def forward(self, x):
        y = self.conv(x)
        return y * torch.sigmoid(self.expand(nn.functional.silu(self.reduce(y.mean((2, 3), keepdim=True)))))


def test_a_dynamic_backward_views_reshapes_of_unit_dims_as_the_static_one_does():
    """The gate's gradients are reshaped between ``?xCx1x1`` and the GEMMs' ``?xC``:
    a reshape that only drops or adds unit dims views its input at every size, so the
    dynamic backward has the static one's kernels (not a copy kernel per reshape), and
    equals eager's gradients at each size."""
    kernels = {}
    for dynamic in (False, True):
        torch.manual_seed(0)
        model = _GatedSqueezeExcite(16).train()
        ref = copy.deepcopy(model)
        compiled = torch.compile(model, backend="tessera", dynamic=dynamic, options=STRICT)
        for h, w in ((6, 5), (9, 11)) if dynamic else ((6, 5),):
            x = torch.randn(3, 16, h, w)
            xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
            with collect_reports() as reports:
                compiled(xa).square().sum().backward()
            ref(xb).square().sum().backward()
            _close(xa.grad, xb.grad, f"input gradient at {h}x{w}")
            for (n, p), q in zip(model.named_parameters(), ref.parameters()):
                _close(p.grad, q.grad, f"{n}.grad at {h}x{w}")
                p.grad = q.grad = None
            kernels.update({(dynamic, r.kind): r.kernels for r in reports})
    assert kernels[True, "backward"] == kernels[False, "backward"], kernels


def test_a_forward_that_saves_a_float_of_sizes_for_its_backward():
    """BatchNorm of a 2-D input of one channel in training: the forward saves
    ``n / (n - 1)``, a float computed from sizes, for its backward; AOTAutograd takes
    it as a Python number, so such a graph is compiled per size class (not a crash:
    OpInfo's ``nn.functional.batch_norm`` sample, dynamic backward). Eager's values
    and gradients."""
    import torch.nn.functional as F

    def f(x, w, b):
        return F.batch_norm(x, torch.zeros(1), torch.ones(1), w, b, training=True, momentum=0.0)

    compiled = torch.compile(f, backend="tessera", dynamic=True, options=STRICT)
    for n in (3, 6):
        x, w, b = torch.randn(n, 1), torch.randn(1), torch.randn(1)
        got_args = [t.clone().requires_grad_() for t in (x, w, b)]
        want_args = [t.clone().requires_grad_() for t in (x, w, b)]
        got, want = compiled(*got_args), f(*want_args)
        _close(got, want, f"output at {n}")
        got.square().sum().backward()
        want.square().sum().backward()
        for name, g, e in zip("xwb", got_args, want_args):
            _close(g.grad, e.grad, f"{name}.grad at {n}")


def test_an_upsample_whose_backward_meta_fails_is_traced_decomposed():
    """At symbolic sizes ATen's meta of ``upsample_nearest1d_backward`` fails on the
    size list (``isIntList() INTERNAL ASSERT FAILED``) where tessera keeps the upsample
    whole: the graph is traced again with ATen's decomposition (index gathers) and
    compiled, not run as ATen. Eager's gradients at each size."""
    import torch.nn.functional as F

    def f(x):
        return F.interpolate(x, (x.shape[1],), mode="nearest")

    compiled = torch.compile(f, backend="tessera", dynamic=True, options=STRICT)
    for n, c, w in ((2, 3, 4), (3, 5, 7)):
        x = torch.randn(n, c, w)
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        with collect_reports() as reports:
            got = compiled(xa)
            got.square().sum().backward()
        want = f(xb)
        want.square().sum().backward()
        _close(got, want, f"output at {n}x{c}x{w}")
        _close(xa.grad, xb.grad, f"input gradient at {n}x{c}x{w}")
        assert all(r.compiled for r in reports), [r.summary() for r in reports]


def _raised(call) -> BaseException:
    try:
        call()
    except RuntimeError as e:
        return e
    raise AssertionError("the call did not fail")


def test_only_a_kept_ops_failure_sends_a_trace_to_the_decomposed_retry():
    """The backend traces a graph again with ATen's decompositions only when the
    failure came from an op ``tsr`` keeps whole or its backward; any other trace
    failure is not worth a second trace."""
    from tessera.compiler.decompositions import raised_by_kept_op

    aten = torch.ops.aten
    assert raised_by_kept_op(_raised(lambda: aten.upsample_nearest1d_backward.default(torch.ones(2), [3], [1, 1, 3])))
    assert not raised_by_kept_op(_raised(lambda: aten.mm.default(torch.ones(2, 3), torch.ones(4, 5))))


def _float_of_sizes(x):
    n, c = x.shape[0], x.shape[1]
    return x * (n / 3) - c / (n - 1.0) + torch.sym_float(n * c)


def test_float_arithmetic_of_sizes():
    """Floats computed from symbolic sizes (``n / 3``, ``sym_float``) are 0-d float64
    tensors the graph computes at run time: compiled once, exact at every size."""
    compiled = torch.compile(_float_of_sizes, backend="tessera", dynamic=True, options=STRICT)
    with collect_reports() as reports:
        for n in (4, 7, 10):
            x = torch.randn(n, 5)
            _close(compiled(x), _float_of_sizes(x), f"at {n}")
    _all_compiled(reports)
    assert len(reports) == 1 and reports[0].dynamic and not reports[0].aten_ops, reports[0].summary()


def test_size_arithmetic_in_the_graph():
    """Sizes read and computed in the model (``x.shape``, a reshape to them) are bound per call."""

    def f(x):
        n, c, h, w = x.shape
        y = x.reshape(n, c, h * w).softmax(-1)
        return y.reshape(n, c, h, w) * (h + w)

    compiled = torch.compile(f, backend="tessera", dynamic=True, options=STRICT)
    with collect_reports() as reports:
        for h, w in ((4, 6), (7, 3), (16, 16)):
            x = torch.randn(2, 5, h, w)
            _close(compiled(x), f(x), f"{h}x{w}")
    _all_compiled(reports)


def test_a_size_class_is_compiled_once():
    """A size seen before reuses its compiled program: no new compile."""
    model, (x,) = example("vae2d_block")
    compiled = torch.compile(model, backend="tessera", dynamic=True, options={**STRICT, "dynamic_kernels": False})
    with torch.no_grad(), collect_reports() as reports:
        for s in (8, 16, 8, 16, 8):
            compiled(torch.randn(1, x.shape[1], s, s))
    assert len(reports) == 2, [r.summary() for r in reports]


def test_one_trace_serves_every_size(monkeypatch):
    """AOTAutograd traces once (one forward graph reaches tessera); each size class
    is compiled from that graph. (The sizes stay within the guard torch's fake
    convolution sets on its output's memory format, ``128*s*s <= 20480`` here:
    past it Dynamo traces again, for Inductor too.)"""
    from tessera.compiler import backend

    graphs = []
    real = backend.compile_graph
    monkeypatch.setattr(backend, "compile_graph", lambda gm, *a: graphs.append(gm) or real(gm, *a))
    model, (x,) = example("vae2d_block")
    for kernels, compiles in ((True, 1), (False, 3)):
        graphs.clear()
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="tessera", dynamic=True,
                                 options={**STRICT, "dynamic_kernels": kernels})
        with torch.no_grad(), collect_reports() as reports:
            for s in (8, 10, 12):
                compiled(torch.randn(1, x.shape[1], s, s))
        assert len(graphs) == 1 and len(reports) == compiles, [r.summary() for r in reports]
        assert all(r.dynamic == kernels for r in reports)


def test_old_size_classes_are_dropped():
    def f(x):
        return torch.sin(x) + 1

    graphs = []

    def forward_compiler(gm, inputs):
        graphs.append(SizeSpecializedGraph(gm, lambda g: g.forward, max_entries=2))
        return make_boxed_func(graphs[-1])

    compiled = torch.compile(f, backend=aot_backend(forward_compiler), dynamic=True)
    for n in (3, 4, 5, 6):
        x = torch.randn(n)
        assert torch.equal(compiled(x), f(x))
    assert len(graphs) == 1 and len(graphs[0].compiled) == 2


@pytest.mark.parametrize("name, shapes", [
    ("resnet50", [(1, 3, 32, 32), (1, 3, 48, 48), (1, 3, 64, 40), (1, 3, 96, 96), (2, 3, 48, 48)]),
    ("autoencoder_kl_wan_decode", [(1, 4, 2, 8, 8), (1, 4, 2, 12, 12), (1, 4, 3, 8, 16), (1, 4, 2, 16, 16),
                                   (2, 4, 2, 8, 8)]),
])
def test_zoo_models_at_every_size(name, shapes):
    model, _ = ZOO[name].build()
    compiled = torch.compile(model, backend="tessera", dynamic=True, options=STRICT)
    with torch.no_grad(), collect_reports() as reports:
        for shape in shapes:
            x = torch.randn(shape)
            _close(compiled(x), model(x), f"{name} at {shape}")
    _all_compiled(reports)
    assert reports[-1].dynamic, [r.summary() for r in reports]


class _PointwiseDepthwise(nn.Module):
    """A 1x1 conv and a depthwise 3x3: classes tessera's x86 conv kernel computes."""

    def __init__(self, groups: int = 48):
        super().__init__()
        self.pw, self.dw = nn.Conv2d(32, 48, 1), nn.Conv2d(48, 48, 3, padding=1, groups=groups)

    def forward(self, x):
        return torch.relu(self.dw(torch.relu(self.pw(x))))


@pytest.mark.skipif(not _x86_conv_kernel(), reason="tessera's x86 conv kernel needs AVX2+FMA")
@pytest.mark.parametrize("groups", [48, 12])  # depthwise; 4 channels a group (channelwise, rotated weights)
def test_convs_of_dynamic_sizes_run_a_kernel_per_size(groups):
    """Under freezing, a conv the cost model gives tessera's kernel keeps it at
    dynamic sizes: the one program builds a kernel per concrete size when a
    call first brings it, on the weight packed once. (Without freezing the
    library's call decides per size whether the weight outweighs the conv.)"""
    torch.manual_seed(0)
    model = _PointwiseDepthwise(groups).eval()
    compiled = torch.compile(model, backend="tessera", dynamic=True, options={**STRICT, "freezing": True})
    with torch.no_grad(), collect_reports() as reports:
        for shape in [(1, 32, 12, 12), (2, 32, 9, 17), (1, 32, 12, 12), (3, 32, 5, 6)]:
            x = torch.randn(shape).contiguous(memory_format=torch.channels_last)
            _close(compiled(x), model(x), f"at {shape}")
    assert reports[-1].dynamic and reports[-1].conv_kernels == 2, reports[-1].summary()


def test_a_dynamic_1x1_conv_weighs_its_weight_against_each_sizes_output():
    """Without freezing, a 1x1 conv of dynamic sizes whose weight (512 -> 320: 163840
    elements, packed per call) outweighs small outputs: as at static sizes, the library's
    GEMM on the plain weight where it outweighs the output (batch 2 at 3x4: 7680), else
    the kernel on the weight packed for that size (20x24), the weight packed only there;
    eager's result at each size, of one compile."""
    from tessera.compiler.targets.x86.conv.sized import SizedConv, _LibraryLaunch
    from tessera.compiler.targets.x86.conv_choice import host_isa
    from tessera.runtime.program import Launch

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(512, 320, 1), nn.ReLU()).eval()
    compiled = torch.compile(model, backend="tessera", dynamic=True, options=STRICT)
    with torch.no_grad(), collect_reports() as reports:
        for shape in ((2, 512, 3, 4), (3, 512, 20, 24), (2, 512, 3, 4)):
            x = torch.randn(shape).contiguous(memory_format=torch.channels_last)
            programs = programs_run(compiled, x)
            _close(compiled(x), model(x), f"at {shape}")
            if host_isa() is None:
                continue
            (conv,) = [s.kernel for p in programs for s in p.steps
                       if isinstance(s, Launch) and isinstance(s.kernel, SizedConv)]
            assert conv.packs and conv.library is not None
            assert isinstance(conv._sized(shape).kernel, _LibraryLaunch) == (shape[2] == 3)
    _all_compiled(reports)
    assert len(reports) == 1 and reports[0].dynamic


def test_a_dynamic_library_conv_decides_per_call_whether_its_weight_dominates():
    """Without freezing, a conv whose weight outweighs its output takes ATen's call
    on the plain weight (oneDNN would reorder it every call): at dynamic sizes that
    is decided per call, from the input's sizes, and once where the program is bound
    to one run's sizes (``OneDnnConv.at_sizes``)."""
    from tessera.compiler.ir_io import parse_module
    from tessera.compiler.library_calls import OneDnnConv
    from tessera.dialects import tsr
    from tessera.runtime.layouts import Placement

    module = parse_module("""
    func.func @f(%x: tensor<1x64x?x?xf32, #tsr.layout<nhwc>>, %w: tensor<64x64x3x3xf32>) -> tensor<1x64x?x?xf32, #tsr.layout<nhwc>> {
      %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x64x?x?xf32, #tsr.layout<nhwc>>, tensor<64x64x3x3xf32>) -> tensor<1x64x?x?xf32, #tsr.layout<nhwc>>
      func.return %y : tensor<1x64x?x?xf32, #tsr.layout<nhwc>>
    }""")
    conv = OneDnnConv(next(op for op in module.walk() if isinstance(op, tsr.ConvOp)))
    w = torch.randn(64, 64, 3, 3)
    assert conv._weight_bound_at((1, 64, 4, 4), w.shape)  # 36864 weights, 1024 outputs
    assert not conv._weight_bound_at((1, 64, 32, 32), w.shape)
    for n in (4, 32):
        x = torch.randn(1, 64, n, n).contiguous(memory_format=torch.channels_last)
        want = torch.nn.functional.conv2d(x, w, padding=1)
        _close(conv(x, w), want, f"at {n}")
        bound = conv.at_sizes([Placement.of(x), Placement.of(w)])
        assert not bound.bound_per_call and bound.weight_bound == (n == 4)
        for other in (4, 32):  # bound to one size, right at any (the choice is speed only)
            y = torch.randn(1, 64, other, other).contiguous(memory_format=torch.channels_last)
            _close(bound(y, w), torch.nn.functional.conv2d(y, w, padding=1), f"bound at {n}, run at {other}")


def test_a_dynamic_library_conv_under_freezing_reorders_its_weight_per_input_size():
    """Under freezing at dynamic sizes oneDNN's weight is reordered for each input
    size (its blocked format depends on them), the last ``REORDERED_SIZES`` kept, and
    a size met again reuses its reorder."""
    from tessera.compiler import library_calls
    from tessera.compiler.ir_io import parse_module
    from tessera.dialects import tsr

    module = parse_module("""
    func.func @f(%x: tensor<1x16x?x?xf32, #tsr.layout<nhwc>>, %w: tensor<16x16x3x3xf32>) -> tensor<1x16x?x?xf32, #tsr.layout<nhwc>> {
      %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x16x?x?xf32, #tsr.layout<nhwc>>, tensor<16x16x3x3xf32>) -> tensor<1x16x?x?xf32, #tsr.layout<nhwc>>
      func.return %y : tensor<1x16x?x?xf32, #tsr.layout<nhwc>>
    }""")
    conv = library_calls.OneDnnConv(next(op for op in module.walk() if isinstance(op, tsr.ConvOp)), freezing=True)
    w = torch.randn(16, 16, 3, 3)
    sizes = [4, 9, 4, *range(10, 10 + library_calls.REORDERED_SIZES), 4]
    with torch.no_grad():
        for n in sizes:
            x = torch.randn(1, 16, n, n).contiguous(memory_format=torch.channels_last)
            _close(conv(x, w), torch.nn.functional.conv2d(x, w, padding=1), f"at {n}")
    kept = conv._per_size
    assert list(kept) == [(1, 16, n, n) for n in sizes[-library_calls.REORDERED_SIZES:]]  # 9 and 4 went first
    assert all(packer._fn.keywords["input_size"] == list(size) for size, packer in kept.items())
    assert all(packer.packs == 1 for packer in kept.values())
    again = kept[(1, 16, 12, 12)]
    with torch.no_grad():
        conv(torch.randn(1, 16, 12, 12).contiguous(memory_format=torch.channels_last), w)
    assert kept[(1, 16, 12, 12)] is again and again.packs == 1 and list(kept)[-1] == (1, 16, 12, 12)


def _int8_linear(a, b):
    return torch._int_mm(a, b).float() * 0.5


def test_an_int8_gemm_of_dynamic_rows():
    """``torch._int_mm`` at a dynamic row count: one program, exact at every size."""
    compiled = torch.compile(_int8_linear, backend="tessera", dynamic=True, options=STRICT)
    gen = torch.Generator().manual_seed(0)
    b = torch.randint(-128, 127, (64, 32), dtype=torch.int8, generator=gen)
    with collect_reports() as reports:
        for m in (32, 48, 40):
            a = torch.randint(-128, 127, (m, 64), dtype=torch.int8, generator=gen)
            assert torch.equal(compiled(a, b), _int8_linear(a, b)), m
    assert reports[-1].dynamic, reports[-1].summary()


def _slices(x):
    return (torch.relu(x[:, :, 1:]), x[:, :, :-2] * 2, x[:, :, 1::2].sum(), torch.cat([x, x[:, :, :3]], 2).exp(),
            x[:, :, -3:].tanh())


def test_slices_and_concats_of_dynamic_dims():
    """Slices of a dynamic dim keep Python's bounds (from the start, the end, to
    the end) and fuse into kernels, a strided one too (sized ``ceil((n - 1) / 2)``
    at run time); a concat along a dynamic dim, which a kernel cannot size, runs
    on the host: one compile, every size exact."""
    compiled = torch.compile(_slices, backend="tessera", dynamic=True, options=STRICT)
    with torch.no_grad(), collect_reports() as reports:
        for n in (8, 12, 9):
            x = torch.randn(1, 4, n, n + 1)
            for k, (got, want) in enumerate(zip(compiled(x), _slices(x), strict=True)):
                _close(got, want, f"output {k} at {n}")
    assert reports[-1].dynamic, [r.summary() for r in reports]
    assert reports[-1].aten_ops == {"tsr.concat (not fused)": 1} and not reports[-1].views, reports[-1].summary()


def _upsample_of_strided_rows(x):
    y = torch.nn.functional.pad(x.exp(), (1, 1, 1, 1))
    return torch.nn.functional.interpolate(y[:, :, 1::2, :] * 2, scale_factor=(2.0, 1.0)).tanh()


def test_an_upsample_of_a_strided_slice_stays_dynamic():
    """A kernel cannot size a multiple of a quotient (``2 * ((n + 2) // 2)``): the
    upsample of a strided slice's rows stays on the host, and the graph is still
    compiled once for every size, not per size class."""
    compiled = torch.compile(_upsample_of_strided_rows, backend="tessera", dynamic=True, options=STRICT)
    with torch.no_grad(), collect_reports() as reports:
        for h, w in ((8, 9), (7, 7), (5, 6)):
            x = torch.randn(2, 3, h, w)
            _close(compiled(x), _upsample_of_strided_rows(x), f"at {h}x{w}")
    assert reports and all(r.dynamic for r in reports), [r.summary() for r in reports]


def test_an_output_that_is_a_view_of_an_input_stays_one():
    """An output aliasing an input (an expand, a transposed slice) comes back as a
    view of it with eager's strides, as a static graph's does."""

    def f(x, sizes):
        return x.expand(*sizes), x.transpose(0, 1)[1:], x * 2

    compiled = torch.compile(f, backend="tessera", dynamic=True, options=STRICT)
    for n in (5, 7):
        x = torch.randn(n, 1, 1)
        got, want = compiled(x, (n, n, n)), f(x, (n, n, n))
        for g, w in zip(got, want):
            assert torch.equal(g, w) and g.stride() == w.stride()
        assert got[0].data_ptr() == x.data_ptr() and got[1].untyped_storage().data_ptr() == x.data_ptr()


def test_a_size_class_that_cannot_be_retraced_runs_as_aten(monkeypatch, caplog):
    """Should retracing at a size fail (injected here), the symbolic graph runs as
    ATen at that size with a warning: eager's answer, never the user's crash;
    under ``strict`` the error reaches the caller."""
    import logging

    from tessera.compiler import size_specialization

    def fail(gm, args):
        raise RuntimeError("no retrace")

    monkeypatch.setattr(size_specialization, "specialize", fail)

    def f(x):
        return torch.sin(x) * x.shape[0]

    x = torch.randn(6, 5)
    per_size = {"dynamic_kernels": False}
    with caplog.at_level(logging.WARNING, logger="tessera"):
        got = torch.compile(f, backend="tessera", dynamic=True, options=per_size)(x)
    assert torch.equal(got, f(x))
    assert any("could not be specialized" in r.getMessage() for r in caplog.records)
    torch._dynamo.reset()
    with pytest.raises(RuntimeError, match="no retrace"):
        torch.compile(f, backend="tessera", dynamic=True, options={**STRICT, **per_size})(x)


def _dynamic_inputs(gm, x: torch.Tensor) -> list:
    """The inputs of an AOT graph of symbolic sizes for the user input ``x``: each
    size placeholder gets the size of the dim of ``x`` its symbol names, each
    parameter random values in [0.5, 1.5) (a BatchNorm variance stays positive)."""
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    data = next(n.meta["val"] for n in phs if isinstance(n.meta["val"], torch.Tensor)
                and any(isinstance(d, torch.SymInt) for d in n.meta["val"].shape))
    inputs = []
    for n in phs:
        v = n.meta["val"]
        if isinstance(v, torch.SymInt):
            inputs.append(next(int(s) for d, s in zip(data.shape, x.shape) if str(d) == str(v)))
        elif v is data:
            inputs.append(x)
        else:
            inputs.append(torch.rand(tuple(v.shape), generator=torch.Generator().manual_seed(len(inputs))) + 0.5)
    return inputs


def test_a_graph_of_symbolic_sizes_imports_with_dynamic_dims():
    """A ``dynamic=True`` graph imports as is: ``?`` dims, its sizes as ``i64``
    arguments, their arithmetic as ``arith`` ops. The graph passes run on it,
    and the interpreter gives the captured graph's values (ATen's) at several
    sizes, before and after them."""
    from tessera.compiler.backend import BackendOptions
    from tessera.compiler.context import make_context
    from tessera.compiler.fx_import import import_graph
    from tessera.compiler.interpreter import interpret
    from tessera.compiler.ir_io import print_module, verify_module
    from tessera.compiler.pass_pipeline import build_pipeline

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.SiLU(),
                                torch.nn.Upsample(scale_factor=2), torch.nn.Conv2d(8, 4, 3, padding=1)).eval()
    with torch.no_grad():
        model[1].running_mean.uniform_(-1, 1)
        model[1].running_var.uniform_(0.5, 2)
    graphs = []
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=aot_backend(lambda g, i: graphs.append(g) or make_boxed_func(g.forward)),
                             dynamic=True)
    with torch.no_grad():
        compiled(torch.randn(2, 3, 8, 8))
    (gm,) = graphs
    module = import_graph(gm).module
    verify_module(module)
    text = print_module(module)
    assert "tensor<?x3x?x?xf32" in text and ": i64" in text, text[:600]
    optimized = module.clone()
    build_pipeline(BackendOptions().pipeline()).apply(make_context(), optimized)
    verify_module(optimized)
    assert "tsr.layout<nhwc>" in print_module(optimized)  # the convs went channels-last by channels and kernel
    for shape in [(2, 3, 8, 8), (1, 3, 12, 12), (3, 3, 5, 5)]:
        inputs = _dynamic_inputs(gm, torch.randn(shape))
        with torch.no_grad():
            (want,) = gm(*inputs)
        for m, what in ((module, "imported"), (optimized, "after the graph passes")):
            (got,) = interpret(m, *inputs)
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4, msg=f"{what} at {shape}")


class _GroupNormBlock(nn.Module):
    """GroupNorm (a view merging h and w: ``s1 * s2``, or ``s1 ** 2`` at square
    sizes), SiLU, a pad and a nearest upsample, on a slice of the input: a
    strided view of symbolic strides."""

    def __init__(self):
        super().__init__()
        self.conv1, self.norm, self.conv2 = nn.Conv2d(4, 16, 3, padding=1), nn.GroupNorm(4, 16), nn.Conv2d(16, 8, 3)

    def forward(self, x):
        y = nn.functional.silu(self.norm(self.conv1(x[:, :4])))
        y = nn.functional.interpolate(nn.functional.pad(y, (1, 1, 1, 1)), scale_factor=2.0, mode="nearest")
        return self.conv2(y).mean(dim=(2, 3)), y.sum()


@pytest.mark.parametrize("sizes", [[(2, 6, 8, 8), (3, 6, 12, 12), (5, 6, 7, 7)],
                                   [(2, 6, 8, 10), (3, 6, 12, 9), (5, 6, 6, 13)]])
def test_a_group_norm_block_compiles_once_for_dynamic_sizes(sizes):
    """Every graph of the block compiles with kernels that take their sizes at
    run time (none per size class), at square and oblong sizes, matching eager."""
    torch.manual_seed(0)
    model = _GroupNormBlock().eval()
    compiled = torch.compile(model, backend="tessera", dynamic=True, options=STRICT)
    with torch.no_grad(), collect_reports() as reports:
        for shape in sizes:
            x = torch.randn(shape)
            (a, s), (ea, es) = compiled(x), model(x)
            _close(a, ea, f"mean at {shape}")
            _close(s, es, f"sum at {shape}")
    assert reports and all(r.dynamic for r in reports), [r.summary() for r in reports]


def _squeeze_frames(x):
    y = torch.sigmoid(x)
    return y.view(y.shape[0], y.shape[1], y.shape[3], y.shape[4]).relu() * 2  # (n, c, 1, h, w) -> (n, c, h, w)


def test_a_reshape_whose_dynamic_dims_are_its_inputs_fuses():
    """A view whose dynamic dims are one input dim each (a frame squeeze) is
    indexed through inside a kernel, not a host copy between two kernels."""
    compiled = torch.compile(_squeeze_frames, backend="tessera", dynamic=True, options=STRICT)
    with collect_reports() as reports:
        for shape in ((2, 8, 1, 6, 10), (3, 8, 1, 9, 7), (2, 8, 1, 12, 12)):
            x = torch.randn(shape)
            _close(compiled(x), _squeeze_frames(x), f"at {shape}")
    _all_compiled(reports)
    assert reports[-1].dynamic and reports[-1].kernels == 1 and "tsr.reshape" not in reports[-1].views, \
        reports[-1].summary()
