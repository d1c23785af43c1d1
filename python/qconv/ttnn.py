# SPDX-License-Identifier: Apache-2.0
"""Preparation face after tt-metal's ttnn: ``prepare_conv_weights`` and ``prepare_conv_bias``
once, then ``conv2d`` with the prepared objects (or with raw weights, prepared on the way).
These are also ``qconv.prepare_conv_weights``, ``qconv.prepare_conv_bias`` and ``qconv.conv2d``.

Padding is ttnn's: ``p``, ``(pad_h, pad_w)``, or four values ``(top, bottom, left, right)``.

Unlike ttnn, which silently computes garbage when weights prepared for one configuration are
used with another, a prepared object records everything it was prepared for and ``conv2d``
raises PreparedMismatch naming the field, the prepared value and the given one. Fixed at
preparation: every argument of ``prepare_conv_weights`` except ``batch_size`` (free per call)
and ``compute_config.input_zero_point`` (overridable per call with
``conv_config.input_zero_point``).

Shapes are ttnn's: ``conv2d`` returns an NHWC output as ``[1, 1, N·H·W, C]`` (an NCHW one,
qconv's own option, as ``[N, C, H, W]``) and takes an NHWC input either as ``[N, H, W, C]`` or in
that flattened form, so one call's output feeds the next. ``return_output_dim`` and
``return_weights_and_bias`` add ``(out_height, out_width)`` and ``(weights, bias)`` to a tuple,
in that order, as ttnn.

ttnn's keywords are accepted so that a ttnn program ports by changing its import
(``import qconv.ttnn as ttnn``): ``input_dtype`` and ``output_dtype`` (``prepare_conv_weights``,
``prepare_conv_bias``) and ``dtype`` (``conv2d``) set ``conv_config.input_dtype`` and
``conv_config.dtype``; the device-only ones, ``device``, ``memory_config``,
``input_memory_config`` and ``slice_config`` (DRAM slicing, which splits the work but not the
numbers), are ignored: qconv runs on the host CPU. A dtype qconv cannot compute in (ttnn's
``bfloat16``, ``float32``, ``bfloat8_b``, ...) would change the numbers, and raises
InvalidArgument. ``ROW_MAJOR_LAYOUT`` and ``TILE_LAYOUT`` (ttnn's memory layouts) name the
activations' ``[N, H, W, C]`` layout, ``NHWC``. The module also has ttnn's dtype names
(``uint8``, ``int8``, ``int32``, ...) and memory configs (``DRAM_MEMORY_CONFIG``,
``L1_MEMORY_CONFIG``) for such programs to name.
"""

import numpy as np

from . import _qconv
from ._qconv import (ComputeConfig, Conv2dConfig, InvalidArgument, PreparedBias,
                     PreparedMismatch, PreparedWeights)
from ._tensors import QuantizedArray, dtype_name, float_array, is_torch_tensor, unpack

__all__ = [
    "ComputeConfig",
    "Conv2dConfig",
    "DRAM_MEMORY_CONFIG",
    "L1_MEMORY_CONFIG",
    "PreparedBias",
    "PreparedWeights",
    "ROW_MAJOR_LAYOUT",
    "TILE_LAYOUT",
    "bfloat16",
    "bfloat4_b",
    "bfloat8_b",
    "conv2d",
    "float32",
    "int32",
    "int8",
    "prepare_conv_bias",
    "prepare_conv_weights",
    "uint16",
    "uint32",
    "uint8",
]

# ttnn's names, for a program ported by its import. The dtypes qconv computes in...
uint8 = "uint8"
int8 = "int8"
int32 = "int32"
# ... and those it cannot: naming one as an input or output dtype raises InvalidArgument.
bfloat16 = "bfloat16"
float32 = "float32"
bfloat8_b = "bfloat8_b"
bfloat4_b = "bfloat4_b"
uint16 = "uint16"
uint32 = "uint32"
# ttnn's memory layouts of an [N, H, W, C] tensor on the device: both are NHWC here.
ROW_MAJOR_LAYOUT = "ROW_MAJOR"
TILE_LAYOUT = "TILE"
# ttnn's memory configs: device-only, ignored.
DRAM_MEMORY_CONFIG = "DRAM"
L1_MEMORY_CONFIG = "L1"

_DTYPES = {"input_dtype": ("uint8", "int8"), "output_dtype": ("uint8", "int8", "int32"),
           "dtype": ("uint8", "int8", "int32")}
_TTNN_LAYOUTS = {"ROW_MAJOR", "ROW_MAJOR_LAYOUT", "TILE", "TILE_LAYOUT", "Layout.ROW_MAJOR",
                 "Layout.TILE"}

Conv2dConfig.__module__ = ComputeConfig.__module__ = "qconv"
PreparedWeights.__module__ = PreparedBias.__module__ = "qconv"
Conv2dConfig.__doc__ = """What the caller may steer (ttnn's Conv2dConfig), keyword arguments only:

- ``activation``: ``""``, ``"relu"`` or ``"clamp"``; ``clamp``: its real bounds ``(lo, hi)``;
- ``input_dtype``: ``"uint8"`` or ``"int8"``, the activations' type;
- ``output_layout``: ``"NHWC"`` (default) or ``"NCHW"``; ``dtype``: the output's type,
  ``"uint8"``, ``"int8"`` or ``"int32"``;
- ``threads``: worker threads (0 = all hardware threads); results never depend on it;
- ``algorithm``: ``"auto"`` or an engine name (``"reference"``);
- ``input_zero_point``: a per-call override (``conv2d`` only) of compute_config's;
- ``allow_wraparound``: accept an accumulator that may leave int32 and wrap it.
"""
ComputeConfig.__doc__ = """The output scheme and the activations' quantization (ttnn's
compute_config), keyword arguments only:

- ``scheme``: ``int32``, ``fbgemm``, ``qnnpack``, ``onednn``, ``onnx``, ``onnxruntime``,
  ``tvm``, ``tvm_f32``, ``tflite`` or ``tflite_single`` (SPEC §4); ``rounding``: ``UPWARD`` or
  ``TONEAREST`` (tvm);
- ``input_scale``, ``input_zero_point``, ``output_scale``, ``output_zero_point``;
- ``multiplier_q31``, ``shift``: the tflite schemes' fixed-point multipliers, when given
  directly (one, or one per output channel).
"""
PreparedWeights.__doc__ = """Weights prepared once for one convolution (see prepare_conv_weights):
immutable, shareable between threads; ``engine`` and ``describe()`` say what runs them.

On disk: ``w.save(path, keep_original_weights=False)`` writes a versioned, checksummed file
atomically (a temporary file, fsync, rename); ``PreparedWeights.load(path)`` reads one back and
raises FormatError for a truncated, corrupted, newer-version or wrong-CPU file (with
``keep_original_weights=True`` a machine lacking the packed form's CPU features re-packs instead).
``to_bytes()`` / ``PreparedWeights.from_bytes(data)`` do the same in memory. A file the system
refuses to read or write raises OSError."""
PreparedBias.__doc__ = """A bias checked against the convolution it was prepared for."""


# The axis of each weights_format that holds the output channels (HWOI's output channels are
# C * multiplier over its axes 2 and 3: one axis holds them only when the multiplier is 1).
_OUTPUT_AXIS = {"OIHW": 0, "OHWI": 0, "HWIO": 3, "HWOI": 2}


def _weights(weight_tensor, weights_format):
    """(values, scale, zero_point) of raw weights: a QuantizedArray, a PyTorch quantized tensor
    or a plain integer array (scale 1, zero point 0). Per-channel values must lie along the
    weights' output-channel axis: the face takes one scale per output channel, so weights
    quantized along another axis are refused (they cannot be folded into the output)."""
    if isinstance(weight_tensor, QuantizedArray) or is_torch_tensor(weight_tensor):
        values, scale, zero_point, axis = unpack(weight_tensor, "weight_tensor")
        per_channel = (weight_tensor.axis is not None if isinstance(weight_tensor, QuantizedArray)
                       else np.size(scale) > 1 or np.ndim(scale) > 0)
        if per_channel:
            _require_output_axis(values, axis, weights_format)
        return values, scale, zero_point
    return np.asarray(weight_tensor), 1.0, 0


def _require_output_axis(values, axis, weights_format):
    output_axis = _OUTPUT_AXIS.get(weights_format) if isinstance(weights_format, str) else None
    if output_axis is None:
        return  # an unknown weights_format is refused by name when the weights are used
    ndim = np.ndim(values)
    if isinstance(axis, (int, np.integer)) and -ndim <= axis < 0:
        axis += ndim
    if weights_format == "HWOI" and ndim == 4 and np.shape(values)[3] != 1:
        raise InvalidArgument(
            f"weight_tensor.axis = {axis!r}: HWOI weights with a channel multiplier above 1 have "
            "no single output-channel axis; give one scale per output channel with the weights "
            "in OIHW")
    if axis != output_axis:
        raise InvalidArgument(
            f"weight_tensor.axis = {axis!r}: per-channel weights in {weights_format} must be "
            f"quantized along the output-channel axis {output_axis}")


def _dtype_keyword(value, field):
    """A ttnn dtype keyword (a name, a NumPy or torch dtype, or this module's constants) as the
    name qconv takes; one qconv cannot compute in raises InvalidArgument."""
    name = dtype_name(value, field)
    if name.startswith("DataType."):
        name = name[len("DataType."):]
    name = name.lower()
    allowed = _DTYPES[field]
    if name not in allowed:
        choices = ", ".join(allowed[:-1]) + " or " + allowed[-1]
        raise InvalidArgument(
            f"{field} = {value!r}: qconv computes quantized integer convolutions ({field} "
            f"{choices}); {name} would change the numbers, which qconv cannot honour")
    return name


_CONV2D_CONFIG_FIELDS = ("activation", "clamp", "input_dtype", "output_layout", "dtype", "threads",
                         "algorithm", "input_zero_point", "allow_wraparound")


def _with_dtypes(conv_config, **dtypes):
    """conv_config (None: the defaults) with the dtype keywords given (not None) applied: a copy,
    so that the caller's config is left as it was. A keyword that contradicts a value the config
    sets (other than its default) raises InvalidArgument."""
    given = {field: _dtype_keyword(value, field) for field, value in dtypes.items()
             if value is not None}
    if not given:
        return conv_config
    if conv_config is not None and not isinstance(conv_config, Conv2dConfig):
        raise TypeError(f"conv_config must be a qconv.Conv2dConfig or None, got "
                        f"{conv_config!r}")
    default = Conv2dConfig()
    config = Conv2dConfig()
    if conv_config is not None:
        for name in _CONV2D_CONFIG_FIELDS:
            setattr(config, name, getattr(conv_config, name))
    for field, name in given.items():
        attribute = "input_dtype" if field == "input_dtype" else "dtype"
        current = getattr(config, attribute)
        if current != name and current != getattr(default, attribute):
            raise InvalidArgument(
                f"{field} = {name!r}: conv_config.{attribute} is {current!r}; give one of them")
        setattr(config, attribute, name)
    return config


def _input_layout(input_layout):
    """qconv's activation layout for an input_layout: ttnn's memory layouts (row-major or tiled,
    of an [N, H, W, C] tensor) are NHWC."""
    if input_layout is None:
        return None
    return "NHWC" if str(input_layout) in _TTNN_LAYOUTS else input_layout


def prepare_conv_weights(weight_tensor, input_layout, weights_format, in_channels, out_channels,
                         batch_size, input_height, input_width, kernel_size, stride, padding,
                         dilation, has_bias, groups, conv_config=None, compute_config=None, *,
                         device=None, input_memory_config=None, input_dtype=None,
                         output_dtype=None, slice_config=None):
    """Prepares weights once for one convolution, as ``ttnn.prepare_conv_weights``.

    Parameters
    ----------
    weight_tensor : QuantizedArray, torch quantized tensor or numpy.ndarray
        uint8 or int8 weights in ``weights_format`` with one scale and zero point, or one per
        output channel; a plain array means scale 1, zero point 0.
    input_layout : "NHWC", "NCHW", or ttnn's ROW_MAJOR_LAYOUT or TILE_LAYOUT (NHWC)
        The layout of the activations conv2d will be given.
    weights_format : "OIHW", "OHWI", "HWIO" or "HWOI"
    in_channels, out_channels, batch_size, input_height, input_width : int
    kernel_size, stride, dilation : (h, w)
    padding : int, (pad_h, pad_w) or (top, bottom, left, right)
    has_bias : bool
    groups : int
    conv_config : Conv2dConfig or None (defaults)
    compute_config : ComputeConfig or None (defaults: scheme fbgemm, unit scales, zero points 0)
    input_dtype, output_dtype : "uint8", "int8" (output also "int32"), a NumPy dtype, or None
        ttnn's keywords for ``conv_config.input_dtype`` and ``conv_config.dtype``.
    device, input_memory_config, slice_config
        ttnn's device-only arguments: accepted and ignored.

    Returns
    -------
    PreparedWeights

    Raises
    ------
    InvalidArgument, ShapeMismatch
        Bad geometry, layouts, dtypes, scales or zero points, or weights of the wrong shape.
    OverflowRisk
        The accumulator could leave int32 for these weights and zero points.
    """
    conv_config = _with_dtypes(conv_config, input_dtype=input_dtype, output_dtype=output_dtype)
    input_layout = _input_layout(input_layout)
    values, scale, zero_point = _weights(weight_tensor, weights_format)
    return _qconv.ttnn_prepare_conv_weights(
        values, scale, zero_point, input_layout, weights_format, in_channels, out_channels,
        batch_size, input_height, input_width, kernel_size, stride, padding, dilation, has_bias,
        groups, conv_config, compute_config)


def prepare_conv_bias(bias_tensor, input_layout, in_channels, out_channels, batch_size,
                      input_height, input_width, kernel_size, stride, padding, dilation, groups,
                      conv_config=None, compute_config=None, *, device=None,
                      input_memory_config=None, input_dtype=None, output_dtype=None,
                      slice_config=None):
    """Prepares a bias for one convolution, as ``ttnn.prepare_conv_bias``.

    Parameters
    ----------
    bias_tensor : 1-D array (or a PyTorch float tensor)
        out_channels values: int32 for the schemes that add the bias to the accumulator (int32,
        onnx, onnxruntime, tvm, tvm_f32, tflite, tflite_single), float for the PyTorch schemes
        (fbgemm, qnnpack, onednn); other dtypes are converted when the values fit.
    input_layout, in_channels, out_channels, batch_size, input_height, input_width, kernel_size,
    stride, padding, dilation, groups, conv_config, compute_config, input_dtype, output_dtype,
    device, input_memory_config, slice_config
        As :func:`prepare_conv_weights`.

    Returns
    -------
    PreparedBias

    Raises
    ------
    InvalidArgument, ShapeMismatch
        Bad geometry, or a bias of the wrong length or kind.
    """
    conv_config = _with_dtypes(conv_config, input_dtype=input_dtype, output_dtype=output_dtype)
    return _qconv.ttnn_prepare_conv_bias(
        float_array(bias_tensor), _input_layout(input_layout), in_channels, out_channels, batch_size, input_height,
        input_width, kernel_size, stride, padding, dilation, groups, conv_config, compute_config)


def conv2d(input_tensor, weight_tensor, in_channels, out_channels, batch_size, input_height,
           input_width, kernel_size, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
           bias_tensor=None, conv_config=None, compute_config=None, return_output_dim=False,
           return_weights_and_bias=False, *, weights_format=None, input_layout=None,
           device=None, memory_config=None, dtype=None, slice_config=None):
    """Quantized 2-D convolution, as ``ttnn.conv2d``.

    Parameters
    ----------
    input_tensor : numpy.ndarray
        uint8 or int8 activations: ``[N, H, W, C]`` (ttnn's layout), ttnn's flattened
        ``[1, 1, N·H·W, C]`` (a previous conv2d's output), or ``[N, C, H, W]`` with
        ``input_layout="NCHW"``. Its dtype is the activations' type (as a ttnn tensor's).
    weight_tensor : PreparedWeights, or raw weights as :func:`prepare_conv_weights` takes
        Prepared weights are checked against every other argument (PreparedMismatch).
    in_channels, out_channels, batch_size, input_height, input_width : int
    kernel_size, stride, dilation : (h, w)
    padding : int, (pad_h, pad_w) or (top, bottom, left, right)
    groups : int
    bias_tensor : PreparedBias, a 1-D array, or None
    conv_config, compute_config : as :func:`prepare_conv_weights`
    return_output_dim : bool
        Also return ``(out_height, out_width)``.
    return_weights_and_bias : bool
        Also return ``(PreparedWeights, PreparedBias or None)`` for reuse.
    weights_format, input_layout : str or None
        qconv's keywords: the weights' layout (default "OIHW") and the activations' layout
        (default "NHWC"). With PreparedWeights they default to what the weights were prepared
        for, and a value that contradicts the preparation raises PreparedMismatch.
    dtype : "uint8", "int8", "int32", a NumPy dtype, or None
        ttnn's keyword for the output's type, ``conv_config.dtype`` (default uint8).
    device, memory_config, slice_config
        ttnn's device-only arguments: accepted and ignored.

    Returns
    -------
    ``output``, ``(output, (out_height, out_width))``, ``(output, (weights, bias))`` or
    ``(output, (out_height, out_width), (weights, bias))``, as ttnn; ``output`` is a
    numpy.ndarray of ``conv_config.dtype``: ``[1, 1, N·H·W, C]`` as ttnn for an NHWC output
    (``conv_config.output_layout``, the default), ``[N, C, H, W]`` for NCHW.

    Raises
    ------
    PreparedMismatch
        Prepared weights or bias used with a problem they were not prepared for.
    InvalidArgument, ShapeMismatch, OverflowRisk
        As :func:`prepare_conv_weights`, and an input of the wrong shape or dtype.
    """
    conv_config = _with_dtypes(conv_config, dtype=dtype)
    input_layout = _input_layout(input_layout)
    if isinstance(weight_tensor, PreparedWeights):
        if weights_format is not None and not isinstance(weights_format, str):
            raise TypeError(f"weights_format must be a str or None, got "
                            f"{type(weights_format).__name__}")
        if weights_format is not None and weights_format != weight_tensor.weights_format:
            raise PreparedMismatch(
                f"weights_format: prepared for {weight_tensor.weights_format}, given "
                f"{weights_format!r}; prepare the weights again for this problem")
        if bias_tensor is not None and not isinstance(bias_tensor, PreparedBias):
            bias_tensor = prepare_conv_bias(
                bias_tensor, weight_tensor.input_layout, in_channels, out_channels, batch_size,
                input_height, input_width, kernel_size, stride, padding, dilation, groups,
                conv_config, compute_config)
        return _qconv.ttnn_conv2d_prepared(
            input_tensor, weight_tensor, in_channels, out_channels, batch_size, input_height,
            input_width, kernel_size, stride, padding, dilation, groups, bias_tensor, conv_config,
            compute_config, return_output_dim, return_weights_and_bias, input_layout)
    if isinstance(bias_tensor, PreparedBias):
        raise TypeError("bias_tensor: a PreparedBias goes with PreparedWeights; pass the raw bias "
                        "with raw weights")
    weights_format = "OIHW" if weights_format is None else weights_format
    input_layout = "NHWC" if input_layout is None else input_layout
    values, scale, zero_point = _weights(weight_tensor, weights_format)
    return _qconv.ttnn_conv2d(
        input_tensor, input_layout, values, scale, zero_point, weights_format, in_channels,
        out_channels, batch_size, input_height, input_width, kernel_size, stride, padding,
        dilation, groups, float_array(bias_tensor), conv_config, compute_config, return_output_dim,
        return_weights_and_bias)
