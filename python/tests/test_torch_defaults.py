# SPDX-License-Identifier: Apache-2.0
"""qconv.functional's defaults follow PyTorch's when PyTorch tensors come in, so that a program
ported by changing only the import computes what it computed before: the engine is
torch.backends.quantized.engine, the thread count torch.get_num_threads(), and the result is
channels_last as PyTorch returns it. With QuantizedArray inputs the defaults are fbgemm and one
thread."""

import numpy as np
import pytest

import qconv
from qconv import functional

torch = pytest.importorskip("torch")
qF = pytest.importorskip("torch.ao.nn.quantized.functional")

# The engines both qconv and this PyTorch build have (Debian's has no fbgemm).
ENGINES = [e for e in ("qnnpack", "onednn", "fbgemm", "x86")
           if e in torch.backends.quantized.supported_engines]


@pytest.fixture(autouse=True)
def restore_torch_settings():
    engine, threads = torch.backends.quantized.engine, torch.get_num_threads()
    yield
    torch.backends.quantized.engine = engine
    torch.set_num_threads(threads)


def problem(seed=0):
    """A conv2d problem on which the engines give different numbers: power-of-two scales make
    exact ties, which fbgemm (float bias), qnnpack (bias rounded to int32 first) and onednn (zero
    point added before rounding) round apart."""
    gen = torch.Generator().manual_seed(seed)
    x = torch._make_per_tensor_quantized_tensor(
        torch.randint(0, 40, (1, 4, 6, 6), generator=gen, dtype=torch.uint8), 0.5, 3)
    w = torch._make_per_tensor_quantized_tensor(
        torch.randint(-4, 5, (8, 4, 3, 3), generator=gen, dtype=torch.int8), 0.25, 0)
    b = torch.randint(-8, 8, (8,), generator=gen).float() * 0.0625
    return x, w, b, {"padding": 1, "scale": 4.0, "zero_point": 65}


def transposed_weights():
    """[C_in = 4, C_out = 5, 3, 3] weights for problem()'s input."""
    gen = torch.Generator().manual_seed(1)
    return torch._make_per_tensor_quantized_tensor(
        torch.randint(-4, 5, (4, 5, 3, 3), generator=gen, dtype=torch.int8), 0.25, 0)


def test_the_engines_differ_on_this_problem():
    x, w, b, kw = problem()
    results = {e: functional.conv2d(x, w, b, engine=e, **kw).int_repr()
               for e in ("fbgemm", "qnnpack", "onednn")}
    assert not torch.equal(results["fbgemm"], results["qnnpack"])
    assert not torch.equal(results["qnnpack"], results["onednn"])


@pytest.mark.parametrize("engine", ENGINES)
def test_default_engine_follows_torch(engine):
    torch.backends.quantized.engine = engine
    x, w, b, kw = problem()
    got = functional.conv2d(x, w, b, **kw)
    assert torch.equal(got.int_repr(), functional.conv2d(x, w, b, engine=engine, **kw).int_repr())
    assert torch.equal(got.int_repr(), qF.conv2d(x, w, b, **kw).int_repr())
    # conv_transpose2d likewise (weights [C_in, C_out, kh, kw]).
    wt = transposed_weights()
    bt = torch.arange(-2, 3).float() * 0.0625
    got = functional.conv_transpose2d(x, wt, bt, stride=2, scale=4.0, zero_point=64)
    explicit = functional.conv_transpose2d(x, wt, bt, stride=2, scale=4.0, zero_point=64,
                                           engine=engine)
    assert torch.equal(got.int_repr(), explicit.int_repr())


def test_default_engine_is_fbgemm_without_torch_tensors_or_a_known_torch_engine():
    x, w, b, kw = problem()
    fbgemm = functional.conv2d(x, w, b, engine="fbgemm", **kw).int_repr().numpy()
    torch.backends.quantized.engine = "qnnpack"
    assert not np.array_equal(fbgemm, functional.conv2d(x, w, b, **kw).int_repr().numpy())
    arrays = [qconv.QuantizedArray(t.int_repr().numpy(), t.q_scale(), t.q_zero_point())
              for t in (x, w)]
    got = functional.conv2d(*arrays, b.numpy(), **kw)
    np.testing.assert_array_equal(got.values, fbgemm)
    if "none" in torch.backends.quantized.supported_engines:
        torch.backends.quantized.engine = "none"
        np.testing.assert_array_equal(functional.conv2d(x, w, b, **kw).int_repr().numpy(),
                                      fbgemm)


def spy_threads(monkeypatch, name):
    """Replaces the binding `name` with one that records the thread count it is given."""
    seen = []
    real = getattr(functional, name)

    def spy(*args):
        seen.append(args[-2])  # threads comes before each binding's own last argument
        return real(*args)
    monkeypatch.setattr(functional, name, spy)
    return seen


def test_default_threads_follow_torch(monkeypatch):
    seen = spy_threads(monkeypatch, "_conv2d")
    x, w, b, kw = problem()
    torch.set_num_threads(2)
    functional.conv2d(x, w, b, **kw)
    functional.conv2d(x, w, b, threads=3, **kw)
    functional.conv2d(qconv.QuantizedArray(x.int_repr().numpy(), 0.5, 3),
                      qconv.QuantizedArray(w.int_repr().numpy(), 0.25, 0), None)
    assert seen == [2, 3, 1]
    seen = spy_threads(monkeypatch, "_conv_transpose2d")
    torch.set_num_threads(1)
    functional.conv_transpose2d(x, w.permute(1, 0, 2, 3), None)
    assert seen == [1]


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("engine", ENGINES)
def test_memory_format_as_torch_returns_it(engine, channels_last):
    torch.backends.quantized.engine = engine
    x, w, b, kw = problem()
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    expected = qF.conv2d(x, w, b, **kw)
    got = functional.conv2d(x, w, b, **kw)
    assert got.is_contiguous(memory_format=torch.channels_last)
    assert got.stride() == expected.stride() and got.shape == expected.shape
    assert torch.equal(got.int_repr(), expected.int_repr())
    wt = transposed_weights()
    packed = torch.ops.quantized.conv_transpose2d_prepack(wt, None, [2, 2], [0, 0], [0, 0],
                                                          [1, 1], 1)
    expected = torch.ops.quantized.conv_transpose2d(x, packed, 4.0, 64)
    got = functional.conv_transpose2d(x, wt, None, stride=2, scale=4.0, zero_point=64)
    assert got.stride() == expected.stride() and got.shape == expected.shape
    assert torch.equal(got.int_repr(), expected.int_repr())
