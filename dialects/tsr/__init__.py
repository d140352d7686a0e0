"""The ``tsr`` graph dialect: tensors whose types carry their physical layout.

    func.func @forward(%x: tensor<1x64x8x8xf32, #tsr.layout<nhwc>>) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>> {
      %y = tsr.silu %x : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
      func.return %y : tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
    }
"""

from xdsl.ir import Dialect

from .layout import LayoutAttr
from .ops_core import AtenCallOp, ConstantOp, ConvertOp, OperandRefAttr, RelayoutOp, TorchEnumAttr
from .ops_elementwise import *  # noqa: F403  (the op classes)
from .ops_elementwise import ELEMENTWISE_OPS
from .ops_fused import FUSED_OPS, FusedOp, LaunchOp, YieldOp  # noqa: F401 - re-exported as tsr.FusedOp & co.
from .ops_nn import *  # noqa: F403
from .ops_nn import NN_OPS
from .ops_polyphase import (  # noqa: F401 - re-exported as tsr.PolyphaseWeightOp & co.
    POLYPHASE_OPS,
    PolyphaseDim,
    PolyphaseInterleaveOp,
    PolyphaseWeightOp,
)
from .ops_shape import *  # noqa: F403
from .ops_shape import SHAPE_OPS

CORE_OPS = (ConstantOp, ConvertOp, RelayoutOp, AtenCallOp)

TSR = Dialect(
    "tsr",
    [*CORE_OPS, *ELEMENTWISE_OPS, *SHAPE_OPS, *NN_OPS, *POLYPHASE_OPS, *FUSED_OPS],
    [LayoutAttr, OperandRefAttr, TorchEnumAttr],
)
