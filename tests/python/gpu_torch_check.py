"""On a machine with a GPU and PyTorch (scripts/gpu_check.sh): kernels called
on CUDA tensors, checked against torch, with no copy (the outputs given are
the tensors written; the inputs keep their data pointers) and the outputs
made as CUDA tensors on the inputs' device. Exits non-zero on a failure."""

import sys

import loopc
import torch


def main(samples):
    failures = 0

    def check(name, ok):
        nonlocal failures
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
        failures += 0 if ok else 1

    module = loopc.compile(f"{samples}/matmul.loop", device="gpu")
    torch.manual_seed(1)
    for m, k, n in [(257, 129, 263), (1000, 1000, 1000), (2048, 2048, 2048)]:
        A = torch.rand(m, k, device="cuda")
        B = torch.rand(k, n, device="cuda")
        pointers = (A.data_ptr(), B.data_ptr())
        C = module.matmul(A, B)
        expected = (A.double() @ B.double()).float()
        check(f"matmul {m}x{k}x{n}: a CUDA tensor on {A.device}",
              isinstance(C, torch.Tensor) and C.device == A.device)
        check(f"matmul {m}x{k}x{n}: agrees with torch",
              torch.allclose(C, expected, rtol=1e-4, atol=1e-3 * k ** 0.5))
        given = torch.empty(m, n, device="cuda")
        check(f"matmul {m}x{k}x{n}: out= written in place",
              module.matmul(A, B, out=given) is given and torch.equal(given, C))
        check(f"matmul {m}x{k}x{n}: inputs not moved", (A.data_ptr(), B.data_ptr()) == pointers)
    dot = loopc.compile(f"{samples}/dot.loop", device="gpu")
    x, y = torch.rand(1000003, device="cuda"), torch.rand(1000003, device="cuda")
    check("dot 1000003 agrees with torch",
          abs(float(dot.dot(x, y)) - float(x.double() @ y.double())) < 1e-2)
    return failures


if __name__ == "__main__":
    sys.exit(1 if main(sys.argv[1] if len(sys.argv) > 1 else "samples") else 0)
