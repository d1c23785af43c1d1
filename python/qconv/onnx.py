# SPDX-License-Identifier: Apache-2.0
"""ONNX face: ``QLinearConv``, ``ConvInteger`` and an integer ``ConvTranspose``, with ONNX's input
names, attribute names and defaults (as onnx.reference and onnxruntime take them).

Tensors are NCHW, weights OIHW (ConvTranspose: ``[C_in, C_out/group, kh, kw]``). ``pads`` is
ONNX's ``[top, left, bottom, right]`` (x1_begin, x2_begin, x1_end, x2_end). ``auto_pad`` is
``NOTSET`` (use pads), ``VALID`` (no padding), ``SAME_UPPER`` or ``SAME_LOWER``: total padding
``max(0, (ceil(in/s) - 1)*s + (k-1)*d + 1 - in)``, the odd extra at the end (UPPER) or the
beginning (LOWER). Padding always stands for the real value 0 (it reads as the zero point).
"""

import numpy as np

from ._qconv import InvalidArgument
from ._qconv import onnx_conv_integer as _conv_integer
from ._qconv import onnx_conv_transpose_integer as _conv_transpose_integer
from ._qconv import onnx_qlinear_conv as _qlinear_conv

__all__ = ["conv_integer", "conv_transpose_integer", "qlinear_conv"]


def _y_dtype(y_zero_point):
    """ONNX's rule: y has y_zero_point's element type (uint8 when it carries none)."""
    if isinstance(y_zero_point, (np.ndarray, np.generic)):
        if y_zero_point.dtype in (np.uint8, np.int8):
            return y_zero_point.dtype.name
        raise InvalidArgument(f"y_zero_point.dtype = {y_zero_point.dtype}: must be uint8 or int8 "
                              "(it is the output's element type)")
    return "uint8"


def qlinear_conv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point,
                 B=None, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None,
                 strides=None, *, semantics="reference", threads=1):
    """``y = QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
    y_zero_point, B)``, with the numbers of the ONNX reference implementation (the default) or
    of ONNX Runtime (``semantics="onnxruntime"``). Both start from the exact accumulator plus B
    and the multiplier ``m = f32(f32(x_scale*w_scale) / y_scale)``:

    - ``"reference"`` (SPEC §4 ``onnx``): ``R = acc * m + y_zero_point`` in double, clipped to
      y's range, then rounded half to even: the zero point is added *before* rounding.
    - ``"onnxruntime"`` (SPEC §4 ``onnxruntime``, ONNX Runtime's CPU kernels):
      ``clip(rne(f32(f32(acc) * m)) + y_zero_point)``, all in float32: the zero point is added
      *after* rounding.

    The two differ by 1 on exact ties when y_zero_point is odd (``acc * m = 2.5``,
    ``y_zero_point = 1``: 4 with ``"reference"``, 3 with ``"onnxruntime"``), where the float32
    product rounds onto or across a half, and where ``|acc + B| > 2**24`` (float32 drops the low
    bits of the accumulator). Elsewhere they agree.

    Parameters
    ----------
    x : numpy.ndarray
        uint8 or int8, ``[N, C, H, W]``.
    x_scale, x_zero_point : float, int
    w : numpy.ndarray
        uint8 or int8, ``[M, C/group, kh, kw]``.
    w_scale, w_zero_point : float / int or 1-D arrays
        One value or one per output channel (M).
    y_scale : float
    y_zero_point : numpy uint8 or int8 scalar (or int)
        Its dtype is y's dtype, as in ONNX; a plain int means uint8.
    B : 1-D int32 array or None
        M values added to the accumulator.
    auto_pad : "NOTSET", "VALID", "SAME_UPPER" or "SAME_LOWER"
    dilations, strides : [h, w] or None (all 1)
    group : int
    kernel_shape : [kh, kw] or None
        None takes it from w; otherwise it must agree.
    pads : [top, left, bottom, right] or None (all 0)
    semantics : "reference" or "onnxruntime"
        qconv's keyword: whose numbers to give, as above.
    threads : int
        qconv's keyword: worker threads (0 = all hardware threads).

    Returns
    -------
    numpy.ndarray ``[N, M, OH, OW]`` of y_zero_point's dtype.

    Raises
    ------
    InvalidArgument
        Bad attributes, scales, zero points or dtypes.
    ShapeMismatch
        A w or B whose shape disagrees with x, group or kernel_shape.
    OverflowRisk
        The accumulator could leave int32.
    """
    return _qlinear_conv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
                         y_zero_point, B, auto_pad, dilations, group, kernel_shape, pads, strides,
                         threads, _y_dtype(y_zero_point), semantics)


def conv_integer(x, w, x_zero_point=None, w_zero_point=None, auto_pad="NOTSET", dilations=None,
                 group=1, kernel_shape=None, pads=None, strides=None, *, threads=1):
    """``y = ConvInteger(x, w, x_zero_point, w_zero_point)``: the exact int32 accumulator
    ``sum (x - x_zero_point) * (w - w_zero_point[m])``.

    Parameters
    ----------
    x, w : numpy.ndarray
        uint8 or int8, NCHW and ``[M, C/group, kh, kw]``.
    x_zero_point : int or None (0)
    w_zero_point : int, 1-D array (one per output channel) or None (0)
    auto_pad, dilations, group, kernel_shape, pads, strides, threads
        As :func:`qlinear_conv`.

    Returns
    -------
    numpy.ndarray of int32, ``[N, M, OH, OW]``.

    Raises
    ------
    InvalidArgument, ShapeMismatch, OverflowRisk
        As :func:`qlinear_conv`.
    """
    return _conv_integer(x, w, x_zero_point, w_zero_point, auto_pad, dilations, group,
                         kernel_shape, pads, strides, threads)


def conv_transpose_integer(x, w, x_zero_point=None, w_zero_point=None, auto_pad="NOTSET",
                           dilations=None, group=1, kernel_shape=None, output_padding=None,
                           output_shape=None, pads=None, strides=None, *, threads=1):
    """The integer transposed convolution: ``ConvTranspose``'s attributes with ``ConvInteger``'s
    zero points; the exact int32 accumulator.

    Parameters
    ----------
    x : numpy.ndarray
        uint8 or int8, ``[N, C, H, W]``.
    w : numpy.ndarray
        uint8 or int8, ``[C, M/group, kh, kw]``.
    x_zero_point, w_zero_point
        As :func:`conv_integer`.
    output_padding : [h, w] or None (0)
        Extra rows at the bottom and columns at the right.
    output_shape : [OH, OW] or None
        When given, the pads are derived from it by ONNX's rules.
    auto_pad, dilations, group, kernel_shape, pads, strides, threads
        As :func:`qlinear_conv`; pads are removed from the full output.

    Returns
    -------
    numpy.ndarray of int32, ``[N, M, OH, OW]`` with
    ``OH = s*(H-1) + op + (kh-1)*d + 1 - top - bottom``.

    Raises
    ------
    InvalidArgument, ShapeMismatch, OverflowRisk
        As :func:`qlinear_conv`.
    """
    return _conv_transpose_integer(x, w, x_zero_point, w_zero_point, auto_pad, dilations, group,
                                   kernel_shape, pads, strides, threads, output_padding,
                                   output_shape)
