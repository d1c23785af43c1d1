# SPDX-License-Identifier: Apache-2.0
from typing import Any, Optional, Sequence, Union

IntOrPair = Union[int, Sequence[int]]

def conv2d(input: Any, weight: Any, bias: Any, stride: IntOrPair = ..., padding: IntOrPair = ..., dilation: IntOrPair = ..., groups: int = ..., padding_mode: str = ..., scale: float = ..., zero_point: int = ..., dtype: Any = ..., *, engine: Optional[str] = ..., relu: bool = ..., threads: Optional[int] = ...) -> Any: ...
def conv_transpose2d(input: Any, weight: Any, bias: Any = ..., stride: IntOrPair = ..., padding: IntOrPair = ..., output_padding: IntOrPair = ..., groups: int = ..., dilation: IntOrPair = ..., scale: float = ..., zero_point: int = ..., dtype: Any = ..., *, engine: Optional[str] = ..., relu: bool = ..., threads: Optional[int] = ...) -> Any: ...
