"""``tsr.conv`` on tessera's own kernel, where the cost model prefers it.

    %y = tsr.conv %x, %w, %b {activation = "silu", padding = array<i64: 1, 1>, ...}
         : (tensor<1x16x9x11xf32, #tsr.layout<nhwc>>, ...) -> tensor<1x24x9x11xf32, #tsr.layout<nhwc>>
    // the host program's steps (host_program.py)
    Call(pack, (w,), (pw,))                  # the weight packed (once per weight version under freezing)
    Alloc(y, nhwc type)                       # kept between calls, like every kernel's output
    Launch(conv2d_avx512_n1_16to24_9x11_k3x3_p1x1_bias_silu, (x, pw, b, y))

:func:`wants_tessera` says which convs: f32 2-D/3-D convs reading and
writing channels-last (or contiguous, where ``fold-relayouts-into-convs`` or
``fuse-conv-residuals`` folded a relayout in), of a class
``targets/x86/conv_kernel_model.py`` gives tessera, on a CPU that runs a conv
kernel path. :func:`conv_kernel` gives the loaded kernel (built at
program build time through the compile cache) and the weight packing; the
kernel is an ordinary launch of the program, so its output is a kept buffer
and its arguments are checked like every kernel's.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from tessera.compiler.targets.x86.conv.api import load_conv
from tessera.compiler.targets.x86.conv.isa import CONV_ISAS, can_run_conv
from tessera.compiler.targets.x86.conv.packing import pack_weight
from tessera.compiler.targets.x86.conv.spec import ConvSpec
from tessera.compiler.targets.x86.conv_kernel_model import prefers_tessera
from tessera.compiler.weight_cache import PackedWeight
from tessera.dialects import tsr
from tessera.dialects.tsr.layout import channels_last, identity, layout_of
from tessera.dialects.tsr.shapes import elem_of, ints
from tessera.passes.target_models import ConvShape
from tessera.runtime.kernel import Kernel


def _host_isa() -> str | None:
    return next((isa for isa in CONV_ISAS if can_run_conv(isa)), None)


def kernel_layout(v: SSAValue) -> str | None:
    """How the kernel would read or write ``v``: ``channels_last``, ``contiguous``, or ``None`` (it cannot)."""
    rank = len(v.type.get_shape())
    layout = layout_of(v.type)
    return "channels_last" if layout == channels_last(rank) else "contiguous" if layout == identity(rank) else None


def wants_tessera(op: tsr.ConvOp) -> bool:
    """An f32 2-D/3-D conv, its input and result each channels-last or contiguous, of
    a class the cost model gives tessera in those layouts, on a CPU that runs the kernel."""
    rank = len(op.input.type.get_shape())
    layouts = (kernel_layout(op.input), kernel_layout(op.result)) if rank in (4, 5) else (None,)
    return (None not in layouts and _host_isa() is not None
            and all(elem_of(v.type) == f32 for v in (op.input, op.weight, *op.epilogue, op.result))
            and prefers_tessera("x86", ConvShape.of(op), *layouts))


def conv_spec(op: tsr.ConvOp) -> ConvSpec:
    """The kernel spec of ``op`` (its epilogue: bias, residual, activation) for this host's widest path."""
    x, w = op.input.type.get_shape(), op.weight.type.get_shape()
    return ConvSpec(x[0], x[1], w[0], tuple(x[2:]), tuple(w[2:]), ints(op.stride), ints(op.padding),
                    ints(op.dilation), op.groups.value.data, bias=op.bias is not None,
                    residual=op.residual_input is not None, activation=op.activation_name() or "none",
                    isa=_host_isa() or "avx2", input_layout=kernel_layout(op.input) or "channels_last",
                    output_layout=kernel_layout(op.result) or "channels_last")


def conv_kernel(op: tsr.ConvOp, freezing: bool = False) -> tuple[Kernel, Callable[[torch.Tensor], torch.Tensor]]:
    """``op``'s loaded kernel, and the function giving its packed weight from the
    op's weight (with ``freezing`` computed again only when the weight changes,
    else on every call: :class:`PackedWeight`).
    The kernel's arguments: input, packed weight, [bias], [residual], output."""
    spec = conv_spec(op)
    return load_conv(spec), PackedWeight(lambda w: pack_weight(w.detach().float().contiguous(), spec).data, freezing)
