"""Every kernel of samples/ called from Python on NumPy arrays, at sizes that
are multiples of no tile, against a NumPy formulation of what it computes
(the few whose NumPy form would be the loop itself: against the reference
interpreter, called from Python too)."""

import os

import numpy as np
import pytest

import loopc

SAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "samples")
DEVICES = ["cpu", "gpu-on-cpu"]
rng = np.random.default_rng(7)


def f32(*shape):
    return rng.uniform(-1, 1, size=shape).astype(np.float32)


def sample(name, device):
    return loopc.compile(os.path.join(SAMPLES, name + ".loop"), device=device)


def close(actual, expected, tolerance=2e-4):
    np.testing.assert_allclose(actual, expected, rtol=tolerance, atol=tolerance)


def correlate(image, filt):
    """The valid cross-correlation of 2-D `image` with `filt`."""
    kh, kw = filt.shape
    h, w = image.shape[0] - kh + 1, image.shape[1] - kw + 1
    out = np.zeros((h, w), np.float64)
    for u in range(kh):
        for v in range(kw):
            out += image[u : u + h, v : v + w].astype(np.float64) * filt[u, v]
    return out


@pytest.mark.parametrize("device", DEVICES)
def test_matmul_mv_transpose_sqdist(device):
    A, B = f32(37, 19), f32(19, 41)
    close(sample("matmul", device).matmul(A, B), A @ B)
    x = f32(19)
    close(sample("mv", device).mv(A, x), A @ x)
    transposed = sample("mv_transposed", device)
    y = f32(37)
    close(transposed.mv_transposed(A, y), A.T @ y)
    close(transposed.mv_transposed_via_linalg(A, y), A.T @ y)
    np.testing.assert_array_equal(sample("transpose", device).transpose(A), A.T)
    X, Y = f32(23, 5), f32(29, 5)
    close(sample("sqdist", device).sqdist(X, Y), ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1))


@pytest.mark.parametrize("device", DEVICES)
def test_reductions_and_scans(device):
    x, y = f32(1001), f32(1001)
    close(sample("dot", device).dot(x, y), float(x.astype(np.float64) @ y), 1e-3)
    sums = sample("sum_max", device)
    v = rng.integers(-50, 50, 999).astype(np.int32)
    assert sums.sum_i32(v) == v.sum()
    assert sums.count_above(x, threshold=0.25) == (x > 0.25).sum()
    total, largest = sums.sum_and_max(x)
    close(total, x.sum(dtype=np.float64), 1e-3)
    assert largest == x.max()
    scans = sample("scan", device)
    np.testing.assert_array_equal(scans.running_max(x), np.maximum.accumulate(x))
    close(scans.prefix_sum(x), np.cumsum(x, dtype=np.float64), 1e-3)
    counts = scans.exclusive_count(x)
    assert counts.shape == (1002,) and counts.dtype == np.int32
    np.testing.assert_array_equal(counts, np.concatenate([[0], np.cumsum(x > 0)]))
    X = f32(13, 71)
    close(scans.row_sums(X), np.cumsum(X, axis=1, dtype=np.float64), 1e-3)
    stats = sample("row_stats", device).row_stats(X)
    close(stats.mean, X.mean(axis=1))
    close(stats.variance, X.var(axis=1), 1e-3)
    softmax = sample("softmax", device).softmax(X)
    e = np.exp(X - X.max(axis=1, keepdims=True))
    close(softmax, e / e.sum(axis=1, keepdims=True))


@pytest.mark.parametrize("device", DEVICES)
def test_histograms(device):
    module = sample("histogram", device)
    x = f32(2003)
    H = module.histogram(x, -0.5, 0.75, out=np.empty(7, np.int32))
    inside = x[(x >= -0.5) & (x < 0.75)]
    bins = np.minimum(((inside + 0.5) / 1.25 * 7).astype(np.int64), 6)
    np.testing.assert_array_equal(H, np.bincount(bins, minlength=7))
    keys = rng.integers(-2, 9, 2003).astype(np.int32)
    largest = np.full(6, -np.inf, np.float32)
    sums = module.bin_stats(keys, x, largest)
    for b in range(6):
        chosen = x[keys == b]
        close(sums[b], chosen.sum(dtype=np.float64), 1e-3)
        assert largest[b] == (chosen.max() if chosen.size else -np.inf)


@pytest.mark.parametrize("device", DEVICES)
def test_stencils_and_convolutions(device):
    I = f32(45, 53)
    close(sample("conv2d_5x5", device).conv2d_5x5(I, F5 := f32(5, 5)), correlate(I, F5))
    I11 = f32(35, 40)
    close(sample("conv2d_11x11", device).conv2d_11x11(I11, F11 := f32(11, 11)),
          correlate(I11, F11), 1e-3)
    blur = sample("gaussian_blur", device)
    g3 = np.outer([1, 2, 1], [1, 2, 1]) / 16
    close(blur.gaussian_blur3(I), correlate(I, g3))
    g5 = np.outer([1, 4, 6, 4, 1], [1, 4, 6, 4, 1]) / 256
    close(blur.gaussian_blur5(I), correlate(I, g5))
    close(blur.gaussian_blur5_via_conv(I), correlate(I, g5))
    L = sample("laplace", device).laplace(I)
    inner = I[:-2, 1:-1] + I[2:, 1:-1] + I[1:-1, :-2] + I[1:-1, 2:] - 4 * I[1:-1, 1:-1]
    close(L[1:-1, 1:-1], inner)
    assert not L[0].any() and not L[-1].any() and not L[:, 0].any() and not L[:, -1].any()
    Ic, Oc, K = 3, 5, 3
    images, filters = f32(Ic, 17, 19), f32(Oc, Ic, K, K)
    conv = sample("cnn_conv", device)
    expected = np.stack([sum(correlate(images[c], filters[o, c]) for c in range(Ic))
                         for o in range(Oc)])
    close(conv.cnn_conv_valid(images, filters), expected, 1e-3)
    padded = np.pad(images, ((0, 0), (1, 1), (1, 1)))
    same = np.stack([sum(correlate(padded[c], filters[o, c]) for c in range(Ic))
                     for o in range(Oc)])
    close(conv.cnn_conv_same(images, filters), same, 1e-3)
    padded = np.pad(images, ((0, 0), (2, 2), (2, 2)))
    full = np.stack([sum(correlate(padded[c], filters[o, c]) for c in range(Ic))
                     for o in range(Oc)])
    close(conv.cnn_conv_full(images, filters), full, 1e-3)


@pytest.mark.parametrize("device", DEVICES)
def test_time_loops_in_place(device):
    A = f32(101)
    B = np.zeros(101, np.float32)
    expected = A.astype(np.float64)
    for _ in range(7):
        expected[1:-1] = (expected[:-2] + expected[1:-1] + expected[2:]) / 3
    module = sample("jacobi1d", device)
    assert module.jacobi1d(7, A, B) is None  # inout arrays are updated where they are
    close(A, expected)
    # Against the interpreter, called the same way, where NumPy would be the loop itself.
    reference = sample("jacobi2d", "interp")
    for name, args in [("jacobi2d", lambda: (5, f32(23, 23), f32(23, 23))),
                       ("gauss", lambda: (np.eye(19, dtype=np.float32) * 4 + f32(19, 19),)),
                       ("nbody", lambda: (0.01, 0.1, np.abs(f32(31)), f32(31, 3), f32(31, 3)))]:
        module, reference = sample(name, device), sample(name, "interp")
        ours = args()
        theirs = [a.copy() if isinstance(a, np.ndarray) else a for a in ours]
        ours_result = module[name](*ours)
        reference_result = reference[name](*theirs)
        for a, b in zip(ours, theirs):
            if isinstance(a, np.ndarray):
                close(a, b, 1e-3)
        if ours_result is not None:
            close(ours_result, reference_result, 1e-3)


def test_reverse_and_empty_arrays():
    module = sample("reverse", "cpu")
    x = f32(17)
    np.testing.assert_array_equal(module.reverse(x), x[::-1])
    assert module.reverse(np.zeros(0, np.float32)).shape == (0,)
