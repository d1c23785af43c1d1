# SPDX-License-Identifier: Apache-2.0
"""TVM QNN face: ``tvm.relay.qnn.op.conv2d``, ``conv2d_transpose`` and ``requantize``, with TVM's
argument names, order, defaults and conventions.

Port a call by changing the module: ``relay.qnn.op.conv2d(data, kernel, ...)`` becomes
``qconv.qnn.conv2d(data, kernel, ...)`` with NumPy arrays for the tensors and plain numbers (or
1-D arrays, per channel) for the scales and zero points. The convolutions return TVM's int32
accumulator (scales are metadata only); ``requantize`` turns it into int8/uint8.

Padding is TVM's: ``p``, ``(pad_h, pad_w)``, or four values ``(top, left, bottom, right)``.
Padding always stands for the real value 0 (it reads as the input zero point).
"""

from ._qconv import qnn_conv2d as _conv2d
from ._qconv import qnn_conv2d_transpose as _conv2d_transpose
from ._qconv import qnn_requantize as _requantize

__all__ = ["conv2d", "conv2d_transpose", "requantize"]


def conv2d(data, kernel, input_zero_point, kernel_zero_point, input_scale, kernel_scale,
           kernel_size, channels, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
           data_layout="NCHW", kernel_layout="OIHW", out_layout="", out_dtype="int32", *,
           allow_wraparound=False, threads=1):
    """Quantized 2-D convolution, as ``relay.qnn.op.conv2d``: the exact int32 accumulator

        out[n, o, y, x] = sum over c in group(o), r, s of
                          (data[n, c, y*sh + r*dh - top, x*sw + s*dw - left] - input_zero_point)
                          * (kernel[o, c, r, s] - kernel_zero_point[o])

    Parameters
    ----------
    data : numpy.ndarray
        uint8 or int8 activations in ``data_layout`` (``NCHW`` or ``NHWC``).
    kernel : numpy.ndarray
        uint8 or int8 weights in ``kernel_layout``: ``OIHW``, ``OHWI``, ``HWIO``, or ``HWOI``
        (depthwise NHWC: ``[kh, kw, C, multiplier]``), with ``I = C_in / groups``.
    input_zero_point : int
    kernel_zero_point : int or 1-D array
        One value or one per output channel.
    input_scale, kernel_scale : float (kernel_scale: or 1-D array)
        Metadata only here (the output scale is ``input_scale * kernel_scale``), but checked.
    kernel_size : (kh, kw)
    channels : int
        C_out; must agree with the kernel's shape, as must kernel_size.
    strides, dilation : int or (h, w)
    padding : int, (pad_h, pad_w) or (top, left, bottom, right)
    groups : int
        Divides C_in and C_out; ``groups == C_in`` is depthwise.
    data_layout, kernel_layout, out_layout : str
        ``out_layout=""`` means ``data_layout``.
    out_dtype : str
        ``"int32"``.
    allow_wraparound : bool
        qconv's keyword: accept problems whose accumulator may leave int32 and wrap it
        (what TVM silently does); refused with OverflowRisk by default.
    threads : int
        qconv's keyword: worker threads (0 = all hardware threads).

    Returns
    -------
    numpy.ndarray of int32 in ``out_layout``, with
    ``OH = (H + top + bottom - dh*(kh-1) - 1) // sh + 1`` (likewise OW).

    Raises
    ------
    InvalidArgument
        Bad sizes, strides, dilations, padding, groups, layouts, dtypes, scales or zero points.
    ShapeMismatch
        A kernel whose shape disagrees with channels, kernel_size or groups.
    OverflowRisk
        The accumulator could leave int32 (unless allow_wraparound).
    """
    return _conv2d(data, kernel, input_zero_point, kernel_zero_point, input_scale, kernel_scale,
                   kernel_size, channels, strides, padding, dilation, groups, data_layout,
                   kernel_layout, out_layout, out_dtype, allow_wraparound, threads)


def conv2d_transpose(data, weight, input_zero_point, kernel_zero_point, input_scale,
                     kernel_scale, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                     channels=None, kernel_size=None, data_layout="NCHW", kernel_layout="IOHW",
                     out_layout="", output_padding=(0, 0), out_dtype="int32", *,
                     allow_wraparound=False, threads=1):
    """Quantized 2-D transposed convolution, as ``relay.qnn.op.conv2d_transpose``: the exact
    int32 accumulator; every input element (minus input_zero_point) scatters
    ``(weight - kernel_zero_point)`` into the output at ``h*sh + r*dh - top``,
    ``w*sw + s*dw - left``.

    Parameters
    ----------
    data : numpy.ndarray
        uint8 or int8 activations in ``data_layout``.
    weight : numpy.ndarray
        uint8 or int8, ``IOHW`` (``[C_in, C_out/groups, kh, kw]``, TVM's and PyTorch's transposed
        layout) or ``OIHW``.
    input_zero_point, kernel_zero_point, input_scale, kernel_scale
        As :func:`conv2d`.
    strides, dilation : int or (h, w)
    padding : int, (pad_h, pad_w) or (top, left, bottom, right)
        Rows and columns removed from the full output.
    groups : int
    channels : int or None
        C_out; None takes it from the weight, otherwise it must agree.
    kernel_size : (kh, kw) or None
        None takes it from the weight, otherwise it must agree.
    data_layout, kernel_layout, out_layout, out_dtype
        As :func:`conv2d`.
    output_padding : int or (h, w)
        Extra rows at the bottom and columns at the right; ``0 <= op < max(stride, dilation)``.
    allow_wraparound, threads
        As :func:`conv2d`.

    Returns
    -------
    numpy.ndarray of int32, with ``OH = sh*(H-1) + dh*(kh-1) + 1 - top - bottom + op_h``.

    Raises
    ------
    InvalidArgument, ShapeMismatch, OverflowRisk
        As :func:`conv2d`; also an output_padding out of range.
    """
    return _conv2d_transpose(data, weight, input_zero_point, kernel_zero_point, input_scale,
                             kernel_scale, strides, padding, dilation, groups, channels,
                             kernel_size, data_layout, kernel_layout, out_layout, output_padding,
                             out_dtype, allow_wraparound, threads)


def requantize(data, input_scale, input_zero_point, output_scale, output_zero_point, axis=-1,
               rounding="UPWARD", compute_dtype="int64", out_dtype="int8"):
    """Requantization, as ``relay.qnn.op.requantize``: ``(data - input_zero_point) *
    input_scale / output_scale + output_zero_point``, rounded and clamped to ``out_dtype``.

    Parameters
    ----------
    data : numpy.ndarray
        int32 values (other integer dtypes are converted when every value fits), any shape.
    input_scale : float or 1-D array
        One value, or one per index of ``axis`` (per channel).
    input_zero_point : int
    output_scale : float
    output_zero_point : int
    axis : int
        The channel axis of a per-channel input_scale (negative counts from the end).
    rounding : "UPWARD" or "TONEAREST"
        Ties go toward +infinity (UPWARD) or away from zero (TONEAREST).
    compute_dtype : "int64" or "float32"
        TVM's integer path (a Q31 fixed-point multiplier from ``frexp(input_scale /
        output_scale)``, 64-bit products, a rounding right shift) or its float path
        (``f32(f32(value) * f32(M)) + zy``, then ``floor(v + 0.5)`` for UPWARD or half away from
        zero for TONEAREST).
    out_dtype : "int8", "uint8" or "int32"

    Returns
    -------
    numpy.ndarray of ``out_dtype``, the shape of ``data``.

    Raises
    ------
    InvalidArgument
        Bad scales, zero points, axis, rounding, compute_dtype or out_dtype, or a per-channel
        input_scale whose length is not that of ``axis``.
    """
    return _requantize(data, input_scale, input_zero_point, output_scale, output_zero_point, axis,
                       rounding, compute_dtype, out_dtype)
