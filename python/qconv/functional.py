# SPDX-License-Identifier: Apache-2.0
"""PyTorch face: ``torch.ao.nn.quantized.functional.conv2d`` and a quantized ``conv_transpose2d``,
with PyTorch's argument names, order and defaults.

Port a call by changing the module: ``qF.conv2d(x, w, b, ...)`` becomes
``qconv.functional.conv2d(x, w, b, ...)``. Inputs are PyTorch quantized tensors (the result is one
too) or :class:`qconv.QuantizedArray` (the result is one too); torch is not needed for the latter.

Which PyTorch engine's arithmetic is computed is chosen with ``engine``, as
``torch.backends.quantized.engine`` chooses it in PyTorch (SPEC §4). By default (``engine=None``)
it **follows** ``torch.backends.quantized.engine`` when the input is a PyTorch tensor, so that a
program ported by changing only the import computes the numbers it computed before; with
:class:`qconv.QuantizedArray` inputs (or a torch engine qconv does not know, such as ``"none"``)
the default is ``"fbgemm"``, PyTorch's default on x86:

- ``"fbgemm"`` (also PyTorch's ``x86``): ``t = f32(sx*sw)``, ``m = f32(t/sy)``,
  ``q = rne(f32((f32(acc) + f32(b/t)) * m)) + zy``, clamped.
- ``"qnnpack"``: the float bias is first quantized to int32 with scale ``sw*sx``;
  ``q = rne(f32(f32(acc + bq) * m)) + zy``, clamped; ``|v| >= 2**31`` gives the lowest output,
  as PyTorch's qnnpack does.
- ``"onednn"``: reciprocal scales, the bias stays float and the zero point is added in float
  before rounding: ``q = rne(clamp(f32(v + zy)))``.

(``rne``: round half to even; ``acc``: the exact integer accumulator; ``sx``, ``sw``, ``sy``: input,
weight and output scales.) Padding always stands for the real value 0 (the input zero point).

The other defaults follow PyTorch too when PyTorch tensors come in: ``threads`` defaults to
``torch.get_num_threads()`` (1 otherwise), and the result is a channels_last tensor, as PyTorch's
quantized convolutions return (its values are the same whatever the memory format).
"""

import sys
from typing import Any, Optional, Sequence, Tuple, Union

from ._qconv import functional_conv2d as _conv2d
from ._qconv import functional_conv_transpose2d as _conv_transpose2d
from ._tensors import dtype_name, float_array, is_torch_tensor, pack, unpack

__all__ = ["conv2d", "conv_transpose2d"]

#: An int, or an (h, w) pair, as PyTorch takes stride, padding and dilation.
IntOrPair = Union[int, Sequence[int]]

# PyTorch's quantized engines whose arithmetic qconv computes (x86 computes fbgemm's formula).
_ENGINES = ("fbgemm", "x86", "qnnpack", "onednn")


def _defaults(input: Any, engine: Optional[str], threads: Optional[int]) -> Tuple[str, int]:
    """The engine and thread count a call runs with: the given ones, else PyTorch's settings
    when ``input`` is a PyTorch tensor, else fbgemm and one thread."""
    torch = sys.modules.get("torch") if is_torch_tensor(input) else None
    torch_engine = torch.backends.quantized.engine if torch is not None else None
    if engine is None:
        engine = torch_engine if torch_engine in _ENGINES else "fbgemm"
    if threads is None:
        threads = torch.get_num_threads() if torch is not None else 1
    # Given values go on as they are: the module checks each by name (a TypeError or an
    # InvalidArgument naming `engine` or `threads`), where str() or int() would hide a wrong type.
    return engine, threads


def conv2d(input: Any, weight: Any, bias: Any, stride: IntOrPair = 1, padding: IntOrPair = 0,
           dilation: IntOrPair = 1, groups: int = 1, padding_mode: str = "zeros",
           scale: float = 1.0, zero_point: int = 0, dtype: Any = "quint8", *,
           engine: Optional[str] = None, relu: bool = False,
           threads: Optional[int] = None) -> Any:
    """Quantized 2-D convolution, as ``torch.ao.nn.quantized.functional.conv2d``.

    Parameters
    ----------
    input : torch quantized tensor or QuantizedArray
        ``[N, C_in, H, W]`` (NCHW), quint8 (uint8 values) or qint8 (int8), per-tensor quantized.
    weight : torch quantized tensor or QuantizedArray
        ``[C_out, C_in/groups, kh, kw]`` (OIHW), qint8 (or quint8), per tensor or per channel on
        axis 0.
    bias : float array, torch float tensor or None
        ``C_out`` real values, added before the output scale is applied (see the engines above).
    stride, padding, dilation : int or (h, w)
        ``padding`` is ``p`` (every side) or ``(pad_h, pad_w)``: top = bottom = pad_h,
        left = right = pad_w. Padding reads as the input zero point.
    groups : int
        Divides C_in and C_out; ``groups == C_in`` is depthwise.
    padding_mode : str
        Only ``"zeros"``, as in PyTorch; anything else raises InvalidArgument.
    scale, zero_point : float, int
        The output's quantization.
    dtype : torch.quint8, torch.qint8 or "quint8", "qint8"
        The output dtype.
    engine : "fbgemm", "x86", "qnnpack", "onednn" or None
        Whose arithmetic is computed (qconv's keyword; PyTorch sets it globally). None (the
        default): ``torch.backends.quantized.engine`` when ``input`` is a PyTorch tensor and
        that engine is one of these, otherwise "fbgemm".
    relu : bool
        Fuse a ReLU as ``torch.ops.quantized.conv2d_relu`` does (output >= zero_point).
    threads : int or None
        Worker threads (qconv's keyword; 0 = all hardware threads). None (the default):
        ``torch.get_num_threads()`` when ``input`` is a PyTorch tensor, otherwise 1. Results
        never depend on it.

    Returns
    -------
    A torch quantized tensor (``[N, C_out, OH, OW]``, per tensor, channels_last memory format as
    PyTorch returns it) when ``input`` is a torch tensor, otherwise a QuantizedArray (NCHW); with ``OH = (H + 2*pad_h - dilation_h*(kh-1) - 1) //
    stride_h + 1``.

    Raises
    ------
    InvalidArgument
        Bad sizes, strides, dilations, padding, groups, padding_mode, engine, dtype, scales
        (<= 0, NaN, infinite, subnormal) or zero points (outside the dtype's range).
    ShapeMismatch
        A weight or bias whose shape disagrees with the input, groups or per-channel length.
    OverflowRisk
        The exact accumulator could leave int32 for these zero points and weights.
    """
    engine, threads = _defaults(input, engine, threads)
    x, sx, zx, x_axis = unpack(input, "input")
    w, sw, zw, w_axis = unpack(weight, "weight")
    values, out_scale, out_zero_point = _conv2d(
        x, sx, zx, x_axis, w, sw, zw, w_axis, float_array(bias), stride, padding, dilation, groups,
        scale, zero_point, dtype_name(dtype), engine, relu, threads, padding_mode)
    return pack(values, out_scale, out_zero_point, input)


def conv_transpose2d(input: Any, weight: Any, bias: Any = None, stride: IntOrPair = 1,
                     padding: IntOrPair = 0, output_padding: IntOrPair = 0, groups: int = 1,
                     dilation: IntOrPair = 1, scale: float = 1.0, zero_point: int = 0,
                     dtype: Any = "quint8", *, engine: Optional[str] = None, relu: bool = False,
                     threads: Optional[int] = None) -> Any:
    """Quantized 2-D transposed convolution, as PyTorch's ``quantized::conv_transpose2d``
    (argument order of ``torch.nn.functional.conv_transpose2d``).

    Parameters
    ----------
    input : torch quantized tensor or QuantizedArray
        ``[N, C_in, H, W]`` (NCHW), quint8 or qint8, per tensor.
    weight : torch quantized tensor or QuantizedArray
        ``[C_in, C_out/groups, kh, kw]`` (IOHW, PyTorch's transposed layout), per tensor, or per
        output channel along axis 1 when groups == 1 (as PyTorch quantizes it).
    bias : float array, torch float tensor or None
        ``C_out`` real values.
    stride, padding, output_padding, dilation : int or (h, w)
        ``padding`` ``(pad_h, pad_w)`` removes pad_h rows at the top and at the bottom of the
        full output; ``output_padding`` adds rows at the bottom and columns at the right and
        must satisfy ``0 <= output_padding < max(stride, dilation)``.
    groups : int
        Divides C_in and C_out.
    scale, zero_point, dtype, engine, relu, threads
        As :func:`conv2d`.

    Returns
    -------
    As :func:`conv2d`, with ``OH = stride_h*(H-1) + dilation_h*(kh-1) + 1 - 2*pad_h +
    output_padding_h``.

    Raises
    ------
    InvalidArgument, ShapeMismatch, OverflowRisk
        As :func:`conv2d`; also an output_padding out of range.
    """
    engine, threads = _defaults(input, engine, threads)
    x, sx, zx, x_axis = unpack(input, "input")
    w, sw, zw, w_axis = unpack(weight, "weight")
    values, out_scale, out_zero_point = _conv_transpose2d(
        x, sx, zx, x_axis, w, sw, zw, w_axis, float_array(bias), stride, padding, dilation, groups,
        scale, zero_point, dtype_name(dtype), engine, relu, threads, output_padding)
    return pack(values, out_scale, out_zero_point, input)
