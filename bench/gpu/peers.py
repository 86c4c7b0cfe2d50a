"""Peers for loopc's GPU cases that shared/anchors/gpu_anchors.py does not measure: torch's prefix sum and
histograms, at the sizes bench/gpu/run.sh runs (2^28 f32 in [-1, 1)), torch.mv over 4 rows of 2^26,
torch.var_mean over the rows of an 8192^2 matrix, and cuDNN's padded ("same") convolution, 64 -> 64
channels. Same method as the anchors: CUDA
events, warm-up, median of repeats; one JSON object per line, in the anchors' format, which run.sh appends
to the anchors' output for report.py.
"""
import json
import statistics

import torch

dev = torch.device("cuda")


def emit(**row):
    print(json.dumps(row), flush=True)


def bench(fn, repeat=20, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


n = 1 << 28
x = torch.rand(n, device=dev) * 2 - 1
t = bench(lambda: torch.cumsum(x, 0))
emit(kind="bandwidth", op="torch.cumsum 2^28 f32", gbps=round(2 * n * 4 / t / 1e9, 1))
for bins in (256, 65536):
    t = bench(lambda: torch.histc(x, bins=bins, min=-1, max=1))
    emit(kind="bandwidth", op=f"torch.histc {bins} bins 2^28 f32", gbps=round(n * 4 / t / 1e9, 1))
rows = x.view(4, 1 << 26)
v = torch.rand(1 << 26, device=dev) * 2 - 1
t = bench(lambda: torch.mv(rows, v))
emit(kind="bandwidth", op="torch.mv 4 x 2^26 f32", gbps=round((n + (1 << 26)) * 4 / t / 1e9, 1))
matrix = x[: 8192 * 8192].view(8192, 8192)
t = bench(lambda: torch.var_mean(matrix, dim=1, correction=0))
emit(kind="bandwidth", op="torch.var_mean rows 8192^2 f32", gbps=round(8192 * 8192 * 4 / t / 1e9, 1))
for hw, k in ((112, 3), (256, 3), (256, 5), (1024, 3)):
    image = torch.rand(1, 64, hw, hw, device=dev)
    weights = torch.rand(64, 64, k, k, device=dev)
    t = bench(lambda: torch.nn.functional.conv2d(image, weights, padding=k // 2), repeat=10)
    emit(kind="conv", impl="cuDNN fp32 (same)", ch="64->64", hw=hw, k=k,
         tflops=round(2 * 64 * 64 * k * k * hw * hw / t / 1e12, 2))
