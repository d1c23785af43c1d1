# SPDX-License-Identifier: Apache-2.0
"""A PyTorch program with quantized convolutions, to be ported to qconv by changing only its
import (scripts/test-pip.sh does that and checks that both versions agree element for element):

    import torch.ao.nn.quantized.functional as qF     # PyTorch
    import qconv.functional as qF                       # qconv

    python3 pytorch_program.py ENGINE OUT.npz

runs seeded random conv2d problems under torch.backends.quantized.engine = ENGINE (per-tensor and
per-channel weights, groups and depthwise, stride, padding, dilation, bias, contiguous and
channels_last inputs, power-of-two scales that make exact ties) and saves every result's integer
values. Shapes where PyTorch's own engines are known to be wrong (docs/PEERS.md) are not drawn,
and no two problems share shapes, bias presence and output scale (PyTorch onednn's stale output
zero point, defect 3).
"""

import sys

import numpy as np
import torch
import torch.ao.nn.quantized.functional as qF

engine, out = sys.argv[1], sys.argv[2]
torch.backends.quantized.engine = engine
gen = torch.Generator().manual_seed(11)


def draw(low, high):
    return int(torch.randint(low, high + 1, (1,), generator=gen))


results, drawn = [], set()
for problem in range(120):
    batch, channels, height, width = draw(1, 2), draw(1, 8), draw(5, 12), draw(5, 12)
    kernel = (1, 1) if problem % 5 == 0 else (3, 3)
    kind = problem % 3  # 0: groups = 1, 1: depthwise (channel multiplier 1 or 2), 2: two groups
    groups = 1 if kind == 0 else channels if kind == 1 else 2
    channels = max(channels, 2) * (2 if kind == 2 else 1)
    if kind == 1:
        groups = channels
        if kernel == (1, 1):
            kernel = (3, 3)
    out_channels = groups * draw(1, 3) if kind != 0 else draw(1, 8)
    if kind == 2 and kernel == (1, 1):
        kernel = (3, 3)
    stride, padding, dilation = draw(1, 2), draw(0, 2), draw(1, 2)  # 5 >= 2 * (3 - 1) + 1
    ties = problem % 2 == 0  # power-of-two scales: exact ties, rounded per engine
    x_scale = 2.0 ** -draw(1, 4) if ties else float(torch.rand(1, generator=gen)) * 0.05 + 0.005
    w_scale = 2.0 ** -draw(2, 6) if ties else float(torch.rand(1, generator=gen)) * 0.02 + 0.002
    y_scale = 2.0 ** -draw(0, 3) if ties else float(torch.rand(1, generator=gen)) * 0.2 + 0.01

    x = torch._make_per_tensor_quantized_tensor(
        torch.randint(0, 256, (batch, channels, height, width), generator=gen, dtype=torch.uint8),
        x_scale, draw(0, 255))
    if problem % 4 == 3:
        x = x.contiguous(memory_format=torch.channels_last)
    w_int = torch.randint(-128, 128, (out_channels, channels // groups) + kernel, generator=gen,
                          dtype=torch.int8)
    if problem % 3 == 1:  # per-channel weights (zero points 0: what onednn accepts)
        scales = torch.tensor([w_scale * (1 + i / 8) for i in range(out_channels)],
                              dtype=torch.double)
        w = torch._make_per_channel_quantized_tensor(
            w_int, scales, torch.zeros(out_channels, dtype=torch.long), 0)
    else:
        w = torch._make_per_tensor_quantized_tensor(w_int, w_scale, 0)
    bias = None
    if problem % 4 != 2:
        bias = torch.randint(-64, 64, (out_channels,), generator=gen).float()
        bias *= x_scale * w_scale / 2  # multiples of half the accumulator's scale: ties
    # No two problems share shapes, bias presence and output scale (PyTorch onednn, defect 3).
    while (key := (x.shape, w.shape, bias is None, y_scale)) in drawn:
        y_scale *= 2
    drawn.add(key)
    y = qF.conv2d(x, w, bias, stride=stride, padding=padding, dilation=dilation, groups=groups,
                  scale=y_scale, zero_point=draw(0, 255))
    results.append(y.int_repr().contiguous().numpy())

np.savez(out, *results)
print(f"{engine}: {len(results)} problems, {sum(r.size for r in results)} elements")
