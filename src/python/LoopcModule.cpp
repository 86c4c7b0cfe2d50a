// `loopc._loopc`, the Python extension behind the `loopc` package
// (src/python/loopc/__init__.py, docs/python.md). It holds a checked program
// and the engine of its device, and takes arrays as what the package makes
// of them: an address, a shape and an element type, in memory the caller
// owns and keeps while the call runs (HostArray::borrowing), so NumPy arrays
// are used in place. What is friendlier in Python (NumPy's dtypes and
// flags, DLPack, allocating outputs, named results) is the package's.
//
// Errors are raised as the package's exception classes (loopc.errors):
// CompileError for a program that does not check, ArgumentError for
// arguments that do not fit the kernel, RunError for a failure while it runs
// (an index out of range), each with the file, line and column when the
// error has a place, and the message formatted as the command line prints
// it (source line and caret).
#include "codegen/NvptxTarget.h"
#include "driver/BenchCommand.h"
#include "driver/Engines.h"
#include "driver/ExplainCommand.h"
#include "driver/RemarksOutput.h"
#include "driver/Session.h"
#include "driver/TuneCommand.h"
#include "driver/Tuning.h"
#include "engine/Bindings.h"
#include "frontend/Loader.h"
#include "lower/Lower.h"
#include "passes/Pipeline.h"
#include "perf/GpuDevices.h"
#include "sema/Sema.h"
#include "support/Interrupt.h"

#include <loopc/generated.h>

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <csignal>
#include <mutex>
#include <sstream>

namespace py = pybind11;

namespace loopc::python {

namespace {

// Runs one at a time in the process: the engines share the CPU thread pool
// and the GPU's queue, and a run already uses every core.
std::mutex runMutex;

// An error for Python: the package's class to raise and where it is.
struct RaisedError {
  std::string kind; // CompileError, ArgumentError, RunError, DeviceError
  std::string message;
  std::string formatted; // as the command line prints it
  std::string file;      // where it is, when it has a place
  uint32_t line = 0, column = 0;
};

// Raises `error` as the package's exception of its kind.
[[noreturn]] void raise(RaisedError error) { throw error; }

// An error of `kind` without a place in the source.
RaisedError unlocated(const std::string &kind, const std::string &message) {
  RaisedError error;
  error.kind = kind;
  error.message = message;
  error.formatted = "loopc: error: " + message + "\n";
  return error;
}

RaisedError located(const std::string &kind, const Error &error, const driver::Session &session) {
  RaisedError raised = unlocated(kind, error.message);
  Diagnostic diagnostic{Severity::Error, error.range, error.message};
  raised.formatted = session.diagnostics.format(diagnostic);
  if (error.range.valid() && error.range.begin.file < session.sources.fileCount()) {
    raised.file = session.sources.file(error.range.begin.file).path;
    raised.line = error.range.begin.line;
    raised.column = error.range.begin.col;
  }
  return raised;
}

// An array as the package passes it: a NumPy array it has checked and its
// element type, (array, type); or (address, shape, element type, whether
// the address is in GPU memory) for the others (DLPack, GPU arrays).
HostArray borrowedArray(const std::string &name, const py::tuple &description) {
  if (description.size() != 2 && description.size() != 4)
    raise(unlocated("ArgumentError", "'" + name +
                                         "': an array is passed as (NumPy array, type) or "
                                         "(address, shape, type, on the GPU)"));
  std::string typeName = description[description.size() == 2 ? 1 : 2].cast<std::string>();
  auto type = scalarTypeNamed(typeName);
  if (!type)
    raise(unlocated("ArgumentError", "'" + name + "': no element type '" + typeName +
                                         "' (f32, f64, i32, i64 or bool)"));
  if (description.size() == 2) {
    // Read at C speed: the package's __array_interface__ was a dict a call.
    auto array = description[0].cast<py::array>();
    std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
    void *data = array.size() ? const_cast<void *>(array.data()) : nullptr;
    return HostArray::borrowing(*type, std::move(shape), data);
  }
  auto address = description[0].cast<uintptr_t>();
  auto shape = description[1].cast<std::vector<int64_t>>();
  if (description[3].cast<bool>())
    return HostArray::onDevice(*type, std::move(shape), address);
  return HostArray::borrowing(*type, std::move(shape), reinterpret_cast<void *>(address));
}

// NumPy's name of an element type.
const char *numpyTypeName(ScalarType type) {
  switch (type) {
  case ScalarType::I32:
    return "int32";
  case ScalarType::I64:
    return "int64";
  case ScalarType::F32:
    return "float32";
  case ScalarType::F64:
    return "float64";
  case ScalarType::Bool:
    return "bool";
  }
  return "float32";
}

// A scalar argument of `param`'s type from a Python number, as a literal of
// the language converts: an int may become any numeric type, a float only a
// float type, a bool only bool.
HostArray scalarArgument(const VarDecl &param, const py::handle &value) {
  ScalarType type = param.type.element;
  HostArray scalar(type, {});
  std::string given = py::str(py::type::of(value).attr("__name__"));
  auto refuse = [&] {
    raise(unlocated("ArgumentError", "'" + param.name + "' is a scalar " + scalarTypeName(type) +
                                         ", but a Python " + given + " was given"));
  };
  bool isBool = py::isinstance<py::bool_>(value) || given == "bool_";
  if (type == ScalarType::Bool) {
    if (!isBool)
      refuse();
    scalar.setFromDouble(0, value.cast<bool>() ? 1 : 0);
    return scalar;
  }
  if (isBool)
    refuse();
  bool integral = py::isinstance<py::int_>(value) || py::hasattr(value, "__index__");
  if (isInteger(type)) {
    if (!integral)
      refuse();
    int64_t whole = 0;
    try {
      whole = py::int_(py::reinterpret_borrow<py::object>(value)).cast<int64_t>();
    } catch (const py::cast_error &) {
      raise(unlocated("ArgumentError", "'" + param.name + "': " + std::string(py::str(value)) +
                                           " does not fit in i64"));
    }
    if (type == ScalarType::I32 && (whole < INT32_MIN || whole > INT32_MAX))
      raise(unlocated("ArgumentError", "'" + param.name + "' is an i32, and " +
                                           std::to_string(whole) + " does not fit"));
    if (type == ScalarType::I32)
      scalar.data<int32_t>()[0] = static_cast<int32_t>(whole);
    else
      scalar.data<int64_t>()[0] = whole;
    return scalar;
  }
  if (!integral && !py::isinstance<py::float_>(value) && !py::hasattr(value, "__float__"))
    refuse();
  scalar.setFromDouble(0, py::float_(py::reinterpret_borrow<py::object>(value)).cast<double>());
  return scalar;
}

// DLPack's tensor as its specification lays it out (dlpack.h, version 0.x
// and 1.x alike for these fields): what `__dlpack__` hands over in a
// capsule named "dltensor".
struct DLPackDevice {
  int32_t deviceType; // 1: CPU, 2: CUDA, 3: CUDA host memory
  int32_t deviceId;
};
struct DLPackDataType {
  uint8_t code; // 0: int, 1: uint, 2: float, 6: bool
  uint8_t bits;
  uint16_t lanes;
};
struct DLPackTensor {
  void *data;
  DLPackDevice device;
  int32_t ndim;
  DLPackDataType dtype;
  int64_t *shape;
  int64_t *strides; // in elements; null for C order
  uint64_t byteOffset;
};
struct DLPackManagedTensor {
  DLPackTensor tensor;
  void *managerContext;
  void (*deleter)(DLPackManagedTensor *);
};

// What a DLPack capsule holds, without taking it over (its owner frees it
// when the capsule goes): (address, shape, element type or "", whether it
// is in C order, device type, device id).
py::tuple dlpackView(const py::capsule &capsule) {
  if (std::string(capsule.name() ? capsule.name() : "") != "dltensor")
    raise(unlocated("ArgumentError", "a DLPack capsule was already used (or is not one)"));
  const DLPackTensor &tensor = capsule.get_pointer<DLPackManagedTensor>()->tensor;
  std::vector<int64_t> shape(tensor.shape, tensor.shape + tensor.ndim);
  bool cOrder = true;
  int64_t expected = 1;
  for (int32_t d = tensor.ndim - 1; d >= 0 && tensor.strides; --d) {
    cOrder &= shape[d] == 1 || tensor.strides[d] == expected;
    expected *= shape[d];
  }
  std::string type;
  const DLPackDataType &dtype = tensor.dtype;
  if (dtype.lanes == 1) {
    if (dtype.code == 2 && dtype.bits == 32)
      type = "f32";
    else if (dtype.code == 2 && dtype.bits == 64)
      type = "f64";
    else if (dtype.code == 0 && dtype.bits == 32)
      type = "i32";
    else if (dtype.code == 0 && dtype.bits == 64)
      type = "i64";
    else if ((dtype.code == 6 || dtype.code == 1) && dtype.bits == 8)
      type = dtype.code == 6 ? "bool" : "";
  }
  auto address = reinterpret_cast<uintptr_t>(tensor.data) + tensor.byteOffset;
  return py::make_tuple(address, py::tuple(py::cast(shape)), type, cOrder, tensor.device.deviceType,
                        tensor.device.deviceId);
}

// Ctrl-C while a kernel runs from Python's main thread stops the run, as in
// the REPL (the interpreter at its next iteration, the CPU pool at its next
// chunk, a GPU run's results dropped); the call then raises
// KeyboardInterrupt. Python's own handler, which only notes the signal for
// the interpreter loop the run keeps from turning, is put back after.
class InterruptibleRun {
public:
  InterruptibleRun() {
    py::object threading = py::module_::import("threading");
    active_ = threading.attr("current_thread")().is(threading.attr("main_thread")());
    if (!active_)
      return;
    struct sigaction stop = {};
    stop.sa_handler = [](int) {
      requestInterrupt();
      loopc_cpu_cancel_launches(1);
    };
    sigemptyset(&stop.sa_mask);
    sigaction(SIGINT, &stop, &python_);
  }
  ~InterruptibleRun() {
    if (active_)
      sigaction(SIGINT, &python_, nullptr);
    loopc_cpu_cancel_launches(0);
  }
  InterruptibleRun(const InterruptibleRun &) = delete;
  InterruptibleRun &operator=(const InterruptibleRun &) = delete;

  // Raises KeyboardInterrupt when Ctrl-C stopped the run (with the GIL held).
  static void raiseIfInterrupted() {
    if (!takeInterrupt())
      return;
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw py::error_already_set();
  }

private:
  bool active_ = false;
  struct sigaction python_ = {};
};

// A checked program and the engine of its device.
class Program {
public:
  // `source` is the program's text; `origin` the file it was read from (its
  // relative imports resolve from there), or a name such as "<string>".
  Program(const std::string &source, const std::string &origin,
          const std::vector<std::string> &stdlibDirs, const std::string &device,
          const std::vector<std::string> &skipPasses,
          const std::vector<std::string> &passParameters, bool unsafe,
          const std::string &fpContract, bool tuned, const std::string &tuningCache)
      : tuned_(tuned), tuningCache_(tuningCache) {
    LoadOptions options;
    for (auto it = stdlibDirs.rbegin(); it != stdlibDirs.rend(); ++it)
      options.stdlibDirs.insert(options.stdlibDirs.begin(), *it);
    session_.program =
        loadProgramFromText(origin, source, session_.sources, session_.diagnostics, options);
    if (session_.program &&
        !driver::checkProgramAndSchedules(*session_.program, session_.diagnostics))
      session_.program.reset();
    if (!session_.program || session_.diagnostics.hasErrors()) {
      RaisedError error = unlocated("CompileError", "");
      error.formatted.clear();
      for (const Diagnostic &diagnostic : session_.diagnostics.diagnostics()) {
        error.formatted += session_.diagnostics.format(diagnostic);
        if (diagnostic.severity == Severity::Error && error.message.empty()) {
          error.message = diagnostic.message;
          if (diagnostic.range.valid()) {
            error.file = session_.sources.file(diagnostic.range.begin.file).path;
            error.line = diagnostic.range.begin.line;
            error.column = diagnostic.range.begin.col;
          }
        }
      }
      if (error.message.empty())
        error.message = "the program does not check";
      raise(error);
    }
    choiceOptions_.skippedPasses = skipPasses;
    choiceOptions_.parameters = passParameters;
    choiceOptions_.unsafe = unsafe;
    choiceOptions_.fpContract = fpContract;
    auto choices = choiceOptions_.choicesFor(*session_.program);
    if (!choices)
      raise(unlocated("ArgumentError", choices.error().message));
    choices_ = *choices;
    auto engine = device == "auto" ? driver::createDefaultEngine(choices_)
                                   : driver::createEngine(device, choices_);
    if (!engine)
      raise(unlocated("DeviceError", engine.error().message));
    engine_ = std::move(*engine);
  }

  std::string device() const { return engine_->kind(); }
  std::string deviceDescription() const { return engine_->device(); }

  // The kernels of the main file, in order: name, sizes, and each
  // parameter's name, intent, element type, rank and declared type.
  py::list kernels() const {
    py::list kernels;
    for (const KernelDecl *kernel : mainKernels()) {
      py::list params;
      for (const VarDeclPtr &param : kernel->params)
        params.append(py::dict(py::arg("name") = param->name,
                               py::arg("intent") = intentName(param->intent),
                               py::arg("dtype") = scalarTypeName(param->type.element),
                               py::arg("rank") = param->type.rank(),
                               py::arg("type") = session_.sources.text(param->type.range)));
      py::list sizes;
      for (const VarDeclPtr &size : kernel->sizes)
        sizes.append(size->name);
      kernels.append(py::dict(py::arg("name") = kernel->name, py::arg("params") = params,
                              py::arg("sizes") = sizes,
                              py::arg("line") = kernel->range.begin.line));
    }
    return kernels;
  }

  // The shape and element type of each out parameter (name -> (shape,
  // type)) for a call with `arrays`, `scalars` and the `outputs` given.
  py::dict outputShapes(const std::string &kernelName, const py::dict &arrays,
                        const py::dict &scalars, const py::dict &sizes,
                        const py::dict &outputs) const {
    const KernelDecl &kernel = kernelNamed(kernelName);
    ArgumentRequest request = requestFor(kernel, arrays, scalars, sizes, outputs);
    auto shapes = inferArgumentShapes(kernel, request);
    if (!shapes)
      raise(located("ArgumentError", shapes.error(), session_));
    py::dict result;
    for (size_t i = 0; i < kernel.params.size(); ++i) {
      const VarDecl &param = *kernel.params[i];
      if (param.intent == Intent::Out)
        result[py::str(param.name)] = py::make_tuple(py::tuple(py::cast(shapes->shapes[i])),
                                                     scalarTypeName(param.type.element));
    }
    return result;
  }

  // Runs the kernel on the arrays (in place) and returns the run's seconds.
  double run(const std::string &kernelName, const py::dict &arrays, const py::dict &scalars,
             const py::dict &sizes, const py::dict &outputs) {
    const KernelDecl &kernel = kernelNamed(kernelName);
    return bindAndRun(kernel, requestFor(kernel, arrays, scalars, sizes, outputs)).second;
  }

  // Runs the kernel as run() does, but the outputs `made` names, which the
  // call does not give: the run makes them (zeroed, as an out parameter
  // starts) and they come back as NumPy arrays over that memory, with no
  // copy and no call before the run for their shapes. Returns (seconds,
  // name -> array).
  py::tuple runMakingOutputs(const std::string &kernelName, const py::dict &arrays,
                             const py::dict &scalars, const py::dict &sizes,
                             const py::dict &outputs, const std::vector<std::string> &made) {
    const KernelDecl &kernel = kernelNamed(kernelName);
    auto [args, seconds] = bindAndRun(kernel, requestFor(kernel, arrays, scalars, sizes, outputs));
    py::dict result;
    for (size_t i = 0; i < kernel.params.size(); ++i) {
      const VarDecl &param = *kernel.params[i];
      if (param.intent != Intent::Out || std::ranges::find(made, param.name) == made.end())
        continue;
      // The array lives as long as the NumPy array over it.
      auto owned = std::make_unique<HostArray>(std::move(args.params[i]));
      std::vector<py::ssize_t> shape(owned->shape.begin(), owned->shape.end());
      void *data = owned->elementBytes().data();
      py::capsule keep(owned.get(), [](void *array) { delete static_cast<HostArray *>(array); });
      owned.release();
      result[py::str(param.name)] =
          py::array(py::dtype(numpyTypeName(param.type.element)), shape, data, keep);
    }
    return py::make_tuple(seconds, result);
  }

  // Binds the call's arguments and runs the kernel, the GIL released and
  // Ctrl-C stopping it; an argument the kernel refuses is an ArgumentError,
  // a failing run a RunError. Returns the bound arguments (outputs written)
  // and the run's seconds.
  std::pair<KernelArgs, double> bindAndRun(const KernelDecl &kernel,
                                           const ArgumentRequest &request) {
    auto args = bindKernelArguments(kernel, request);
    if (!args)
      raise(located("ArgumentError", args.error(), session_));
    Expected<RunStats> stats = makeError("not run");
    {
      InterruptibleRun interruptible;
      py::gil_scoped_release released;
      std::lock_guard lock(runMutex);
      stats = engineFor(kernel, *args).run(*session_.program, kernel, *args);
    }
    InterruptibleRun::raiseIfInterrupted();
    if (!stats)
      raise(located("RunError", stats.error(), session_));
    return {std::move(*args), stats->seconds};
  }

  // `loopc bench`'s report of the call, as its JSON object's text. The
  // runs start from the same inputs: inout arrays are copied for them.
  std::string bench(const std::string &kernelName, const py::dict &arrays, const py::dict &scalars,
                    const py::dict &sizes, const py::dict &outputs, int repeat, int warmup,
                    const std::string &deviceModel) {
    const KernelDecl &kernel = kernelNamed(kernelName);
    driver::PreparedRun prepared =
        preparedRun(kernel, requestFor(kernel, arrays, scalars, sizes, outputs),
                    [&](size_t param) { return kernel.params[param]->intent == Intent::InOut; });
    driver::BenchOutputOptions options;
    options.repeat = repeat;
    options.warmup = warmup;
    options.json = true;
    options.deviceModel = deviceModel;
    driver::RunTargetOptions target;
    target.file = session_.sources.file(kernel.range.begin.file).path;
    std::ostringstream report;
    Status timed = withEngineLent(
        prepared, [&] { return driver::benchPreparedRun(options, prepared, target, report); });
    if (!timed)
      raise(located("RunError", timed.error(), session_));
    return report.str();
  }

  // `loopc tune`'s search for the call, its progress printed to `progress`
  // (Python's sys.stdout); the best choice is kept in the tuning cache and
  // returned as (skipped passes, parameters, its ms, the defaults' ms).
  py::tuple tune(const std::string &kernelName, const py::dict &arrays, const py::dict &scalars,
                 const py::dict &sizes, const py::dict &outputs, int repeat) {
    const KernelDecl &kernel = kernelNamed(kernelName);
    // Every candidate starts from the same inputs, none written in place.
    driver::PreparedRun prepared = preparedRun(
        kernel, requestFor(kernel, arrays, scalars, sizes, outputs), [](size_t) { return true; });
    driver::RunTargetOptions target;
    target.file = session_.sources.file(kernel.range.begin.file).path;
    target.tuningCache = tuningCache_;
    std::ostringstream progress;
    Expected<driver::TunedChoice> tuned = withEngineLent(
        prepared, [&] { return driver::tunePreparedRun(target, repeat, prepared, progress); });
    tunedEngines_.clear(); // the cache has a new entry
    py::print(progress.str(), py::arg("end") = "");
    if (!tuned)
      raise(located("RunError", tuned.error(), session_));
    std::vector<std::string> skipped(tuned->choices.skipped.begin(), tuned->choices.skipped.end());
    py::dict parameters; // those that differ from the defaults
    auto defaults = passes::namedParameters({});
    for (const auto &[name, value] : passes::namedParameters(tuned->choices.parameters))
      if (std::ranges::find(defaults, std::pair{name, value}) == defaults.end())
        parameters[py::str(name)] = value;
    return py::make_tuple(skipped, parameters, tuned->medianMs, tuned->defaultMs);
  }

  // `loopc explain`'s output for the kernel.
  std::string explain(const std::string &kernelName, const std::string &after,
                      const std::string &target, bool remarks, bool changes, bool perf,
                      const std::map<std::string, int64_t> &sizes, const std::string &deviceModel) {
    driver::ExplainOptions options;
    options.kernel = kernelNamed(kernelName).name;
    options.after = after;
    options.target = target;
    options.remarks = remarks;
    options.changes = changes;
    options.perf = perf;
    options.deviceModel = deviceModel;
    options.passes = choiceOptions_;
    for (const auto &[name, value] : sizes)
      options.sizes.push_back(name + "=" + std::to_string(value));
    std::ostringstream out;
    auto printRemarks = [&](const std::vector<passes::Remark> &found) {
      driver::printRemarks(out, session_.diagnostics, found);
    };
    std::lock_guard lock(runMutex); // the passes' remarks and the engines' caches
    if (Status explained =
            driver::explainAsOptionsSay(out, *session_.program, options, printRemarks);
        !explained)
      raise(located("ArgumentError", explained.error(), session_));
    return out.str();
  }

  // The kernel's PTX for `gpu` (an sm_XY architecture).
  std::string ptx(const std::string &kernelName, const std::string &gpu) {
    const KernelDecl &kernel = kernelNamed(kernelName);
    if (gpu.size() < 5 || !gpu.starts_with("sm_") ||
        gpu.find_first_not_of("0123456789", 3) != std::string::npos)
      raise(unlocated("ArgumentError",
                      "'" + gpu + "' is not a GPU architecture (sm_80, sm_90, ...)"));
    passes::PipelineOptions pipeline;
    pipeline.target = passes::PipelineTarget::Gpu;
    pipeline.choices = choices_;
    pipeline.computeCapability = codegen::computeCapabilityOf(gpu);
    pipeline.multiprocessors = perf::typicalGpuDeviceFor(gpu).multiprocessors;
    std::lock_guard lock(runMutex);
    auto function = passes::runPipeline(ir::lowerKernel(*session_.program, kernel), pipeline);
    if (!function)
      raise(located("CompileError", function.error(), session_));
    auto text = codegen::compileToPtx(*function, gpu);
    if (!text)
      raise(located("CompileError", text.error(), session_));
    return *text;
  }

private:
  // The engine a call runs on: the module's, or with `tuned`, one with the
  // choices `loopc tune` kept for the call's kernel, sizes and device.
  Engine &engineFor(const KernelDecl &kernel, const KernelArgs &args) {
    if (!tuned_)
      return *engine_;
    driver::TuningKey key =
        driver::tuningKey(session_.sources, kernel, args, engine_->device(), choices_.boundsChecks);
    auto [known, inserted] = tunedEngines_.try_emplace(key.hash);
    if (inserted) {
      auto found = driver::findTunedChoice(driver::tuningCachePath(tuningCache_), key);
      if (!found) {
        tunedEngines_.erase(key.hash);
        raise(unlocated("Error", found.error().message));
      }
      if (*found) {
        (*found)->choices.boundsChecks = choices_.boundsChecks;
        auto engine = driver::createEngine(engine_->kind(), (*found)->choices);
        if (!engine) {
          tunedEngines_.erase(key.hash);
          raise(unlocated("DeviceError", engine.error().message));
        }
        known->second = std::move(*engine);
      }
    }
    return known->second ? *known->second : *engine_;
  }

  // `body`'s result, run with the module's engine lent to `prepared`, the GIL
  // released and Ctrl-C stopping it (KeyboardInterrupt raised after).
  template <typename Body>
  auto withEngineLent(driver::PreparedRun &prepared, Body body) -> decltype(body()) {
    std::optional<decltype(body())> result;
    {
      InterruptibleRun interruptible;
      py::gil_scoped_release released;
      std::lock_guard lock(runMutex);
      prepared.engine = std::move(engine_);
      result.emplace(body());
      engine_ = std::move(prepared.engine);
    }
    InterruptibleRun::raiseIfInterrupted();
    return std::move(*result);
  }

  // A run of `kernel` bound from `request` for loopc's timing loops (the
  // engine is the caller's to lend), the arrays of the parameters `copied`
  // picks in memory of its own when they were the caller's.
  driver::PreparedRun preparedRun(const KernelDecl &kernel, const ArgumentRequest &request,
                                  const std::function<bool(size_t)> &copied) {
    auto args = bindKernelArguments(kernel, request);
    if (!args)
      raise(located("ArgumentError", args.error(), session_));
    for (size_t i = 0; i < args->params.size(); ++i)
      if (HostArray &array = args->params[i]; array.borrowed.data() && copied(i)) {
        HostArray owned(array.type, array.shape);
        std::ranges::copy(array.elementBytes(), owned.bytes.begin());
        array = std::move(owned);
      }
    driver::PreparedRun prepared;
    prepared.session = &session_;
    prepared.kernel = &kernel;
    prepared.args = std::move(*args);
    prepared.choices = choices_;
    return prepared;
  }

  std::vector<const KernelDecl *> mainKernels() const {
    std::vector<const KernelDecl *> kernels;
    for (const auto &module : session_.program->modules)
      if (module == session_.program->modules.front())
        for (const auto &kernel : module->kernels)
          kernels.push_back(kernel.get());
    return kernels;
  }

  const KernelDecl &kernelNamed(const std::string &name) const {
    auto kernel = driver::selectKernel(*session_.program, name, "call");
    if (!kernel)
      raise(located("ArgumentError", kernel.error(), session_));
    return **kernel;
  }

  // The arrays (name -> (address, shape, type)), scalar inputs (name ->
  // number), sizes the arrays do not give (name -> int) and arrays to write
  // the outputs into, as bindKernelArguments takes them.
  ArgumentRequest requestFor(const KernelDecl &kernel, const py::dict &arrays,
                             const py::dict &scalars, const py::dict &sizes,
                             const py::dict &outputs) const {
    ArgumentRequest request;
    for (auto [name, value] : sizes)
      request.values[name.cast<std::string>()] = std::to_string(value.cast<int64_t>());
    request.memoryLimitBytes = UINT64_MAX; // the caller's arrays exist already
    request.valueOption = "";
    for (auto [name, description] : arrays) {
      std::string key = name.cast<std::string>();
      request.arrays[key] = borrowedArray(key, description.cast<py::tuple>());
    }
    for (auto [name, description] : outputs) {
      std::string key = name.cast<std::string>();
      request.outputs[key] = borrowedArray(key, description.cast<py::tuple>());
    }
    for (auto [name, value] : scalars) {
      std::string key = name.cast<std::string>();
      const VarDecl *param = nullptr;
      for (const VarDeclPtr &candidate : kernel.params)
        if (candidate->name == key)
          param = candidate.get();
      if (!param || param->isArray() || param->intent == Intent::Out)
        raise(unlocated("ArgumentError",
                        "kernel '" + kernel.name + "' has no scalar input named '" + key + "'"));
      request.arrays[key] = scalarArgument(*param, value);
    }
    return request;
  }

  driver::Session session_;
  bool tuned_ = false;
  std::string tuningCache_; // "": tuningCachePath's default
  // With `tuned_`, the engine of each tuning key's kept choice (null: none
  // kept, the module's engine).
  std::map<std::string, std::unique_ptr<Engine>> tunedEngines_;
  driver::PassChoiceOptions choiceOptions_;
  passes::PassChoices choices_;
  std::unique_ptr<Engine> engine_;
};

} // namespace

} // namespace loopc::python

PYBIND11_MODULE(_loopc, module) {
  using loopc::python::Program;
  using loopc::python::RaisedError;
  module.doc() = "The compiler and engines behind the loopc package (docs/python.md)";
  py::register_exception_translator([](std::exception_ptr raised) {
    try {
      if (raised)
        std::rethrow_exception(raised);
    } catch (const RaisedError &error) {
      py::object errors = py::module_::import("loopc.errors");
      py::object kind = errors.attr(error.kind.c_str());
      py::object exception =
          kind(error.message, error.formatted, error.file, error.line, error.column);
      PyErr_SetObject(kind.ptr(), exception.ptr());
    }
  });
  py::class_<Program>(module, "Program")
      .def(py::init<const std::string &, const std::string &, const std::vector<std::string> &,
                    const std::string &, const std::vector<std::string> &,
                    const std::vector<std::string> &, bool, const std::string &, bool,
                    const std::string &>(),
           py::arg("source"), py::arg("origin"), py::arg("stdlib_dirs"), py::arg("device"),
           py::arg("skip_passes"), py::arg("pass_parameters"), py::arg("unsafe"),
           py::arg("fp_contract"), py::arg("tuned"), py::arg("tuning_cache"))
      .def_property_readonly("device", &Program::device)
      .def_property_readonly("device_description", &Program::deviceDescription)
      .def("kernels", &Program::kernels)
      .def("output_shapes", &Program::outputShapes)
      .def("run", &Program::run)
      .def("run_making_outputs", &Program::runMakingOutputs)
      .def("bench", &Program::bench)
      .def("tune", &Program::tune)
      .def("explain", &Program::explain)
      .def("ptx", &Program::ptx);
  module.def("dlpack_view", &loopc::python::dlpackView);
  module.def("known_devices", [] {
    std::vector<std::string> devices;
    for (const char *device : loopc::driver::knownDevices())
      devices.push_back(device);
    return devices;
  });
}
