# SPDX-License-Identifier: Apache-2.0
"""A ttnn program ported by its import alone: weights and biases prepared once with the keywords
of ttnn's documentation (device-only ones included), then two chained convolutions called for
several frames, the first one's [1, 1, N·H·W, C] output fed straight into the second, with
return_output_dim and return_weights_and_bias. Shapes are ttnn's; the values come from the
independent NumPy formulation in reference.py (int64 accumulators, SPEC §4's fbgemm in float32)."""

import numpy as np
import pytest

import qconv.ttnn as ttnn  # the program's only change: it read `import ttnn`

import qconv
import reference

DEVICE = object()  # stands for the ttnn device the program opened; qconv ignores it

BATCH, HEIGHT, WIDTH = 2, 9, 7
C0, C1, C2 = 5, 8, 6
SX, ZX = 0.05, 120
S1, Z1 = 0.4, 100  # the first convolution's output, the second's input
S2, Z2 = 0.7, 90


def model_parameters():
    """The trained model's quantized weights: where ttnn takes a float weight tensor, a quantized
    model hands int8 values (OIHW, as ttnn) with one scale per output channel."""
    rng = np.random.default_rng(11)
    p = {
        "w1": rng.integers(-128, 128, (C1, C0, 3, 3), dtype=np.int8),
        "sw1": rng.uniform(0.002, 0.02, C1),
        "b1": rng.normal(0, 1, C1).astype(np.float32),
        "w2": rng.integers(-128, 128, (C2, C1, 1, 1), dtype=np.int8),
        "sw2": rng.uniform(0.002, 0.02, C2),
        "b2": rng.normal(0, 1, C2).astype(np.float32),
    }
    p["qw1"] = qconv.QuantizedArray(p["w1"], p["sw1"], np.zeros(C1, np.int64), axis=0)
    p["qw2"] = qconv.QuantizedArray(p["w2"], p["sw2"], np.zeros(C2, np.int64), axis=0)
    return p


def frames(count):
    rng = np.random.default_rng(12)
    return [rng.integers(0, 256, (BATCH, HEIGHT, WIDTH, C0), dtype=np.uint8)  # NHWC, as ttnn
            for _ in range(count)]


# ---- the ttnn program ----------------------------------------------------------------------

class TtnnModel:
    """Two convolutions, prepared once (ttnn.prepare_conv_weights / prepare_conv_bias), run per
    frame (ttnn.conv2d), written against ttnn's documented keywords."""

    def __init__(self, device, p):
        self.device = device
        self.conv_config = ttnn.Conv2dConfig(activation="relu")
        self.compute1 = ttnn.ComputeConfig(scheme="fbgemm", input_scale=SX, input_zero_point=ZX,
                                           output_scale=S1, output_zero_point=Z1)
        self.compute2 = ttnn.ComputeConfig(scheme="fbgemm", input_scale=S1, input_zero_point=Z1,
                                           output_scale=S2, output_zero_point=Z2)
        common = dict(input_memory_config=ttnn.L1_MEMORY_CONFIG, input_layout=ttnn.ROW_MAJOR_LAYOUT,
                      batch_size=BATCH, groups=1, device=device, input_dtype=ttnn.uint8,
                      output_dtype=ttnn.uint8, slice_config=None)
        geometry1 = dict(in_channels=C0, out_channels=C1, input_height=HEIGHT, input_width=WIDTH,
                         kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), dilation=(1, 1))
        out_h, out_w = HEIGHT, WIDTH
        geometry2 = dict(in_channels=C1, out_channels=C2, input_height=out_h, input_width=out_w,
                         kernel_size=(1, 1), stride=(1, 1), padding=(0, 0), dilation=(1, 1))
        w1, w2 = p["qw1"], p["qw2"]
        self.w1 = ttnn.prepare_conv_weights(
            weight_tensor=w1, weights_format="OIHW", has_bias=True, **common, **geometry1,
            conv_config=self.conv_config, compute_config=self.compute1)
        self.b1 = ttnn.prepare_conv_bias(
            bias_tensor=p["b1"], **common, **geometry1, conv_config=self.conv_config,
            compute_config=self.compute1)
        self.w2 = ttnn.prepare_conv_weights(
            weight_tensor=w2, weights_format="OIHW", has_bias=True, **common, **geometry2,
            conv_config=self.conv_config, compute_config=self.compute2)
        self.b2 = ttnn.prepare_conv_bias(
            bias_tensor=p["b2"], **common, **geometry2, conv_config=self.conv_config,
            compute_config=self.compute2)
        self.geometry1, self.geometry2 = geometry1, geometry2

    def __call__(self, x):
        y, (out_h, out_w), (w1, b1) = ttnn.conv2d(
            input_tensor=x, weight_tensor=self.w1, bias_tensor=self.b1, device=self.device,
            batch_size=BATCH, groups=1, **self.geometry1, dtype=ttnn.uint8,
            conv_config=self.conv_config, compute_config=self.compute1,
            memory_config=ttnn.L1_MEMORY_CONFIG, slice_config=None, return_output_dim=True,
            return_weights_and_bias=True)
        self.w1, self.b1 = w1, b1  # as ttnn programs keep the prepared tensors for the next call
        z, (out_h2, out_w2) = ttnn.conv2d(
            input_tensor=y, weight_tensor=self.w2, bias_tensor=self.b2, device=self.device,
            in_channels=C1, out_channels=C2, batch_size=BATCH, input_height=out_h,
            input_width=out_w, kernel_size=(1, 1), stride=(1, 1), padding=(0, 0),
            dilation=(1, 1), groups=1, dtype=ttnn.uint8, conv_config=self.conv_config,
            compute_config=self.compute2, memory_config=ttnn.DRAM_MEMORY_CONFIG,
            return_output_dim=True)
        return y, (out_h, out_w), z, (out_h2, out_w2)


# ---- the expected values, computed independently -------------------------------------------

def expected_layer(x_nchw, zx, sx, w, sw, bias, sy, zy, padding):
    acc = reference.conv2d_accumulator(x_nchw, zx, w, 0, (1, 1), padding, (1, 1), 1)
    _, q = reference.fbgemm(acc, sx, sw, sy, zy, bias, 0, 255, relu=True)
    return q  # NCHW int64


def expected_model(p, x_nhwc):
    x = x_nhwc.transpose(0, 3, 1, 2)
    y = expected_layer(x, ZX, SX, p["w1"], p["sw1"], p["b1"], S1, Z1, (1, 1, 1, 1))
    z = expected_layer(y, Z1, S1, p["w2"], p["sw2"], p["b2"], S2, Z2, (0, 0, 0, 0))
    return y, z


def ttnn_flat(nchw):
    """ttnn's output form of an NCHW result: [1, 1, N·H·W, C]."""
    n, c, h, w = nchw.shape
    return nchw.transpose(0, 2, 3, 1).reshape(1, 1, n * h * w, c)


def test_a_ttnn_program_ports_by_its_import():
    p = model_parameters()
    model = TtnnModel(DEVICE, p)
    for x in frames(3):
        y, dims, z, dims2 = model(x)
        want_y, want_z = expected_model(p, x)
        assert y.shape == (1, 1, BATCH * HEIGHT * WIDTH, C1) and y.dtype == np.uint8
        assert z.shape == (1, 1, BATCH * HEIGHT * WIDTH, C2) and z.dtype == np.uint8
        assert dims == (HEIGHT, WIDTH) and dims2 == (HEIGHT, WIDTH)
        assert isinstance(dims, tuple)
        np.testing.assert_array_equal(y.astype(np.int64), ttnn_flat(want_y))
        np.testing.assert_array_equal(z.astype(np.int64), ttnn_flat(want_z))
    assert isinstance(model.w1, ttnn.PreparedWeights) and isinstance(model.b1, ttnn.PreparedBias)


def test_return_tuple_order_is_ttnns():
    p = model_parameters()
    model = TtnnModel(DEVICE, p)
    x = frames(1)[0]
    args = dict(input_tensor=x, weight_tensor=model.w1, bias_tensor=model.b1, device=DEVICE,
                batch_size=BATCH, groups=1, **model.geometry1, conv_config=model.conv_config,
                compute_config=model.compute1)
    plain = ttnn.conv2d(**args)
    assert isinstance(plain, np.ndarray) and plain.shape == (1, 1, BATCH * HEIGHT * WIDTH, C1)
    out, dims = ttnn.conv2d(**args, return_output_dim=True)
    assert dims == (HEIGHT, WIDTH)
    out2, (w, b) = ttnn.conv2d(**args, return_weights_and_bias=True)
    assert isinstance(w, ttnn.PreparedWeights) and isinstance(b, ttnn.PreparedBias)
    out3, dims3, (w3, b3) = ttnn.conv2d(**args, return_output_dim=True,
                                        return_weights_and_bias=True)
    for o in (out, out2, out3):
        np.testing.assert_array_equal(o, plain)
    # The flattened output is the NHWC one: the same bytes as an [N, H, W, C] input gives.
    np.testing.assert_array_equal(ttnn.conv2d(**dict(args, input_tensor=x.reshape(1, 1, -1, C0))),
                                  plain)


@pytest.mark.parametrize("keyword", ["input_dtype", "output_dtype"])
@pytest.mark.parametrize("dtype", [ttnn.bfloat16, ttnn.float32, ttnn.bfloat8_b, "float16"])
def test_a_dtype_qconv_cannot_honour_is_refused(keyword, dtype):
    p = model_parameters()
    with pytest.raises(qconv.InvalidArgument, match=f"{keyword} = .*would change the numbers"):
        ttnn.prepare_conv_weights(
            weight_tensor=p["qw1"], input_memory_config=None,
            input_layout=ttnn.TILE_LAYOUT, weights_format="OIHW", in_channels=C0, out_channels=C1,
            batch_size=BATCH, input_height=HEIGHT, input_width=WIDTH, kernel_size=(3, 3),
            stride=(1, 1), padding=(1, 1), dilation=(1, 1), has_bias=False, groups=1,
            device=DEVICE, **{keyword: dtype})
    with pytest.raises(qconv.InvalidArgument, match="dtype = .*would change the numbers"):
        ttnn.conv2d(input_tensor=frames(1)[0], weight_tensor=p["qw1"],
                    in_channels=C0, out_channels=C1, batch_size=BATCH, input_height=HEIGHT,
                    input_width=WIDTH, kernel_size=(3, 3), dtype=dtype)


def test_dtype_keywords_are_the_configs_fields():
    p = model_parameters()
    x = frames(1)[0]
    w = p["qw1"]
    geometry = dict(in_channels=C0, out_channels=C1, batch_size=BATCH, input_height=HEIGHT,
                    input_width=WIDTH, kernel_size=(3, 3), padding=(1, 1))
    compute = ttnn.ComputeConfig(scheme="int32", input_zero_point=ZX)
    acc = reference.conv2d_accumulator(x.transpose(0, 3, 1, 2), ZX, p["w1"], 0, (1, 1),
                                       (1, 1, 1, 1), (1, 1), 1)
    for dtype in (ttnn.int32, np.int32, "int32"):
        y = ttnn.conv2d(x, w, **geometry, compute_config=compute, dtype=dtype)
        assert y.dtype == np.int32
        np.testing.assert_array_equal(y.astype(np.int64), ttnn_flat(acc))
    # A keyword that contradicts what the config sets is refused; the config is left as it was.
    config = ttnn.Conv2dConfig(dtype="int8")
    with pytest.raises(qconv.InvalidArgument, match="conv_config.dtype is 'int8'"):
        ttnn.conv2d(x, w, **geometry, compute_config=compute, conv_config=config, dtype="int32")
    assert config.dtype == "int8"
    # The input's dtype is the input tensor's own, as a ttnn tensor's: int8 activations with
    # weights prepared for int8 run with the default config.
    xs = (x.astype(np.int16) - 128).astype(np.int8)
    prepared = ttnn.prepare_conv_weights(
        w, ttnn.ROW_MAJOR_LAYOUT, "OIHW", C0, C1, BATCH, HEIGHT, WIDTH, (3, 3), (1, 1), (1, 1),
        (1, 1), False, 1, compute_config=ttnn.ComputeConfig(scheme="int32", input_zero_point=-8),
        input_dtype=ttnn.int8, output_dtype=ttnn.int32)
    y = ttnn.conv2d(xs, prepared, **geometry, compute_config=ttnn.ComputeConfig(
        scheme="int32", input_zero_point=-8), dtype="int32")
    acc = reference.conv2d_accumulator(xs.transpose(0, 3, 1, 2), -8, p["w1"], 0, (1, 1),
                                       (1, 1, 1, 1), (1, 1), 1)
    np.testing.assert_array_equal(y.astype(np.int64), ttnn_flat(acc))
