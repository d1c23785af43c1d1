"""PyTorch face: ``torch.ao.nn.quantized.functional.conv2d`` and a quantized ``conv_transpose2d``,
with PyTorch's argument names, order and defaults.

Port a call by changing the module: ``qF.conv2d(x, w, b, ...)`` becomes
``qconv.functional.conv2d(x, w, b, ...)``. Inputs are PyTorch quantized tensors (the result is one
too) or :class:`qconv.QuantizedArray` (the result is one too); torch is not needed for the latter.

Which PyTorch engine's arithmetic is computed is chosen with ``engine``, as
``torch.backends.quantized.engine`` chooses it in PyTorch (SPEC §4):

- ``"fbgemm"`` (default; also PyTorch's ``x86``): ``t = f32(sx*sw)``, ``m = f32(t/sy)``,
  ``q = rne(f32((f32(acc) + f32(b/t)) * m)) + zy``, clamped.
- ``"qnnpack"``: the float bias is first quantized to int32 with scale ``sw*sx``;
  ``q = rne(f32(f32(acc + bq) * m)) + zy``, clamped; ``|v| >= 2**31`` gives the lowest output,
  as PyTorch's qnnpack does.
- ``"onednn"``: reciprocal scales, the bias stays float and the zero point is added in float
  before rounding: ``q = rne(clamp(f32(v + zy)))``.

(``rne``: round half to even; ``acc``: the exact integer accumulator; ``sx``, ``sw``, ``sy``: input,
weight and output scales.) Padding always stands for the real value 0 (the input zero point).
"""

from ._qconv import functional_conv2d as _conv2d
from ._qconv import functional_conv_transpose2d as _conv_transpose2d
from ._tensors import dtype_name, float_array, pack, unpack

__all__ = ["conv2d", "conv_transpose2d"]


def conv2d(input, weight, bias, stride=1, padding=0, dilation=1, groups=1, padding_mode="zeros",
           scale=1.0, zero_point=0, dtype="quint8", *, engine="fbgemm", relu=False, threads=1):
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
    engine : "fbgemm", "qnnpack" or "onednn"
        Whose arithmetic is computed (qconv's keyword; PyTorch sets it globally).
    relu : bool
        Fuse a ReLU as ``torch.ops.quantized.conv2d_relu`` does (output >= zero_point).
    threads : int
        Worker threads (qconv's keyword; 0 = all hardware threads). Results never depend on it.

    Returns
    -------
    A torch quantized tensor (``[N, C_out, OH, OW]``, per tensor) when ``input`` is a torch
    tensor, otherwise a QuantizedArray; with ``OH = (H + 2*pad_h - dilation_h*(kh-1) - 1) //
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
    x, sx, zx, x_axis = unpack(input, "input")
    w, sw, zw, w_axis = unpack(weight, "weight")
    values, out_scale, out_zero_point = _conv2d(
        x, sx, zx, x_axis, w, sw, zw, w_axis, float_array(bias), stride, padding, dilation, groups,
        scale, zero_point, dtype_name(dtype), engine, relu, threads, padding_mode)
    return pack(values, out_scale, out_zero_point, input)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1, scale=1.0, zero_point=0, dtype="quint8", *, engine="fbgemm",
                     relu=False, threads=1):
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
    x, sx, zx, x_axis = unpack(input, "input")
    w, sw, zw, w_axis = unpack(weight, "weight")
    values, out_scale, out_zero_point = _conv_transpose2d(
        x, sx, zx, x_axis, w, sw, zw, w_axis, float_array(bias), stride, padding, dilation, groups,
        scale, zero_point, dtype_name(dtype), engine, relu, threads, output_padding)
    return pack(values, out_scale, out_zero_point, input)
