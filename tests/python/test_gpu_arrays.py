"""GPU arrays (__cuda_array_interface__) passed to kernels on the GPU by their
address, without a copy, and outputs made on the GPU by the arrays' own
library. Over the stand-in driver (ctest points LOOPC_CUDA_DRIVER at it),
whose device memory is host memory: the GPU arrays here are NumPy arrays
posing as GPU arrays, and the launches record their parameters (the
kernels themselves do not run there; scripts/gpu_check.sh runs them on a
GPU with PyTorch)."""

import ctypes
import os
import struct

import numpy as np
import pytest

STUB = os.environ.get("LOOPC_CUDA_DRIVER")
pytestmark = pytest.mark.skipif(not STUB, reason="needs the stand-in driver (LOOPC_CUDA_DRIVER)")

import loopc  # noqa: E402

PROGRAM = """
kernel saxpy(x: in f32[N], y: inout f32[N], a: f32) {
  parfor i in 0..N { y[i] += a * x[i]; }
}
kernel scaled(x: in f32[N], y: out f32[N]) {
  parfor i in 0..N { y[i] = 2.0 * x[i]; }
}
"""


class FakeGpuArray:
    """A GPU array of a library named after this file, in the stand-in's memory."""

    def __init__(self, array, read_only=False):
        self.array, self.read_only = array, read_only
        self.device = "fake:0"

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.array.shape, "typestr": self.array.dtype.str,
                "data": (self.array.ctypes.data, self.read_only), "strides": None, "version": 3}


# The "library" of FakeGpuArray: what loopc makes GPU outputs with.
float32 = np.float32
made = []


def empty(shape, dtype, device=None):
    made.append(device)
    return FakeGpuArray(np.full(shape, 7, dtype))


def launch_parameters(stub):
    stub.loopcStubLaunchParameter.restype = ctypes.POINTER(ctypes.c_ubyte)
    words = set()
    for launch in range(stub.loopcStubLaunchCount()):
        for index in range(stub.loopcStubLaunchParameterCount(launch)):
            size = ctypes.c_size_t()
            data = stub.loopcStubLaunchParameter(launch, index, ctypes.byref(size))
            if size.value == 8:
                words.add(struct.unpack("<Q", bytes(data[:8]))[0])
    return words


def test_gpu_arrays_are_passed_by_their_address():
    stub = ctypes.CDLL(STUB)
    stub.loopcStubReset()
    module = loopc.compile(PROGRAM, device="gpu")
    assert module.device == "gpu"
    x, y = np.ones(37, np.float32), np.full(37, 5, np.float32)
    assert module.saxpy(FakeGpuArray(x), FakeGpuArray(y), 2.0) is None
    parameters = launch_parameters(stub)
    assert x.ctypes.data in parameters and y.ctypes.data in parameters  # not copies
    assert (y == 5).all()  # nothing copied back over it (the stand-in runs no kernel)


def test_gpu_outputs_are_made_by_the_arrays_library_and_zeroed():
    stub = ctypes.CDLL(STUB)
    stub.loopcStubReset()
    module = loopc.compile(PROGRAM, device="gpu")
    made.clear()
    y = module.scaled(FakeGpuArray(np.ones(9, np.float32)))
    assert isinstance(y, FakeGpuArray) and made == ["fake:0"]
    assert y.array.shape == (9,) and not y.array.any()  # made with 7s, zeroed on the device
    assert y.array.ctypes.data in launch_parameters(stub)
    given = np.full(9, 3, np.float32)
    out = FakeGpuArray(given)
    assert module.scaled(FakeGpuArray(np.ones(9, np.float32)), out=out) is out
    assert not given.any()


def test_gpu_arrays_are_refused_where_they_cannot_be_used():
    module = loopc.compile(PROGRAM, device="gpu")
    with pytest.raises(loopc.ArgumentError, match="'y' of kernel 'saxpy' is written by the "
                                                  "kernel, but the GPU array given is read-only"):
        module.saxpy(FakeGpuArray(np.ones(3, np.float32)),
                     FakeGpuArray(np.ones(3, np.float32), read_only=True), 1.0)
    with pytest.raises(loopc.ArgumentError, match="needs f32 elements, but the GPU array given "
                                                  "holds <f8"):
        module.scaled(FakeGpuArray(np.ones(3)))
    on_cpu = loopc.compile(PROGRAM, device="cpu")
    with pytest.raises(loopc.ArgumentError, match="'x' is in GPU memory, but the module runs on "
                                                  "cpu: compile it with device='gpu'"):
        on_cpu.scaled(FakeGpuArray(np.ones(3, np.float32)))
