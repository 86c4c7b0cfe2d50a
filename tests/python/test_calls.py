"""How kernels are called from Python: arrays used in place, outputs made or
given, scalars and sizes, results, the errors and their messages, copies
when asked for, kernels written inline, explain / ptx / bench, several
modules, threads and DLPack."""

import os
import threading

import numpy as np
import pytest

import loopc

SAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "samples")

PROGRAM = """
kernel saxpy(x: in f32[N], y: inout f32[N], a: f32) {
  parfor i in 0..N { y[i] += a * x[i]; }
}

kernel stats(x: in f64[N], total: out f64, largest: out f64) {
  total = redomap(+, 0.0, i in 0..N) x[i];
  largest = redomap(max, -inf, i in 0..N) x[i];
}

kernel fill(y: out i64[N], first: i64) {
  parfor i in 0..N { y[i] = first + i; }
}

kernel pick(x: in f32[N], at: i32, y: out f32) {
  y = x[at];
}

kernel flags(x: in i32[N], positive: out bool[N]) {
  parfor i in 0..N { positive[i] = x[i] > 0; }
}
"""


@pytest.fixture(params=["cpu", "interp", "gpu-on-cpu"])
def module(request):
    return loopc.compile(PROGRAM, device=request.param)


def test_inout_arrays_are_updated_in_place_and_outputs_are_new_arrays(module):
    x = np.arange(5, dtype=np.float32)
    y = np.ones(5, np.float32)
    assert module.saxpy(x, y, 2.0) is None
    np.testing.assert_array_equal(y, 1 + 2 * x)
    module.saxpy(x, y=y, a=1)  # by name; an int for an f32 scalar, as a literal would
    np.testing.assert_array_equal(y, 1 + 3 * x)
    filled = module.fill(first=10, N=4)  # a size no array gives, by name
    np.testing.assert_array_equal(filled, [10, 11, 12, 13])
    assert filled.dtype == np.int64
    with pytest.raises(loopc.ArgumentError, match=r"cannot infer size N .* set it with N=\.\.\."):
        module.fill(first=10)
    with pytest.raises(loopc.ArgumentError, match="size N of kernel 'fill' is a whole number"):
        module.fill(first=10, N=2.5)


def test_several_outputs_are_a_named_tuple_and_scalar_outputs_numpy_scalars(module):
    x = np.array([1.5, -2.0, 4.0])
    result = module.stats(x)
    assert result == (3.5, 4.0)
    assert result.total == 3.5 and result.largest == 4.0
    assert isinstance(result.total, np.float64)
    assert module.pick(np.array([5, 6, 7], np.float32), 1) == 6.0
    np.testing.assert_array_equal(module.flags(np.array([3, -1, 0], np.int32)), [True, False, False])


def test_outputs_the_run_makes_outlive_the_module_and_every_other_call(module):
    # The run makes them in its own memory, which the arrays keep.
    x = np.arange(1000, dtype=np.int32) - 500
    flags = module.flags(x)
    filled = module.fill(first=3, N=2000)
    del module
    import gc

    gc.collect()
    for _ in range(3):
        loopc.compile(PROGRAM, device="cpu").fill(first=0, N=2000)
    np.testing.assert_array_equal(flags, x > 0)
    np.testing.assert_array_equal(filled, np.arange(3, 2003))
    assert flags.dtype == np.bool_ and flags.flags.c_contiguous and flags.flags.writeable
    empty = loopc.compile(PROGRAM).fill(first=1, N=0)
    assert empty.shape == (0,) and empty.dtype == np.int64


def test_outputs_written_into_given_arrays_without_a_copy():
    module = loopc.compile(os.path.join(SAMPLES, "matmul.loop"), device="cpu")
    A = np.arange(6, dtype=np.float32).reshape(2, 3)
    B = np.arange(12, dtype=np.float32).reshape(3, 4)
    C = np.full((2, 4), 99, np.float32)
    assert module.matmul(A, B, out=C) is C  # the array given, written (it starts zeroed)
    np.testing.assert_array_equal(C, A @ B)
    D = np.empty((2, 4), np.float32)
    assert module.matmul(A, B, out={"C": D}) is D
    stats = loopc.compile(PROGRAM, device="cpu")
    total, largest = np.empty((), np.float64), np.empty((), np.float64)
    stats.stats(np.array([1.0, 2.0]), out=(total, largest))
    assert total[()] == 3.0 and largest[()] == 2.0


def test_arrays_that_cannot_be_used_in_place_are_refused_saying_how_to_fix_it():
    module = loopc.compile(os.path.join(SAMPLES, "matmul.loop"), device="cpu")
    A, B = np.ones((4, 3), np.float32), np.ones((3, 5), np.float32)
    cases = [
        ((A.astype(np.float64), B), "'A' of kernel 'matmul' needs f32 elements, but a float64 "
                                    "array was given: pass A.astype(numpy.float32)"),
        ((np.ones((3, 4), np.float32).T, B), "'A' of kernel 'matmul' is not C-contiguous"),
        ((A, [[1.0] * 5] * 3), "'B' of kernel 'matmul' needs a C-contiguous f32 array, but a list "
                              "was given: pass numpy.asarray(B, dtype=numpy.float32)"),
        ((A[0], B), "'A' of kernel 'matmul' needs an array of rank 2 (f32[M][K]), but one of "
                    "shape (3,) was given"),
        ((A,), "kernel 'matmul' needs B (its arguments are A, B)"),
        ((A, B, A), "kernel 'matmul' takes 2 arguments (A, B), but 3 were given"),
    ]
    for args, message in cases:
        with pytest.raises(loopc.ArgumentError) as raised:
            module.matmul(*args)
        assert message in str(raised.value)
    with pytest.raises(loopc.ArgumentError, match="has no parameter or size named 'Q'"):
        module.matmul(A, B, Q=1)
    with pytest.raises(loopc.ArgumentError, match="'C' is an output of kernel 'matmul'"):
        module.matmul(A, B, C=np.empty((4, 5), np.float32))
    with pytest.raises(loopc.ArgumentError, match="out=: kernel 'matmul' has 1 output"):
        module.matmul(A, B, out=(np.empty((4, 5), np.float32),) * 2)
    read_only = np.ones(3, np.float32)
    read_only.flags.writeable = False
    saxpy = loopc.compile(PROGRAM, device="cpu").saxpy
    with pytest.raises(loopc.ArgumentError, match="read-only"):
        saxpy(np.ones(3, np.float32), read_only, 1.0)
    with pytest.raises(loopc.ArgumentError, match="'a' is a scalar f32, but a Python str"):
        saxpy(np.ones(3, np.float32), np.ones(3, np.float32), "2")
    with pytest.raises(loopc.ArgumentError, match="'at' is a scalar i32, but a Python float"):
        loopc.compile(PROGRAM, device="cpu").pick(np.ones(3, np.float32), 1.5)


def test_errors_from_the_compiler_carry_the_place():
    module = loopc.compile(os.path.join(SAMPLES, "matmul.loop"), device="cpu")
    with pytest.raises(loopc.ArgumentError) as raised:
        module.matmul(np.ones((4, 3), np.float32), np.ones((2, 5), np.float32))
    error = raised.value
    assert error.message == "size K is 3 from 'A' (dimension 1) but 2 from 'B' (dimension 0)"
    assert error.file.endswith("matmul.loop") and (error.line, error.column) == (6, 42)
    assert str(error).startswith(error.file + ":6:42: error: size K is 3")
    assert "^" in str(error)
    with pytest.raises(loopc.CompileError) as raised:
        loopc.compile("kernel k(a: in f32[N]) {\n  parfor i in 0..N { a[i] = 1.0; }\n}\n")
    error = raised.value
    assert (error.file, error.line, error.column) == ("<string>", 2, 22)
    assert "cannot assign to 'a': it is an 'in' parameter" in error.message
    assert "note: 'a' is declared here" in str(error)
    with pytest.raises(loopc.Error, match="cannot read 'nothing-here.loop'"):
        loopc.compile("nothing-here.loop")
    with pytest.raises(loopc.DeviceError, match="no-such-device"):
        loopc.compile(PROGRAM, device="no-such-device")


def test_an_index_out_of_range_is_a_run_error_at_its_place(module):
    with pytest.raises(loopc.RunError) as raised:
        module.pick(np.ones(3, np.float32), 3)
    assert raised.value.line == 16
    assert "out of range" in raised.value.message
    assert module.pick(np.ones(3, np.float32), 2) == 1.0  # the module still works


def test_allow_copies_converts_and_writes_inout_arrays_back():
    module = loopc.compile(PROGRAM, device="cpu", allow_copies=True)
    y = np.ones(4)  # float64, for an f32 inout
    module.saxpy([1, 2, 3, 4], y, 1.0)
    np.testing.assert_array_equal(y, [2, 3, 4, 5])
    strided = np.ones(8, np.float32)[::2]
    module.saxpy(np.arange(4.0), strided, 2.0)
    np.testing.assert_array_equal(strided, [1, 3, 5, 7])


def test_kernels_written_inline():
    saxpy = loopc.kernel(
        "kernel saxpy(x: in f32[N], y: inout f32[N], a: f32) {\n"
        "  parfor i in 0..N { y[i] += a * x[i]; }\n}\n", device="cpu")
    y = np.zeros(3, np.float32)
    saxpy(np.ones(3, np.float32), y, 4.0)
    np.testing.assert_array_equal(y, [4, 4, 4])

    @loopc.kernel(device="interp")
    def double():
        """kernel double(x: in i32[N], y: out i32[N]) { parfor i in 0..N { y[i] = 2 * x[i]; } }"""

    np.testing.assert_array_equal(double(np.arange(4, dtype=np.int32)), [0, 2, 4, 6])
    assert "kernel double(x: in i32[N], y: out i32[N])" == double.__doc__
    with pytest.raises(TypeError, match="has no docstring"):
        loopc.kernel(lambda: None)


def test_explain_ptx_and_bench():
    module = loopc.compile(os.path.join(SAMPLES, "matmul.loop"), device="cpu")
    assert "// after map_to_gpu" in module.matmul.explain(after="map_to_gpu")
    assert "remark" in module.matmul.explain(remarks=True)
    perf = module.matmul.explain(perf=True, sizes={"M": 256, "N": 256, "K": 256},
                                 device_model="h100")
    assert "predicted" in perf
    assert ".target sm_90" in module.matmul.ptx("sm_90")
    with pytest.raises(loopc.ArgumentError, match="not a GPU architecture"):
        module.matmul.ptx("volta")
    A, B = np.ones((64, 32), np.float32), np.ones((32, 48), np.float32)
    result = module.matmul.bench(A, B, repeat=3)
    assert result.runs == 3 and result.median_ms > 0 and result.gflops > 0
    assert result.device == "cpu" and result.predicted_ms > 0
    saxpy = loopc.compile(PROGRAM, device="cpu").saxpy
    y = np.zeros(5, np.float32)
    saxpy.bench(np.ones(5, np.float32), y, 1.0, repeat=2)
    assert not y.any()  # inout arrays are copied for the timed runs


def test_programs_are_compiled_once_and_several_modules_live_together():
    first = loopc.compile(PROGRAM, device="cpu")
    again = loopc.compile(PROGRAM, device="cpu")
    assert first._program is again._program
    matmul = loopc.compile(os.path.join(SAMPLES, "matmul.loop"), device="cpu")
    dot = loopc.compile(os.path.join(SAMPLES, "dot.loop"), device="interp")
    x = np.arange(3, dtype=np.float32)
    assert dot.dot(x, x) == 5.0
    np.testing.assert_array_equal(matmul.matmul(np.eye(3, dtype=np.float32), x[:, None]), x[:, None])
    assert sorted(first.kernel_names) == ["fill", "flags", "pick", "saxpy", "stats"]
    with pytest.raises(AttributeError, match="has no kernel 'nothing'"):
        first.nothing
    imports = loopc.compile("import linalg;\nkernel k(A: in f32[M][N], x: in f32[N], "
                            "y: out f32[M]) { gemv(A, x, y); }\n", device="cpu")
    np.testing.assert_array_equal(imports.k(np.eye(2, dtype=np.float32), np.ones(2, np.float32)),
                                  [1, 1])


def test_threads_call_while_others_do():
    module = loopc.compile(os.path.join(SAMPLES, "matmul.loop"), device="cpu")
    failures = []

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(5):
            A = rng.random((33, 17), dtype=np.float32)
            B = rng.random((17, 29), dtype=np.float32)
            if not np.allclose(module.matmul(A, B), A @ B, rtol=1e-4, atol=1e-4):
                failures.append(seed)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures


class Wrapped:
    """An array of another library, known to loopc only by DLPack."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_dlpack_arrays_in_host_memory_are_used_in_place():
    module = loopc.compile(PROGRAM, device="cpu")
    y = np.zeros(3, np.float32)
    module.saxpy(Wrapped(np.ones(3, np.float32)), Wrapped(y), 2.0)
    np.testing.assert_array_equal(y, [2, 2, 2])  # written through DLPack, in place


class FakeCudaArray:
    __cuda_array_interface__ = {"shape": (3,), "typestr": "<f4", "data": (0, False), "version": 3}


def test_gpu_arrays_on_a_module_on_the_cpu_are_refused_with_a_message():
    with pytest.raises(loopc.ArgumentError, match="'y' is in GPU memory, but the module runs on cpu"):
        loopc.compile(PROGRAM, device="cpu").saxpy(np.ones(3, np.float32), FakeCudaArray(), 1.0)


def test_tune_keeps_the_fastest_choices_and_tuned_modules_use_them(tmp_path, capsys):
    cache = tmp_path / "tuning.json"
    module = loopc.compile(os.path.join(SAMPLES, "matmul.loop"), device="cpu", tuning_cache=cache)
    A, B = np.ones((40, 24), np.float32), np.ones((24, 56), np.float32)
    result = module.matmul.tune(A, B, repeat=1)
    assert isinstance(result, loopc.TuneResult)
    assert result.median_ms > 0 and result.default_ms >= result.median_ms
    assert "tuned kernel 'matmul' on cpu" in capsys.readouterr().out
    assert '"matmul"' in cache.read_text()
    tuned = loopc.compile(os.path.join(SAMPLES, "matmul.loop"), device="cpu", tuned=True,
                          tuning_cache=cache)
    np.testing.assert_array_equal(tuned.matmul(A, B), np.full((40, 56), 24, np.float32))
    with pytest.raises(loopc.RunError, match="nothing to tune on device 'interp'"):
        loopc.compile(os.path.join(SAMPLES, "matmul.loop"), device="interp").matmul.tune(A, B)


def test_torch_tensors_on_the_cpu_are_used_in_place_and_outputs_come_back_as_tensors():
    torch = pytest.importorskip("torch")
    module = loopc.compile(PROGRAM, device="cpu")
    x, y = torch.arange(4, dtype=torch.float32), torch.ones(4)
    module.saxpy(x, y, 2.0)
    assert y.tolist() == [1, 3, 5, 7]  # written where the tensor is
    matmul = loopc.compile(os.path.join(SAMPLES, "matmul.loop"), device="cpu")
    A, B = torch.rand(7, 5), torch.rand(5, 3)
    C = matmul.matmul(A, B)
    assert isinstance(C, torch.Tensor) and C.shape == (7, 3)
    assert torch.allclose(C, A @ B, rtol=1e-5, atol=1e-5)
    with pytest.raises(loopc.ArgumentError, match="needs f32 elements, but the array given holds "
                                                  "f64"):
        matmul.matmul(A.double(), B)
    with pytest.raises(loopc.ArgumentError, match="strided"):
        matmul.matmul(torch.rand(5, 7).t(), B)


INTERRUPTED = """
import os, signal, sys, threading, time
import numpy as np, loopc
m = loopc.compile('''
kernel spin(x: in f64[N], r: out f64) {
  r = redomap(+, 0.0, i in 0..N, j in 0..N, k in 0..N) x[i] * x[j] + x[k];
}''', device=sys.argv[1])
threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
start = time.time()
try:
    m.spin(np.ones(3000))
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted", time.time() - start < 20)
print(m.spin(np.ones(3)))
"""


@pytest.mark.parametrize("device", ["interp", "cpu"])
def test_ctrl_c_stops_a_run_and_the_module_goes_on(device):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", INTERRUPTED, device], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ))
    assert done.stdout.split("\n")[:2] == ["interrupted True", "54.0"], done.stderr


def test_a_path_object_or_an_existing_file_is_read_whatever_its_name(tmp_path):
    program = "kernel twice(x: in i32[N], y: out i32[N]) { parfor i in 0..N { y[i] = 2 * x[i]; } }\n"
    text_file = tmp_path / "kernels.txt"
    text_file.write_text(program)
    for source in (text_file, str(text_file)):
        module = loopc.compile(source, device="interp")
        np.testing.assert_array_equal(module.twice(np.arange(3, dtype=np.int32)), [0, 2, 4])
    with pytest.raises(loopc.Error, match="cannot read"):
        loopc.compile(tmp_path / "missing.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("kernel k(a: in f32[N]) {\n  parfor i in 0..N { a[i] = 1.0; }\n}\n")
    with pytest.raises(loopc.CompileError) as raised:
        loopc.compile(bad)
    assert (raised.value.file, raised.value.line) == (str(bad), 2)  # located in the file
