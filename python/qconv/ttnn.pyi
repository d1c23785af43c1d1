# SPDX-License-Identifier: Apache-2.0
from ._qconv import ComputeConfig as ComputeConfig, Conv2dConfig as Conv2dConfig, PreparedBias as PreparedBias, PreparedWeights as PreparedWeights
from _typeshed import Incomplete

uint8: str
int8: str
int32: str
bfloat16: str
float32: str
bfloat8_b: str
bfloat4_b: str
uint16: str
uint32: str
ROW_MAJOR_LAYOUT: str
TILE_LAYOUT: str
DRAM_MEMORY_CONFIG: str
L1_MEMORY_CONFIG: str

def prepare_conv_weights(weight_tensor, input_layout, weights_format, in_channels, out_channels, batch_size, input_height, input_width, kernel_size, stride, padding, dilation, has_bias, groups, conv_config: Incomplete | None = ..., compute_config: Incomplete | None = ..., *, device: Incomplete | None = ..., input_memory_config: Incomplete | None = ..., input_dtype: Incomplete | None = ..., output_dtype: Incomplete | None = ..., slice_config: Incomplete | None = ...): ...
def prepare_conv_bias(bias_tensor, input_layout, in_channels, out_channels, batch_size, input_height, input_width, kernel_size, stride, padding, dilation, groups, conv_config: Incomplete | None = ..., compute_config: Incomplete | None = ..., *, device: Incomplete | None = ..., input_memory_config: Incomplete | None = ..., input_dtype: Incomplete | None = ..., output_dtype: Incomplete | None = ..., slice_config: Incomplete | None = ...): ...
def conv2d(input_tensor, weight_tensor, in_channels, out_channels, batch_size, input_height, input_width, kernel_size, stride=..., padding=..., dilation=..., groups: int = ..., bias_tensor: Incomplete | None = ..., conv_config: Incomplete | None = ..., compute_config: Incomplete | None = ..., return_output_dim: bool = ..., return_weights_and_bias: bool = ..., *, weights_format: Incomplete | None = ..., input_layout: Incomplete | None = ..., device: Incomplete | None = ..., memory_config: Incomplete | None = ..., dtype: Incomplete | None = ..., slice_config: Incomplete | None = ...): ...
