"""The backward of a depthwise conv whose input plane is smaller than its window, or whose
window is larger than 3x3: its weight gradient one reduction per tap instead of the library's
call:

    gx, gw, gb = convolution_backward(dy, x, w, [960], [1, 1], [1, 1], [1, 1], False, [0, 0], 960,
                                      [True, True, True])
    // static sizes: traced as a reduction per tap (pointwise ops and sums that fuse
    // into one reduction kernel, ``tapwise_weight_grad``)
    gw[c, 0, i, j] = sum(dy * pad(x)[:, :, i*d : i*d + s*(ho-1) + 1 : s, j*d : ...], [0, 2, 3])
    // symbolic sizes, a window of more than 3x3: the same taps, each window a slice
    // of the padded input by the stride that ends a fixed count before its end
    // symbolic sizes otherwise: the plane is known when the op runs
    gx, gw = tessera.depthwise_backward(dy, x, w, [1, 1], [1, 1], [1, 1], input_grad=True, channels_last=False)

oneDNN's depthwise weight gradient takes 0.9-2.2 ms for 960 channels at 2x2 (MobileNetV2's
last stage, batch 8, 1 thread), where its 4x4 planes take 0.06 (session 36), and 1.1-2.2 ms
for EfficientNet-B0's 5x5 windows at any plane (session 38). At symbolic sizes
``tessera.depthwise_backward`` chooses by the static rule at the sizes it runs at: the taps
compiled for those sizes once (``backend.compiled_at_sizes``, cached per size), the input
gradient by the library's call; elsewhere one library call for both.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

import torch

from .conv_grads import in_layout, is_channels_last

aten = torch.ops.aten


def takes(x: torch.Tensor, w: torch.Tensor, transposed: bool, groups: int, output_mask) -> bool:
    """Whether this conv's weight gradient is computed tap by tap (at static sizes), or
    chosen so when run (at symbolic sizes): a depthwise 2-D float32 conv on a CPU whose
    input plane is smaller than its window or whose window is larger than 3x3
    (:data:`LIBRARY_TAPS`), or of symbolic plane."""
    if transposed or not output_mask[1] or x.dim() != 4 or w.dim() != 4 or x.device.type != "cpu":
        return False
    if x.dtype != torch.float32 or w.dtype != torch.float32 or not all(isinstance(s, int) for s in w.shape):
        return False
    if not isinstance(x.shape[1], int) or w.shape[1] != 1 or groups != x.shape[1] or w.shape[0] != groups:
        return False
    if not all(isinstance(s, int) for s in x.shape[2:]):
        return True
    return _smaller_than_window(x.shape[2:], w.shape[2:]) or w.shape[2] * w.shape[3] > LIBRARY_TAPS


LIBRARY_TAPS = 9
"""The largest window whose depthwise weight gradient stays the library's at static planes
it fits in. Compiled tap by tap (one reduction kernel for all taps, 16 channels a vector)
against oneDNN's, channels-last, batch 8, 1 thread (session 38): 5x5 at 240x8x8 0.32 against
1.12 ms, at 144x16x16 stride 2 0.29 against 0.89; 3x3 at 32x32x32 0.25 against 0.15, at
144x16x16 0.26 against 0.17."""


def _smaller_than_window(plane, window) -> bool:
    return plane[0] < window[0] or plane[1] < window[1]


def backward(grad: torch.Tensor, x: torch.Tensor, w: torch.Tensor, stride, padding, dilation,
             input_grad: bool) -> tuple[torch.Tensor | None, torch.Tensor]:
    """The traced gradients of a conv :func:`takes` takes: its weight's, tap by tap at static
    sizes or where :func:`taps_at_every_size`; else (symbolic sizes) ``tessera.depthwise_backward``'s,
    which gives its input's too where ``input_grad`` (one library call for both where the
    plane is not small; None: left to the library's call)."""
    if all(isinstance(s, int) for s in x.shape[2:]) or taps_at_every_size(w, stride):
        return None, tapwise_weight_grad(grad, x, list(w.shape), stride, padding, dilation)
    channels_last = is_channels_last(x) or is_channels_last(w)
    gx, gw = torch.ops.tessera.depthwise_backward(grad, x, w, list(stride), list(padding), list(dilation),
                                                  input_grad, channels_last)
    return (gx if input_grad else None), gw


def taps_at_every_size(w: torch.Tensor, stride) -> bool:
    """Whether a depthwise weight gradient is summed tap by tap at every plane (a window of
    more than :data:`LIBRARY_TAPS` taps), each tap's window a slice that a symbolic plane
    still sizes (it ends a fixed count before the padded input's end: ``dim_sources``
    sizes it ``ceil((n + end - start) / stride)``), so that the taps are traced into the
    graph at symbolic sizes too."""
    return w.shape[2] * w.shape[3] > LIBRARY_TAPS


def tapwise_weight_grad(grad, x, weight_size, stride, padding, dilation):
    """A depthwise conv's weight gradient as one reduction per tap, each of ``dy`` times the
    window of the padded input that tap reads:

        dw[c, 0, i, j] = sum over n, y, x of dy[n, c, y, x] * pad(x)[n, c, y*s + i*d, x*s + j*d]

    The window of tap ``i`` (of ``k``) ends ``d * (k - 1 - i)`` before the padded input's
    end, a bound that needs no size (a symbolic plane's slices fuse): from ``i * d`` by
    ``s``, ``ceil((n + 2p - d * (k - 1)) / s)`` elements, the conv's output size."""
    kh, kw = weight_size[2], weight_size[3]
    (ph, pw), (sh, sw), (dh, dw) = padding, stride, dilation
    padded = aten.constant_pad_nd.default(x, [pw, pw, ph, ph], 0.0)
    taps = []
    for i in range(kh):
        rows = aten.slice.Tensor(padded, 2, i * dh, _window_end(i, kh, dh), sh)
        for j in range(kw):
            window = aten.slice.Tensor(rows, 3, j * dw, _window_end(j, kw, dw), sw)
            taps.append(aten.sum.dim_IntList(aten.mul.Tensor(grad, window), [0, 2, 3]))
    return aten.reshape.default(aten.stack.default(taps, 1), list(weight_size))


def _window_end(i: int, k: int, d: int) -> int:
    """The end of tap ``i``'s window: ``d * (k - 1 - i)`` before the padded end (to it for
    the last tap)."""
    return -d * (k - 1 - i) if i < k - 1 else sys.maxsize


def _depthwise_backward(dy: torch.Tensor, x: torch.Tensor, w: torch.Tensor, stride: list[int], padding: list[int],
                        dilation: list[int], input_grad: bool, channels_last: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The gradients at the sizes the op runs at: the weight's by taps where the static rule
    (:func:`takes`) would take them, compiled for these sizes once (eagerly where tessera
    does not compile them and the plane is smaller than the window), else with the input's
    in one ATen ``convolution_backward``; the weight's in the layout traced, the input's
    (empty unless ``input_grad``) as ATen gives it."""
    small = _smaller_than_window(x.shape[2:], w.shape[2:])
    taps = _taps_program(_geometry(dy), _geometry(x), tuple(w.shape), tuple(stride), tuple(padding),
                         tuple(dilation)) if small or w.shape[2] * w.shape[3] > LIBRARY_TAPS else None
    by_taps = taps is not None or small
    mask = [input_grad, not by_taps, False]
    gx, gw = _library(dy, x, w, stride, padding, dilation, mask) if any(mask) else (None, None)
    if taps is not None:
        (gw,) = taps(dy, x)
    elif small:
        gw = tapwise_weight_grad(dy, x, list(w.shape), stride, padding, dilation)
    return (gx if input_grad else x.new_empty(0)), in_layout(gw, channels_last)


def _geometry(t: torch.Tensor) -> tuple:
    return tuple(t.shape), t.stride(), t.dtype


@functools.lru_cache(maxsize=32)
def _taps_program(dy: tuple, x: tuple, weight_size: tuple[int, ...], stride: tuple[int, ...],
                  padding: tuple[int, ...], dilation: tuple[int, ...]) -> Callable | None:
    """The tap-by-tap weight gradient compiled for ``dy``'s and ``x``'s (sizes, strides, dtype)."""
    from .backend import compiled_at_sizes

    def taps(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return tapwise_weight_grad(a, b, list(weight_size), list(stride), list(padding), list(dilation))

    examples = [torch.empty_strided(size, strides, dtype=dtype) for size, strides, dtype in (dy, x)]
    return compiled_at_sizes(taps, *examples)


def _library(dy, x, w, stride, padding, dilation, mask):
    return aten.convolution_backward.default(dy, x, w, None, stride, padding, dilation, False, [0, 0], x.shape[1],
                                             mask)[:2]


depthwise_backward = torch.library.custom_op("tessera::depthwise_backward", _depthwise_backward, mutates_args=())

HOST_FUNCTIONS = {"tessera.depthwise_backward.default": _depthwise_backward}
"""What a host program calls for the op (the function, not through the dispatcher)."""


@depthwise_backward.register_fake
def _(dy, x, w, stride, padding, dilation, input_grad, channels_last):
    gx = _library(dy, x, w, stride, padding, dilation, [True, False, False])[0] if input_grad else x.new_empty(0)
    return gx, in_layout(w.new_empty(w.shape), channels_last)
