"""Peers for loopc's GPU cases that shared/anchors/gpu_anchors.py does not measure: torch's prefix sum and
histograms, at the sizes bench/gpu/run.sh runs (2^28 f32 in [-1, 1)), torch.mv over 4 rows of 2^26,
torch.var_mean over the rows of an 8192^2 matrix, cuDNN's padded ("same") convolution, 64 -> 64
channels, and torch's form of the attention block of tests/programs/science/attn.loop (f32, TF32 off).
Same method as the anchors: CUDA
events, warm-up, median of repeats; one JSON object per line, in the anchors' format, which run.sh appends
to the anchors' output for report.py.
"""
import json
import math
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

# The attention block of tests/programs/science/attn.loop (kernel block) as torch writes it: layer norm,
# the three projections, causal softmax attention per head, the output projection and the residual.
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
T, D, NH, HD = 1024, 768, 12, 64
X = torch.rand(T, D, device=dev) * 2 - 1
gain, bias = torch.rand(D, device=dev), torch.rand(D, device=dev)
Wq, Wk, Wv = (torch.rand(D, NH * HD, device=dev) * 2 - 1 for _ in range(3))
Wo = torch.rand(NH * HD, D, device=dev) * 2 - 1
causal = torch.ones(T, T, device=dev, dtype=torch.bool).triu(1)


def attention_block():
    xn = torch.nn.functional.layer_norm(X, (D,), gain, bias, eps=1e-5)
    q, k, v = ((xn @ w).view(T, NH, HD).transpose(0, 1) for w in (Wq, Wk, Wv))
    scores = (q @ k.transpose(1, 2)) / math.sqrt(HD)
    weights = scores.masked_fill(causal, float("-inf")).softmax(-1)
    heads = (weights @ v).transpose(0, 1).reshape(T, NH * HD)
    return heads @ Wo + X


t = bench(attention_block, repeat=10)
emit(kind="program", op=f"attention block T={T} D={D} NH={NH} HD={HD} (torch)", ms=round(t * 1e3, 4))
