"""loopc from Python: compile .loop kernels and call them on NumPy arrays.

    import numpy as np
    import loopc

    linalg = loopc.compile("samples/matmul.loop")
    A = np.random.rand(512, 256).astype(np.float32)
    B = np.random.rand(256, 128).astype(np.float32)
    C = linalg.matmul(A, B)                 # a new array, sizes from A and B
    linalg.matmul(A, B, out=C)              # or written into one

A kernel's ``in`` and ``inout`` parameters and its scalars are the call's
arguments, in order or by name; its ``out`` parameters are the result (one
array, or a named tuple of several). Arrays are used in place, never copied:
C-contiguous, of the element type the kernel declares (f32 is
``numpy.float32``), and writable where the kernel writes them; anything else is
refused with a message saying how to fix it, or converted when the module is
compiled with ``allow_copies=True``. docs/python.md has the whole story.
"""

import collections
import sys
import threading

import numpy as _np

from . import errors
from ._loopc import Program as _Program
from ._loopc import dlpack_view as _dlpack_view
from ._loopc import known_devices as _known_devices
from .errors import ArgumentError, CompileError, DeviceError, Error, RunError

__all__ = [
    "compile",
    "kernel",
    "Module",
    "Kernel",
    "BenchResult",
    "TuneResult",
    "Error",
    "CompileError",
    "ArgumentError",
    "RunError",
    "DeviceError",
    "devices",
]

# The element types of the language and NumPy's.
_DTYPES = {
    "f32": _np.dtype(_np.float32),
    "f64": _np.dtype(_np.float64),
    "i32": _np.dtype(_np.int32),
    "i64": _np.dtype(_np.int64),
    "bool": _np.dtype(_np.bool_),
}
_NUMPY_NAMES = {
    "f32": "numpy.float32",
    "f64": "numpy.float64",
    "i32": "numpy.int32",
    "i64": "numpy.int64",
    "bool": "numpy.bool_",
}


def devices():
    """The device names loopc knows: interp, cpu, gpu-on-cpu, gpu ('auto' picks the best here)."""
    return list(_known_devices())


def _stdlib_dirs():
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(here, "stdlib")
    return [installed] if os.path.isdir(installed) else []


_cache = {}
_cache_lock = threading.Lock()


def compile(
    source,
    device="auto",
    *,
    unsafe=False,
    fp_contract="on",
    skip_passes=(),
    pass_params=None,
    allow_copies=False,
    tuned=False,
    tuning_cache=None,
):
    """Compiles a program: a .loop file's path, or the program's text.

    ``device`` is ``"auto"`` (the GPU when there is one, else the CPU),
    ``"gpu"``, ``"cpu"``, ``"gpu-on-cpu"`` (the GPU pipeline's kernels run on
    the CPU) or ``"interp"`` (the reference interpreter). ``unsafe`` leaves
    array indices unchecked; ``fp_contract="off"`` rounds every product
    before it is added; ``skip_passes`` and ``pass_params`` (name -> value)
    are the command line's ``--skip-pass`` and ``--pass-param``.
    ``allow_copies`` lets calls convert arrays that cannot be used in place
    (another element type, not C-contiguous, lists) instead of refusing them.
    ``tuned`` runs each call with the choices ``Kernel.tune`` (or ``loopc
    tune``) kept for its kernel, sizes and device, when there are some, from
    ``tuning_cache`` (default: the command line's, docs/tuning.md).

    A program is compiled once per process for the same text and options;
    each kernel is compiled for the sizes of its first call with them.
    Raises CompileError (with the file, line and column) when it does not
    check, DeviceError when the device is not here.
    """
    import os

    if not isinstance(source, (str, os.PathLike)):
        raise TypeError("loopc.compile takes a .loop file's path or a program's text")
    # A path object, or a one-line string naming a .loop file or a file that
    # exists, is a file; anything else is the program's text.
    is_path = isinstance(source, os.PathLike)
    source = os.fspath(source)
    if is_path or _looks_like_path(source):
        try:
            with open(source, encoding="utf-8") as file:
                text = file.read()
        except OSError as error:
            raise Error(f"cannot read '{source}': {error.strerror}") from None
        origin = source
    else:
        text, origin = source, "<string>"
    if fp_contract not in ("on", "off"):
        raise ValueError("fp_contract is 'on' or 'off'")
    parameters = tuple(f"{name}={value}" for name, value in sorted((pass_params or {}).items()))
    key = (text, origin, device, bool(unsafe), fp_contract, tuple(skip_passes), parameters,
           bool(tuned), tuning_cache or "")
    with _cache_lock:
        program = _cache.get(key)
        if program is None:
            program = _Program(
                text,
                origin,
                _stdlib_dirs(),
                device,
                list(skip_passes),
                list(parameters),
                bool(unsafe),
                fp_contract,
                bool(tuned),
                os.fspath(tuning_cache) if tuning_cache else "",
            )
            _cache[key] = program
    return Module(program, allow_copies)


def _looks_like_path(source):
    import os

    one_line = "\n" not in source and "{" not in source
    return one_line and (source.strip().endswith(".loop") or os.path.isfile(source))


def kernel(source=None, *, device="auto", **options):
    """A kernel written in Python: the text of a .loop program, or a decorator.

        saxpy = loopc.kernel('''
            kernel saxpy(x: in f32[N], y: inout f32[N], a: f32) {
              parfor i in 0..N { y[i] += a * x[i]; }
            }''')

        @loopc.kernel
        def saxpy():
            '''kernel saxpy(x: in f32[N], y: inout f32[N], a: f32) {
              parfor i in 0..N { y[i] += a * x[i]; }
            }'''

    gives the program's last kernel (the decorated function's docstring is
    the program, and its name the kernel's); the other options are compile's.
    """

    def build(text, name=None):
        module = compile(text, device, **options)
        if name is None:
            return module[module.kernel_names[-1]]
        return module[name]

    if source is None:
        return lambda function: build(_docstring_of(function), function.__name__)
    if callable(source):
        return build(_docstring_of(source), source.__name__)
    return build(source)


def _docstring_of(function):
    if not function.__doc__:
        raise TypeError(
            f"@loopc.kernel: '{function.__name__}' has no docstring; "
            "write the kernel's .loop text there"
        )
    return function.__doc__


class Module:
    """A compiled program: each kernel of its main file is an attribute (a Kernel)."""

    def __init__(self, program, allow_copies=False):
        self._program = program
        self._allow_copies = allow_copies
        self._kernels = {}
        for signature in program.kernels():
            self._kernels[signature["name"]] = Kernel(self, signature)

    @property
    def device(self):
        """The device the kernels run on: gpu, cpu, gpu-on-cpu or interp."""
        return self._program.device

    @property
    def kernel_names(self):
        """The kernels of the program's main file, in order."""
        return list(self._kernels)

    def __getattr__(self, name):
        kernels = self.__dict__.get("_kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(
            f"the program has no kernel '{name}' (it has {', '.join(kernels) or 'none'})"
        )

    def __getitem__(self, name):
        return self.__getattr__(name)

    def __dir__(self):
        return list(super().__dir__()) + list(self._kernels)

    def __repr__(self):
        return f"<loopc.Module on {self.device}: {', '.join(self._kernels)}>"


TuneResult = collections.namedtuple(
    "TuneResult", ["skip_passes", "pass_params", "median_ms", "default_ms"]
)
TuneResult.__doc__ = """What Kernel.tune kept: the passes to skip and the parameters (those not at
their defaults) that ran fastest, its median time and the defaults' in milliseconds. Compile
with tuned=True to use it, or pass the choices to compile()."""

BenchResult = collections.namedtuple(
    "BenchResult",
    ["median_ms", "min_ms", "spread", "runs", "gflops", "gbytes_per_s", "predicted_ms", "device"],
)
BenchResult.__doc__ = """A kernel's timing, as `loopc bench` measures it: the median and minimum of
`runs` runs in milliseconds, their spread ((max - min) / median), the GFLOP/s and GB/s of the
kernel's work at that median, and what the performance model predicted (None without a model)."""


class Kernel:
    """A kernel of a Module, called like a function (see the package's docs)."""

    def __init__(self, module, signature):
        self._module = module
        self.name = signature["name"]
        self.sizes = list(signature["sizes"])
        self.params = list(signature["params"])
        self.inputs = [p for p in self.params if p["intent"] != "out"]
        self.outputs = [p for p in self.params if p["intent"] == "out"]
        self._result = (
            collections.namedtuple(f"{self.name}_result", [p["name"] for p in self.outputs])
            if len(self.outputs) > 1
            else None
        )
        header = ", ".join(f"{p['name']}: {p['intent'] + ' ' if p['intent'] else ''}{p['type']}"
                           for p in self.params)
        self.__doc__ = f"kernel {self.name}({header})"

    def __repr__(self):
        return f"<loopc.Kernel {self.__doc__[7:]}>"

    # ------------------------------------------------------------ calling ---

    def __call__(self, *args, out=None, **kwargs):
        call = self._bind(args, kwargs, out, run_makes_outputs=True)
        try:
            if call.made:
                _, made = self._module._program.run_making_outputs(
                    self.name, call.arrays, call.scalars, call.sizes, call.outputs, call.made
                )
                for name, array in made.items():
                    call.results[name] = _like(call.like, array)
            else:
                self._module._program.run(
                    self.name, call.arrays, call.scalars, call.sizes, call.outputs
                )
        finally:
            call.release()
        return call.result()

    def bench(self, *args, repeat=10, warmup=1, device_model="", out=None, **kwargs):
        """Times the call as `loopc bench` does: `warmup` untimed runs, then `repeat` timed
        ones from the same inputs (inout arrays are copied for them and left as given).
        Returns a BenchResult."""
        import json

        call = self._bind(args, kwargs, out)
        try:
            text = self._module._program.bench(
                self.name, call.arrays, call.scalars, call.sizes, call.outputs,
                int(repeat), int(warmup), device_model or "",
            )
        finally:
            call.release(copy_back=False)
        report = json.loads(text)
        return BenchResult(
            median_ms=report["median_ms"],
            min_ms=report["min_ms"],
            spread=report["spread"],
            runs=report["runs"],
            gflops=report["gflops"],
            gbytes_per_s=report["gbytes_per_s"],
            predicted_ms=report.get("predicted_ms"),
            device=report["device"],
        )

    def tune(self, *args, repeat=5, out=None, **kwargs):
        """Searches the optimizations' choices for this call as `loopc tune` does (printing its
        progress), keeps the fastest in the tuning cache for these sizes and this device, and
        returns a TuneResult. Candidates run on copies of the arrays."""
        call = self._bind(args, kwargs, out)
        try:
            skipped, parameters, median, default = self._module._program.tune(
                self.name, call.arrays, call.scalars, call.sizes, call.outputs, int(repeat)
            )
        finally:
            call.release(copy_back=False)
        return TuneResult(sorted(skipped), dict(parameters), median, default)

    def explain(self, *, after="", target="gpu", remarks=False, changes=False, perf=False,
                sizes=None, device_model=""):
        """The kernel's Loop IR after each pass, as `loopc explain` prints it (a str): only
        after the pass `after`; `changes` for each pass's changes; `remarks` for what the
        optimizations did and declined; `perf` for the performance model's prediction at
        `sizes` (name -> value) on `device_model`."""
        return self._module._program.explain(
            self.name, after, target, bool(remarks), bool(changes), bool(perf),
            dict(sizes or {}), device_model or "",
        )

    def ptx(self, gpu="sm_80"):
        """The kernel's PTX for a GPU architecture (a str); needs no GPU."""
        return self._module._program.ptx(self.name, gpu)

    # ------------------------------------------------------------ binding ---

    def _bind(self, args, kwargs, out, run_makes_outputs=False):
        """The call's arguments as the extension takes them. The outputs out= does not give
        are made here, or, with `run_makes_outputs` where no array is on the GPU, left to the
        run to make (listed in `made`)."""
        allow_copies = self._module._allow_copies
        if len(args) > len(self.inputs):
            raise ArgumentError(
                f"kernel '{self.name}' takes {len(self.inputs)} argument"
                f"{'' if len(self.inputs) == 1 else 's'} ({self._input_names()}), "
                f"but {len(args)} were given"
            )
        given = {}
        for param, value in zip(self.inputs, args):
            given[param["name"]] = value
        sizes = {}
        for name, value in kwargs.items():
            if name in self.sizes:
                sizes[name] = _size_value(self.name, name, value)
                continue
            if any(p["name"] == name for p in self.outputs):
                raise ArgumentError(
                    f"'{name}' is an output of kernel '{self.name}': give an array to write it "
                    f"into with out=, or take it from the result"
                )
            if not any(p["name"] == name for p in self.inputs):
                names = [p["name"] for p in self.params] + self.sizes
                raise ArgumentError(
                    f"kernel '{self.name}' has no parameter or size named '{name}' "
                    f"(it has {', '.join(names) or 'none'})"
                )
            if name in given:
                raise ArgumentError(f"'{name}' is given twice (by position and by name)")
            given[name] = value
        missing = [p["name"] for p in self.inputs if p["name"] not in given]
        if missing:
            raise ArgumentError(
                f"kernel '{self.name}' needs {', '.join(missing)} "
                f"(its arguments are {self._input_names()})"
            )

        call = _Call(self)
        call.sizes = sizes
        for param in self.inputs:
            value = given[param["name"]]
            writes = param["intent"] == "inout"
            if param["rank"] == 0 and not writes:
                call.scalars[param["name"]] = _scalar_value(self.name, param, value)
                continue
            call.add_array(param, value, writes, allow_copies)
        for param, value in self._outputs_given(out):
            call.add_output(param, value, allow_copies)
        missing_outputs = [p for p in self.outputs if p["name"] not in call.outputs]
        if missing_outputs and run_makes_outputs and not call.on_gpu:
            call.made = [p["name"] for p in missing_outputs]
        elif missing_outputs:
            shapes = self._module._program.output_shapes(
                self.name, call.arrays, call.scalars, call.sizes, call.outputs
            )
            for param in missing_outputs:
                shape, dtype = shapes[param["name"]]
                call.new_output(param, shape, dtype)
        return call

    def _input_names(self):
        return ", ".join(p["name"] for p in self.inputs) or "none"

    def _outputs_given(self, out):
        """The arrays out= gives, as (parameter, array) pairs."""
        if out is None:
            return []
        if isinstance(out, dict):
            for name in out:
                if not any(p["name"] == name for p in self.outputs):
                    raise ArgumentError(
                        f"out=: kernel '{self.name}' has no output named '{name}' (its outputs "
                        f"are {', '.join(p['name'] for p in self.outputs) or 'none'})"
                    )
            return [(p, out[p["name"]]) for p in self.outputs if p["name"] in out]
        values = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(values) != len(self.outputs):
            raise ArgumentError(
                f"out=: kernel '{self.name}' has {len(self.outputs)} output"
                f"{'' if len(self.outputs) == 1 else 's'} "
                f"({', '.join(p['name'] for p in self.outputs) or 'none'}), "
                f"but {len(values)} were given"
            )
        return list(zip(self.outputs, values))


def _size_value(kernel, name, value):
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise ArgumentError(f"size {name} of kernel '{kernel}' is a whole number, not {value!r}")
    value = int(value)
    if value < 0:
        raise ArgumentError(f"size {name} of kernel '{kernel}' cannot be negative ({value})")
    return value


def _scalar_value(kernel, param, value):
    if isinstance(value, _np.ndarray):
        if value.ndim != 0:
            raise ArgumentError(
                f"'{param['name']}' is a scalar {param['dtype']}, but an array of shape "
                f"{value.shape} was given"
            )
        value = value[()]
    if isinstance(value, _np.generic):
        value = value.item()
    return value


class _Call:
    """The arrays of one call as the extension takes them, and the copies to write back."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.arrays = {}
        self.scalars = {}
        self.sizes = {}
        self.outputs = {}
        self.kept = []  # every array passed, alive until the call returns
        self.copied_back = []  # (the caller's array, the copy the kernel wrote)
        self.results = {}
        self.like = None  # the first array argument: outputs are given back in its kind
        self.on_gpu = False  # whether an array given is in GPU memory
        self.gpu_like = None  # the first of those: GPU outputs are made by its library
        self.made = []  # outputs the run makes (NumPy arrays over the run's memory)

    def add_array(self, param, value, writes, allow_copies):
        if self.like is None:
            self.like = value
        array = _as_array(self.kernel, param, value, writes, allow_copies)
        if array is not value and writes and isinstance(value, _np.ndarray):
            self.copied_back.append((value, array))
        if isinstance(array, _Borrowed) and array.on_gpu and self.gpu_like is None:
            self.gpu_like = value
        self._pass(self.arrays, param, array)

    def add_output(self, param, value, allow_copies):
        array = _as_array(self.kernel, param, value, True, allow_copies)
        if array is not value and isinstance(value, _np.ndarray):
            self.copied_back.append((value, array))
        self._pass(self.outputs, param, array)
        self.results[param["name"]] = value

    def new_output(self, param, shape, dtype):
        if self.on_gpu:
            array = _new_gpu_array(self.kernel, param, self.gpu_like, shape, dtype)
            self._pass(self.outputs, param, _as_array(self.kernel, param, array, True, False))
            self.results[param["name"]] = array
            return
        array = _np.empty(shape, dtype=_DTYPES[dtype])
        self._pass(self.outputs, param, array)
        self.results[param["name"]] = _like(self.like, array)

    def _pass(self, where, param, array):
        self.kept.append(array)
        if isinstance(array, _Borrowed):
            where[param["name"]] = (array.address, array.shape, param["dtype"], array.on_gpu)
            self.on_gpu = self.on_gpu or array.on_gpu
            return
        where[param["name"]] = (array, param["dtype"])

    def release(self, copy_back=True):
        if copy_back:
            for original, copy in self.copied_back:
                _np.copyto(original, copy, casting="unsafe")
        self.kept.clear()

    def result(self):
        outputs = self.kernel.outputs
        values = []
        for param in outputs:
            value = self.results[param["name"]]
            if param["rank"] == 0 and isinstance(value, _np.ndarray):
                value = value[()]
            values.append(value)
        if not values:
            return None
        if len(values) == 1:
            return values[0]
        return self.kernel._result(*values)


def _like(like, array):
    """`array` (NumPy) as the kind of array `like` is, when that is not NumPy but takes DLPack."""
    if like is None or isinstance(like, _np.ndarray) or not hasattr(like, "__dlpack__"):
        return array
    library = sys.modules.get(type(like).__module__.split(".")[0])
    from_dlpack = getattr(library, "from_dlpack", None)
    return from_dlpack(array) if from_dlpack else array


def _as_array(kernel_object, param, value, writes, allow_copies):
    """`value` as a NumPy array the kernel can use in place (or a GPU array's address, on the
    GPU), or a copy where that is allowed."""
    kernel = kernel_object.name
    name, dtype = param["name"], _DTYPES[param["dtype"]]
    wanted = f"{'a writable ' if writes else 'a '}C-contiguous {param['dtype']} array"
    if not isinstance(value, _np.ndarray):
        if hasattr(value, "__cuda_array_interface__"):
            return _gpu_array(kernel_object, param, value, writes)
        if hasattr(value, "__dlpack__"):
            return _dlpack_array(kernel_object, param, value, wanted)
        if allow_copies and not writes:
            value = _np.asarray(value, dtype=dtype)
        else:
            raise ArgumentError(
                f"'{name}' of kernel '{kernel}' needs {wanted}, but a {type(value).__name__} was "
                f"given: pass numpy.asarray({name}, dtype={_NUMPY_NAMES[param['dtype']]})"
                + ("" if writes else ", or compile with allow_copies=True")
            )
    if value.ndim != param["rank"]:
        raise ArgumentError(
            f"'{name}' of kernel '{kernel}' needs an array of rank {param['rank']} "
            f"({param['type']}), but one of shape {value.shape} was given"
        )
    fits_type = value.dtype == dtype and value.dtype.isnative
    fits_layout = value.flags.c_contiguous and (value.flags.writeable or not writes)
    if fits_type and fits_layout:
        return value
    if allow_copies:
        return _np.ascontiguousarray(value, dtype=dtype)
    if not fits_type:
        raise ArgumentError(
            f"'{name}' of kernel '{kernel}' needs {param['dtype']} elements, but a {value.dtype} "
            f"array was given: pass {name}.astype({_NUMPY_NAMES[param['dtype']]}), or compile "
            f"with allow_copies=True"
        )
    if not value.flags.c_contiguous:
        raise ArgumentError(
            f"'{name}' of kernel '{kernel}' is not C-contiguous (a transposed or strided view): "
            f"pass numpy.ascontiguousarray({name}), or compile with allow_copies=True"
        )
    raise ArgumentError(
        f"'{name}' of kernel '{kernel}' is written by the kernel, but the array given is "
        f"read-only: pass a writable copy ({name}.copy())"
    )


class _Borrowed:
    """An array of another library passed by DLPack: its address and shape, and the capsule
    that keeps it alive while the call runs."""

    def __init__(self, address, shape, keep, on_gpu=False):
        self.address, self.shape, self.keep, self.on_gpu = address, shape, keep, on_gpu


_DLPACK_HOST = (1, 3)  # DLPack's CPU and CUDA host memory
_DLPACK_CUDA = 2


def _dlpack_array(kernel_object, param, value, wanted):
    kernel, name = kernel_object.name, param["name"]
    device = value.__dlpack_device__()[0] if hasattr(value, "__dlpack_device__") else 1
    if device == _DLPACK_CUDA:
        _require_gpu(kernel_object, name)
    capsule = value.__dlpack__()
    address, shape, dtype, c_order, device, _ = _dlpack_view(capsule)
    if device not in _DLPACK_HOST + (_DLPACK_CUDA,):
        raise ArgumentError(
            f"'{name}' is in memory of DLPack device type {device}, which loopc does not "
            f"reach: pass an array in host memory or on a CUDA GPU"
        )
    _check_rank_and_type(kernel, param, shape, dtype, "the array given holds "
                         + (dtype or "another type"))
    if not c_order:
        raise ArgumentError(
            f"'{name}' of kernel '{kernel}' needs {wanted}, but the array given is strided: "
            f"pass a contiguous copy"
        )
    return _Borrowed(address, tuple(shape), capsule, device == _DLPACK_CUDA)


def _check_rank_and_type(kernel, param, shape, dtype, holds):
    """Refuses an array passed by its address whose rank or element type is not the kernel's."""
    name = param["name"]
    if len(shape) != param["rank"]:
        raise ArgumentError(
            f"'{name}' of kernel '{kernel}' needs an array of rank {param['rank']} "
            f"({param['type']}), but one of shape {tuple(shape)} was given"
        )
    if dtype != param["dtype"]:
        raise ArgumentError(
            f"'{name}' of kernel '{kernel}' needs {param['dtype']} elements, but {holds}: "
            f"convert it first"
        )


# __cuda_array_interface__'s type strings (little-endian, or one byte).
_CUDA_TYPES = {"<f4": "f32", "<f8": "f64", "<i4": "i32", "<i8": "i64", "|b1": "bool"}


def _require_gpu(kernel_object, name):
    device = kernel_object._module.device
    if device != "gpu":
        raise ArgumentError(
            f"'{name}' is in GPU memory, but the module runs on {device}: compile it with "
            f"device='gpu' (or pass {name}.cpu())"
        )


def _gpu_array(kernel_object, param, value, writes):
    """A GPU array (__cuda_array_interface__) passed by its address, without a copy."""
    kernel, name = kernel_object.name, param["name"]
    _require_gpu(kernel_object, name)
    interface = value.__cuda_array_interface__
    shape = tuple(int(extent) for extent in interface["shape"])
    dtype = _CUDA_TYPES.get(interface["typestr"])
    address, read_only = interface["data"]
    _check_rank_and_type(kernel, param, shape, dtype,
                         f"the GPU array given holds {interface['typestr']}")
    strides = interface.get("strides")
    if strides is not None:
        expected, itemsize = [], _DTYPES[dtype].itemsize
        for extent in reversed(shape):
            expected.insert(0, itemsize)
            itemsize *= extent
        if any(e != 1 and s != x for e, s, x in zip(shape, strides, expected)):
            raise ArgumentError(
                f"'{name}' of kernel '{kernel}' is not C-contiguous: pass {name}.contiguous()"
            )
    if writes and read_only:
        raise ArgumentError(
            f"'{name}' of kernel '{kernel}' is written by the kernel, but the GPU array given "
            f"is read-only"
        )
    return _Borrowed(address, shape, value, True)


def _new_gpu_array(kernel_object, param, like, shape, dtype):
    """An output on the GPU, made by the library of the first GPU array given."""
    library = sys.modules.get(type(like).__module__.split(".")[0]) if like is not None else None
    empty = getattr(library, "empty", None)
    element = getattr(library, {"bool": "bool"}.get(dtype, _DTYPES[dtype].name), None)
    if empty is None or element is None:
        raise ArgumentError(
            f"kernel '{kernel_object.name}': no way to make its output '{param['name']}' on the "
            f"GPU: give it with out= (a GPU array of shape {tuple(shape)} and type {dtype})"
        )
    device = getattr(like, "device", None)
    try:
        return empty(tuple(shape), dtype=element, device=device)
    except TypeError:
        return empty(tuple(shape), dtype=element)
