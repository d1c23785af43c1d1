#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# Times PyTorch's own quantized convolution (torch.ao.nn.quantized.functional.conv2d) on the bench's
# layer table, one engine of torch.backends.quantized (qnnpack, onednn, fbgemm where built), batch
# 1, channels_last u8 activations and s8 per-tensor weights: a second peer beside qconv-bench's
# oneDNN. Prints each layer's median milliseconds and the count-weighted total per network.
#
#   scripts/bench-pytorch.py --engine qnnpack --network resnet50 [--threads 1] [--runs 20]
import argparse
import csv
import pathlib
import statistics
import time

import torch
import torch.ao.nn.quantized.functional as qF

TABLE = pathlib.Path(__file__).resolve().parent.parent / "tools" / "bench" / "layers.csv"


def time_layer(row, runs):
    c, o, h, w = (int(row[k]) for k in ("in_channels", "out_channels", "in_height", "in_width"))
    groups = int(row["groups"])
    kh, kw = int(row["kernel_h"]), int(row["kernel_w"])
    if row["op"] != "conv" or row["pad_top"] != row["pad_bottom"] or (
            row["pad_left"] != row["pad_right"]):
        return None  # transposed or asymmetric padding: not this script's
    x = torch.quantize_per_tensor(torch.rand(1, c, h, w), 0.02, 5, torch.quint8)
    x = x.contiguous(memory_format=torch.channels_last)
    weight = torch.quantize_per_tensor(torch.randn(o, c // groups, kh, kw), 0.01, 0, torch.qint8)
    bias = torch.randn(o)
    args = dict(stride=(int(row["stride_h"]), int(row["stride_w"])),
                padding=(int(row["pad_top"]), int(row["pad_left"])), groups=groups,
                scale=0.05, zero_point=128)
    qF.conv2d(x, weight, bias, **args)  # prepares (packs) the weights, as a first call does
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        qF.conv2d(x, weight, bias, **args)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engine", default="qnnpack")
    parser.add_argument("--network", default="resnet50")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=20)
    options = parser.parse_args()
    torch.backends.quantized.engine = options.engine
    torch.set_num_threads(options.threads)
    total = 0.0
    with TABLE.open() as table:
        for row in csv.DictReader(table):
            if row["network"] != options.network:
                continue
            ms = time_layer(row, options.runs)
            if ms is None:
                continue
            total += ms * int(row["count"])
            print(f"{row['layer']:32s} {ms:9.3f} ms x {row['count']}")
    print(f"{options.network} total (x count) {total:.3f} ms, PyTorch {torch.__version__} "
          f"{options.engine}, {options.threads} thread(s)")


if __name__ == "__main__":
    main()
