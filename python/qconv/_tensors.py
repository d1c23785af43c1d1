# SPDX-License-Identifier: Apache-2.0
"""Quantized tensors in and out of the faces: qconv's own QuantizedArray and PyTorch's quantized
tensors, recognised by their methods so that torch is never imported by qconv itself."""

import sys
from typing import Any, Optional, Tuple

import numpy as np

from ._qconv import InvalidArgument


def _numbers(value, name):
    """`value` as a NumPy array, or InvalidArgument naming it when NumPy cannot make one."""
    try:
        return np.asarray(value)
    except Exception as error:  # NumPy raises many kinds for values that are no numbers
        raise InvalidArgument(f"{name} = {value!r}: must be a number or a sequence of numbers "
                              f"({type(error).__name__}: {error})") from None


def _scalar(value, name, kind):
    """One number as `kind`; the faces check its range and meaning when the array is used."""
    try:
        item = np.asarray(value).reshape(()).item()
    except (TypeError, ValueError) as error:
        raise InvalidArgument(f"{name} = {value!r}: must be a number ({error})") from None
    if kind is int and isinstance(item, bool):
        return int(item)
    if kind is int and not isinstance(item, int):
        raise InvalidArgument(f"{name} = {value!r}: must be an integer")
    if kind is float and isinstance(item, (int, float)) and not isinstance(item, bool):
        try:
            return float(item)
        except OverflowError:
            raise InvalidArgument(f"{name} = {value!r}: must be a finite number") from None
    if kind is float:
        raise InvalidArgument(f"{name} = {value!r}: must be a real number")
    return item


class QuantizedArray:
    """Integer values with a scale and a zero point: what a quantized tensor holds.

    Parameters
    ----------
    values : numpy.ndarray
        uint8 values (PyTorch's quint8) or int8 values (qint8); the array is kept, not copied.
    scale : float or 1-D array of float
        One scale (per tensor) or, with ``axis``, one per index of that axis (per channel).
    zero_point : int or 1-D array of int
        Likewise; each must lie in the values' dtype range.
    axis : int or None
        The channel axis of per-channel scale and zero point (``None``: per tensor). Weights are
        quantized per output channel: axis 0 of an OIHW weight.

    The real value an element stands for is ``(values - zero_point) * scale``
    (:meth:`dequantize`). The faces check every rule when the array is used.
    """

    __slots__ = ("values", "scale", "zero_point", "axis")

    values: np.ndarray
    scale: Any  # float, or a 1-D float64 array when per channel
    zero_point: Any  # int, or a 1-D integer array when per channel
    axis: Optional[int]

    def __init__(self, values: Any, scale: Any, zero_point: Any,
                 axis: Optional[int] = None) -> None:
        self.values = np.asarray(values)
        scale = _numbers(scale, "scale")
        zero_point = _numbers(zero_point, "zero_point")
        if axis is None:
            for name, value in (("scale", scale), ("zero_point", zero_point)):
                if np.size(value) != 1:
                    raise InvalidArgument(
                        f"{name} = {value!r}: holds {np.size(value)} values; "
                        "per-channel quantization needs axis")
            scale = _scalar(scale, "scale", float)
            zero_point = _scalar(zero_point, "zero_point", int)
        else:
            scale = np.asarray(scale).reshape(-1)
            zero_point = np.asarray(zero_point).reshape(-1)
        self.scale = scale
        self.zero_point = zero_point
        self.axis = axis

    @property
    def shape(self) -> Tuple[int, ...]:
        return self.values.shape

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def per_channel(self) -> bool:
        return self.axis is not None

    def dequantize(self) -> np.ndarray:
        """The real values ``(values - zero_point) * scale`` as float32."""
        scale = np.asarray(self.scale, dtype=np.float64)
        zero_point = np.asarray(self.zero_point, dtype=np.float64)
        if self.axis is not None:
            shape = [1] * self.values.ndim
            shape[self.axis] = -1
            scale = scale.reshape(shape)
            zero_point = zero_point.reshape(shape)
        return ((self.values.astype(np.float64) - zero_point) * scale).astype(np.float32)

    def __repr__(self) -> str:
        per = f", axis={self.axis}" if self.axis is not None else ""
        return (f"QuantizedArray(values={self.values!r}, scale={self.scale!r}, "
                f"zero_point={self.zero_point!r}{per})")


def is_torch_tensor(value):
    """Whether ``value`` looks like a PyTorch tensor (without importing torch)."""
    return hasattr(value, "int_repr") and hasattr(value, "is_quantized")


def unpack(value, field):
    """(values, scale, zero_point, axis) of a QuantizedArray or a PyTorch quantized tensor.

    ``axis`` is 0 for per-tensor quantization (it is then unused).
    """
    if isinstance(value, QuantizedArray):
        return value.values, value.scale, value.zero_point, value.axis or 0
    if is_torch_tensor(value):
        if not value.is_quantized:
            raise InvalidArgument(
                f"{field}.dtype = {value.dtype}: must be a quantized tensor (quint8 or qint8)")
        scheme = str(value.qscheme()).replace("torch.", "")
        values = value.int_repr().numpy()
        if scheme in ("per_tensor_affine", "per_tensor_symmetric"):
            return values, value.q_scale(), value.q_zero_point(), 0
        if scheme in ("per_channel_affine", "per_channel_symmetric"):
            return (values, value.q_per_channel_scales().numpy(),
                    value.q_per_channel_zero_points().numpy(), value.q_per_channel_axis())
        raise InvalidArgument(
            f"{field}.qscheme = {scheme}: must be per_tensor_affine or per_channel_affine "
            "(integer zero points)")
    raise TypeError(f"{field} must be a qconv.QuantizedArray or a PyTorch quantized tensor, "
                    f"got {type(value).__name__}")


def float_array(value):
    """A bias as NumPy: PyTorch tensors are detached and brought to the CPU; anything else
    (None included) is passed on as it is."""
    if value is not None and hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    return value


def pack(values, scale, zero_point, like):
    """The result as the caller's kind: a PyTorch per-tensor quantized tensor when ``like`` is a
    PyTorch tensor (4-D results in channels_last memory format, as PyTorch's quantized
    convolutions return them whatever the input's format), otherwise a QuantizedArray."""
    if is_torch_tensor(like):
        torch = sys.modules["torch"]  # loaded: the caller handed us one of its tensors
        result = torch._make_per_tensor_quantized_tensor(torch.from_numpy(values), scale,
                                                         zero_point)
        if result.dim() == 4:
            result = result.contiguous(memory_format=torch.channels_last)
        return result
    return QuantizedArray(values, scale, zero_point)


def dtype_name(dtype, field="dtype"):
    """A dtype given as a string, a torch dtype (torch.quint8) or a NumPy dtype, as a name."""
    if isinstance(dtype, str):
        return dtype
    if type(dtype).__module__ == "torch" and str(dtype).startswith("torch."):
        return str(dtype)[len("torch."):]
    if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        return np.dtype(dtype).name
    raise TypeError(f"{field} must be a dtype name (str), a torch dtype or a NumPy dtype, "
                    f"got {type(dtype).__name__} {dtype!r}")
