# SPDX-License-Identifier: Apache-2.0
from . import functional as functional, onnx as onnx, qnn as qnn, ttnn as ttnn
from ._qconv import Error as Error, FormatError as FormatError, InvalidArgument as InvalidArgument, OverflowRisk as OverflowRisk, PreparedMismatch as PreparedMismatch, ShapeMismatch as ShapeMismatch
from ._tensors import QuantizedArray as QuantizedArray
from .ttnn import ComputeConfig as ComputeConfig, Conv2dConfig as Conv2dConfig, PreparedBias as PreparedBias, PreparedWeights as PreparedWeights, conv2d as conv2d, prepare_conv_bias as prepare_conv_bias, prepare_conv_weights as prepare_conv_weights

__version__: str
