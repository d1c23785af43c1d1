# SPDX-License-Identifier: Apache-2.0
"""qconv: exact quantized 2-D convolution with the frameworks' own call signatures.

Each face computes its framework's semantics bit for bit, so that a call is ported by changing
the module name:

- ``qconv.qnn``: TVM's ``relay.qnn.op`` (``conv2d``, ``conv2d_transpose``, ``requantize``);
- ``qconv.functional``: PyTorch's ``torch.ao.nn.quantized.functional`` (``conv2d``,
  ``conv_transpose2d``), with the fbgemm, qnnpack or onednn engine's arithmetic;
- ``qconv.prepare_conv_weights``, ``qconv.prepare_conv_bias``, ``qconv.conv2d``: tt-metal's ttnn,
  with weights prepared once and checked against every later call;
- ``qconv.onnx``: ONNX ``QLinearConv``, ``ConvInteger`` and an integer ``ConvTranspose``.

Arrays are NumPy arrays; an argument that already is C-contiguous, aligned and of the right dtype
is read in place, anything else is copied first. The computation runs without the GIL.

Every error is a :class:`qconv.Error` (a :class:`ValueError`) of the C++ class's name, with the
C++ message, which names the argument, the value given and the rule broken.
"""

from ._qconv import (
    Error,
    FormatError,
    InvalidArgument,
    OverflowRisk,
    PreparedMismatch,
    ShapeMismatch,
)
from ._tensors import QuantizedArray
from ._version import __version__
from . import functional, onnx, qnn, ttnn
from .ttnn import (
    ComputeConfig,
    Conv2dConfig,
    PreparedBias,
    PreparedWeights,
    conv2d,
    prepare_conv_bias,
    prepare_conv_weights,
)

for _error in (Error, InvalidArgument, ShapeMismatch, OverflowRisk, PreparedMismatch, FormatError):
    _error.__module__ = __name__
del _error

__all__ = [
    "ComputeConfig",
    "Conv2dConfig",
    "Error",
    "FormatError",
    "InvalidArgument",
    "OverflowRisk",
    "PreparedBias",
    "PreparedMismatch",
    "PreparedWeights",
    "QuantizedArray",
    "__version__",
    "ShapeMismatch",
    "conv2d",
    "functional",
    "onnx",
    "prepare_conv_bias",
    "prepare_conv_weights",
    "qnn",
    "ttnn",
]
