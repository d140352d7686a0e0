"""``tsr.conv`` on tessera's own kernel, where the cost model prefers it.

    %y = tsr.conv %x, %w, %b {activation = "silu", padding = array<i64: 1, 1>, ...}
         : (tensor<1x16x9x11xf32, #tsr.layout<nhwc>>, ...) -> tensor<1x24x9x11xf32, #tsr.layout<nhwc>>
    // the host program's steps (host_program.py)
    Call(pack, (w,), (pw,))                  # the weight packed (under freezing in the step preparing weights)
    Alloc(y, nhwc type)                       # kept between calls, like every kernel's output
    Launch(conv2d_avx512_n1_16to24_9x11_k3x3_p1x1_bias_silu, (x, pw, b, y))
    // no freezing, weights over L2: Launch(conv2d_avx2_n1_768to3072_1x128_k1x1_bias_wplain, (x, w, b, y)),
    //     each channel block packed on the kernel's stack (packs_in_kernel)
    // a 1x1 conv at 7x7: Launch(conv2d_avx512_n1_1152to320_1x49_k1x1, (x, pw, y)), its pixels one row (rows.rows_spec)
    // of dynamic sizes: SizedAlloc(y, conv.layout, (x,)), Launch(conv := SizedConv(spec), (x, pw, b, y)) (sized.py)
    //   a 1x1 conv without freezing: Launch(SizedConv(spec, OneDnnConv(op), packs=True), (x, w, b, y)): the
    //   library's GEMM at sizes whose weight outweighs the output, else the kernel on w packed for it
    //   (or the kernel packing it itself, weights over L2: SizedConv(spec, OneDnnConv(op)))
    // tsr.impl = "avx512:winograd4": Call(WinogradPacker, (w,), (pw,)), Launch(WinogradConv(spec), ...)
    // tsr.impl = "avx512:winograd" (dynamic sizes): Call(own_copy, (w,), (w2,)), SizedAlloc(y, ...),
    //     Launch(SizedWinograd(spec, winograd_m_at), (x, w2, b, y))   # m per size, each form packed once
    //   without freezing: SizedAlloc(y, ...), Launch(SizedWinograd(spec, winograd_m_per_call_at, OneDnnConv(op)),
    //     (x, w, b, y))   # m per size, the weight transformed per call; oneDNN at the sizes Winograd does not take

Which convs, and on which vector path, ``select-impl`` decided (the x86
model: ``conv_choice.py``) and recorded as ``tsr.impl``. :func:`conv_call` gives the loaded kernel (built at
program build time through the compile cache) and the weight packing; the
kernel is an ordinary launch of the program, so its output is a kept buffer
and its arguments are checked like every kernel's.
"""

from __future__ import annotations

import dataclasses

from tessera.compiler.library_calls import OneDnnConv
from tessera.compiler.targets.base import KernelCall
from tessera.compiler.targets.x86.conv.api import PlainWeight, load_conv_as, weight_packer
from tessera.compiler.targets.x86.conv.rows import rows_spec
from tessera.compiler.targets.x86.conv.sized import SizedConv, SizedWinograd, own_copy
from tessera.compiler.targets.x86.conv.tiling import packs_in_kernel
from tessera.compiler.targets.x86.conv.winograd import WinogradConv, WinogradPacker
from tessera.compiler.targets.x86.conv_choice import (
    PER_SIZE,
    conv_spec,
    direct_at,
    gemm_per_size,
    split_impl,
    weight_layout,
    winograd_choice,
)
from tessera.dialects import tsr
from tessera.dialects.tsr.shapes import is_static


def conv_call(op: tsr.ConvOp, impl: str, freezing: bool = False) -> KernelCall:
    """``op`` on its loaded kernel as ``impl`` says (``select-impl``'s choice: the
    vector path, and Winograd's ``m`` where it computes the conv), its weight
    (operand 1) packed first (the host program says when: ``KernelCall``).
    The kernel's arguments: input, packed weight, [bias], [residual], output.
    ``freezing`` decides how a conv of dynamic sizes chooses ``m`` per size."""
    isa, m = split_impl(impl)
    spec = conv_spec(op, isa)
    if m == PER_SIZE and freezing:
        return KernelCall(SizedWinograd(spec, winograd_choice(True)), ((1, own_copy),), sized=True)
    if m == PER_SIZE:  # packs on every call itself (the library at sizes it leaves reads the plain weight)
        return KernelCall(SizedWinograd(spec, winograd_choice(False), OneDnnConv(op), direct_at), sized=True)
    if m is not None:
        conv = WinogradConv(spec, m)
        return KernelCall(conv, ((1, WinogradPacker(conv.ws)),))
    if not freezing and packs_in_kernel(spec):  # the plain weight, packed by the kernel a block at a time
        spec = dataclasses.replace(spec, packs_weight=True, weight_layout=weight_layout(op.weight) or "contiguous")
        prepare: tuple = ((1, PlainWeight(spec)),)
    else:
        prepare = ((1, weight_packer(spec)),)
    if not is_static(op.input.type.get_shape()):
        if not gemm_per_size(op, freezing):
            return KernelCall(SizedConv(spec), prepare, sized=True)
        if spec.packs_weight:
            return KernelCall(SizedConv(spec, OneDnnConv(op)), prepare, sized=True)
        return KernelCall(SizedConv(spec, OneDnnConv(op), packs=True), sized=True)  # packs where the kernel runs
    return KernelCall(load_conv_as(spec, rows_spec(spec)), prepare)  # a 1x1 conv's pixels in rows of its own
