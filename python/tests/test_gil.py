# SPDX-License-Identifier: Apache-2.0
"""The computation runs without the GIL: while one thread convolves, another keeps running
Python. Measured as the longest pause the other thread sees, against the call's own duration."""

import threading
import time

import numpy as np

from qconv import qnn


def long_call():
    """A convolution taking at least 0.3 s here (grown until it does), and its duration."""
    rng = np.random.default_rng(0)
    k = rng.integers(-128, 128, (32, 32, 3, 3), dtype=np.int8)
    batch = 1
    while True:
        x = rng.integers(0, 256, (batch, 32, 32, 32), dtype=np.uint8)
        start = time.perf_counter()
        qnn.conv2d(x, k, 128, 0, 1.0, 1.0, (3, 3), 32, padding=1)
        took = time.perf_counter() - start
        if took >= 0.3 or batch >= 1024:
            return x, k, took
        batch *= 2


def test_other_threads_run_during_the_computation():
    x, k, took = long_call()
    done = threading.Event()

    def work():
        qnn.conv2d(x, k, 128, 0, 1.0, 1.0, (3, 3), 32, padding=1)
        done.set()

    worker = threading.Thread(target=work)
    longest_pause = 0.0
    last = time.perf_counter()
    worker.start()
    while not done.is_set():
        now = time.perf_counter()
        longest_pause = max(longest_pause, now - last)
        last = now
    worker.join()
    # Holding the GIL would stop this loop for the whole call.
    assert longest_pause < took / 2, (longest_pause, took)
