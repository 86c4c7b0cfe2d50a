// The middle end as a list of passes, read top to bottom (after Halide's
// Lower.cpp). After each one the verifier checks the IR and `afterPass` sees
// it (`loopc explain` prints it), so a broken pass is caught where it broke.
#include "passes/Pipeline.h"

#include "ir/IRPrinter.h"
#include "ir/Verifier.h"
#include "passes/Passes.h"
#include "passes/analysis/BoundsProof.h"
#include "passes/analysis/Coalescing.h"
#include "passes/analysis/Evaluate.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <charconv>
#include <tuple>

namespace loopc::passes {

namespace {

using Pass = std::function<ir::Function(ir::Function)>;
// A pass that reports remarks (Remarks.h) through the reporter it is given.
using ReportingPass = std::function<ir::Function(ir::Function, const RemarkReporter &)>;
// A pass that may find the program beyond its target (a located error).
using RefusingPass = std::function<Expected<ir::Function>(ir::Function)>;

// The optimizations: passes the program's meaning does not depend on, which
// `--skip-pass` may leave out, and the targets whose pipelines run them.
struct Optimization {
  const char *name;
  std::set<PipelineTarget> targets;
};
const Optimization kOptimizations[] = {
    {"specialize_sizes", {PipelineTarget::Gpu}}, // sizesToSpecialize says why not the CPU
    {"drop_overwritten_fills", {PipelineTarget::Gpu, PipelineTarget::Cpu}},
    {"fuse_producers", {PipelineTarget::Gpu, PipelineTarget::Cpu}},
    {"fuse_with_lag", {PipelineTarget::Cpu}},
    {"hoist_independent_parfors", {PipelineTarget::Cpu}},
    {"split_reductions", {PipelineTarget::Gpu, PipelineTarget::Cpu}},
    {"map_rows_to_blocks", {PipelineTarget::Gpu}},
    {"privatize_combines", {PipelineTarget::Gpu, PipelineTarget::Cpu}},
    {"transpose_column_reads", {PipelineTarget::Cpu}},
    {"jam_serial_chains", {PipelineTarget::Cpu}},
    {"interchange_column_walks", {PipelineTarget::Cpu}},
    {"promote_invariant_elements", {PipelineTarget::Cpu}},
    {"unroll_around_reductions", {PipelineTarget::Gpu, PipelineTarget::Cpu}},
    {"fuse_sibling_reductions", {PipelineTarget::Gpu, PipelineTarget::Cpu}},
    {"interleave_reductions", {PipelineTarget::Cpu}},
    {"combine_in_warps", {PipelineTarget::Gpu}},
    {"tile_registers", {PipelineTarget::Gpu, PipelineTarget::Cpu}},
    {"stage_shared", {PipelineTarget::Gpu}},
    {"drop_untaken_branches", {PipelineTarget::Gpu, PipelineTarget::Cpu}},
};

// The passes that replace a program's array accesses (fusion computes an
// element where it was read) or move them into buffers they make (shared
// staging, transposed copies), whose accesses are not checked: a bounds
// check would then be lost. Under PassChoices::boundsChecks they run only
// on a function whose every index is proven in range (BoundsProof.h). (privatize_combines
// checks the indices of the combines it sends to private copies against
// the program's arrays itself.)
const std::set<std::string> kHidesAccesses = {"fuse_producers", "stage_shared",
                                              "transpose_column_reads"};

// Runs passes one after the other on one Function, verifying and logging the
// IR after each; after the first invalid IR the remaining passes are skipped.
class PassRunner {
public:
  PassRunner(ir::Function function, const PipelineOptions &options)
      : function_(std::move(function)), options_(options) {}

  // Runs `pass`, named `name`, on the Function.
  void run(const std::string &name, const Pass &pass) {
    run(name,
        [&](ir::Function function, const RemarkReporter &) { return pass(std::move(function)); });
  }
  void run(const std::string &name, const ReportingPass &pass) {
    if (status_) {
      RemarkReporter remarks(options_.remarks, name, function_.programNames);
      function_ = pass(std::move(function_), remarks);
      check(name);
    }
  }

  // Runs `pass`, named `name`; its refusal is the pipeline's result.
  void runOrRefuse(const std::string &name, const RefusingPass &pass) {
    if (!status_)
      return;
    Expected<ir::Function> result = pass(std::move(function_));
    if (!result) {
      status_ = std::unexpected(result.error());
      return;
    }
    function_ = std::move(*result);
    check(name);
  }

  // Runs `pass`, the optimization `name` (kOptimizations), when the
  // pipeline's target is one of its targets and the options do not skip it.
  void optimize(const std::string &name, const Pass &pass) {
    optimize(name, [&](ir::Function function, const RemarkReporter &) {
      return pass(std::move(function));
    });
  }
  void optimize(const std::string &name, const ReportingPass &pass) {
    assert(std::ranges::any_of(kOptimizations,
                               [&](const Optimization &known) { return name == known.name; }) &&
           "every optimization is listed in kOptimizations");
    if (!passLeftOutBy(name, options_).empty() || !status_)
      return;
    if (options_.choices.boundsChecks && kHidesAccesses.contains(name) &&
        !passes::proveAccessesInBounds(function_).allProvenIn(function_.body, function_.body)) {
      // Said only where the pass would have changed something (a trial
      // run, its remarks unheard).
      ir::Function trial = pass(function_, RemarkReporter(nullptr, name, function_.programNames));
      if (ir::toString(trial) != ir::toString(function_))
        RemarkReporter(options_.remarks, name, function_.programNames)
            .declined({}, "not run: an index it would move out of the bounds checks' sight is "
                          "not proven in range (`loopc explain --remarks` lists the checks kept)");
      return;
    }
    run(name, pass);
  }

  // Lets `analysis` report remarks about the Function as `name` (a pass
  // whose choices it judges) without changing it.
  void inspect(const std::string &name,
               const std::function<void(const ir::Function &, const RemarkReporter &)> &analysis) {
    if (status_)
      analysis(function_, RemarkReporter(options_.remarks, name, function_.programNames));
  }

  // Verifies the Function as the output of the step `name` and logs it.
  void check(const std::string &name) {
    if (name == "lower_reductions")
      verify_.reductionsLowered = true;
    if (name == "lower_scans")
      verify_.scansLowered = true;
    // Stop where a pass broke the IR rather than let code generation
    // miscompile it.
    if (Status verified = ir::verifyFunction(function_, name, verify_); !verified) {
      status_ = makeError("internal error (a compiler bug; please report it with the program): " +
                              verified.error().message,
                          verified.error().range);
      return;
    }
    if (options_.afterPass)
      options_.afterPass(name, function_);
  }

  Expected<ir::Function> result() && {
    if (!status_)
      return std::unexpected(status_.error());
    std::vector<std::string> optimizations = optimizationPasses();
    for (const std::string &skipped : options_.choices.skipped)
      if (std::ranges::find(optimizations, skipped) == optimizations.end()) {
        std::string optional;
        for (const std::string &name : optimizations)
          optional += (optional.empty() ? "" : ", ") + name;
        return makeError("cannot skip pass '" + skipped + "': the passes that can be skipped are " +
                         optional);
      }
    return std::move(function_);
  }

private:
  ir::Function function_;
  const PipelineOptions &options_;
  ir::VerifyOptions verify_;
  Status status_;
};

// One parameter of PassParameters, settable by name, and the passes that
// read it.
struct ParameterSpec {
  const char *name;
  int64_t PassParameters::*field;
  int64_t min, max;
  bool powerOfTwo;
  std::array<const char *, 2> readers;
  const char *zeroMeans = nullptr; // what 0 asks for, where it is no size
  // Read by its passes in the GPU pipeline only (the CPU's register tiles
  // are rows of windows, sized by the vector registers).
  bool gpuOnly = false;
};

constexpr ParameterSpec kParameters[] = {
    {"register_tile",
     &PassParameters::registerTile,
     1,
     8,
     true,
     {"tile_registers"},
     "by the grid's size",
     true},
    {"stage_length", &PassParameters::stageLength, 4, 64, false, {"stage_shared"}},
    {"shared_kib",
     &PassParameters::sharedKiB,
     1,
     48,
     false,
     {"stage_shared", "privatize_combines"}},
    {"stage_min_reuse", &PassParameters::stageMinReuse, 2, 256, false, {"stage_shared"}},
    {"copies_in_flight", &PassParameters::copiesInFlight, 0, 32, false, {"stage_shared"}},
    {"pipeline_depth", &PassParameters::pipelineDepth, 1, 3, false, {"stage_shared"}},
    {"unclamped_tiles",
     &PassParameters::unclampedTiles,
     0,
     1,
     false,
     {"tile_registers"},
     nullptr,
     true},
};

// Under bounds checks, each index whose check stays in the generated code
// (BoundsProof found no proof), once per access and dimension.
void remarkUncheckedIndices(const ir::Function &function, const RemarkReporter &remarks) {
  if (!remarks.enabled())
    return;
  std::set<std::tuple<SourceLoc, std::string, size_t>> said;
  ProvenAccesses proven = proveAccessesInBounds(function);
  for (const ProvenAccesses::Unproven &index : proven.unproven())
    if (said.insert({index.source.begin, index.array, index.dim}).second)
      remarks.declined(index.source, "index " + index.index + " of '" + index.array +
                                         "' (dimension " + std::to_string(index.dim) +
                                         ") checked at run time: not proven within [0, " +
                                         index.extent + ")");
}

} // namespace

Status setPassParameter(PassParameters &parameters, const std::string &assignment) {
  std::string known;
  for (const ParameterSpec &spec : kParameters)
    known += (known.empty() ? "" : ", ") + std::string(spec.name) + " (" +
             std::to_string(spec.min) + " to " + std::to_string(spec.max) +
             (spec.powerOfTwo ? ", a power of two" : "") +
             (spec.zeroMeans ? std::string("; 0: ") + spec.zeroMeans : "") + ")";
  size_t equals = assignment.find('=');
  std::string name = assignment.substr(0, equals);
  const ParameterSpec *spec = nullptr;
  for (const ParameterSpec &candidate : kParameters)
    if (name == candidate.name)
      spec = &candidate;
  if (!spec || equals == std::string::npos)
    return makeError("bad pass parameter '" + assignment +
                     "': expected NAME=VALUE with NAME one of " + known);
  std::string text = assignment.substr(equals + 1);
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  bool inRange = (value >= spec->min && value <= spec->max &&
                  (!spec->powerOfTwo || (value & (value - 1)) == 0)) ||
                 (value == 0 && spec->zeroMeans);
  bool valid = error == std::errc() && end == text.data() + text.size() && inRange;
  if (!valid)
    return makeError("bad value for pass parameter " + name + ": '" + text +
                     "'; the parameters are " + known);
  parameters.*spec->field = value;
  return {};
}

std::vector<std::pair<std::string, int64_t>> namedParameters(const PassParameters &parameters) {
  std::vector<std::pair<std::string, int64_t>> named;
  for (const ParameterSpec &spec : kParameters)
    named.emplace_back(spec.name, parameters.*spec.field);
  return named;
}

std::string describeChangedParameters(const PassParameters &parameters) {
  const PassParameters defaults;
  std::string changed;
  for (const ParameterSpec &spec : kParameters)
    if (parameters.*spec.field != defaults.*spec.field)
      changed += (changed.empty() ? "" : " ") + std::string(spec.name) + "=" +
                 std::to_string(parameters.*spec.field);
  return changed;
}

std::string passLeftOutBy(const std::string &name, const PipelineOptions &options) {
  // Not an optimization, but run by the GPU's pipeline alone (runPipeline).
  if (name == "globalize_private_arrays" && options.target != PipelineTarget::Gpu)
    return "--target cpu";
  for (const Optimization &optimization : kOptimizations) {
    if (name != optimization.name)
      continue;
    if (!optimization.targets.contains(options.target))
      return options.target == PipelineTarget::Cpu ? "--target cpu" : "--target gpu";
    if (options.choices.skipped.contains(name))
      return "--skip-pass " + name;
  }
  return "";
}

std::vector<std::string> choicesWithoutEffect(const PipelineOptions &options) {
  auto reason = [&](const std::string &leftOutBy) {
    if (leftOutBy == "--target cpu")
      return std::string("not in the CPU pipeline");
    if (leftOutBy == "--target gpu")
      return std::string("not in the GPU pipeline");
    return "left out by " + leftOutBy;
  };
  std::vector<std::string> notes;
  const PassParameters &parameters = options.choices.parameters;
  PassParameters defaults;
  for (const ParameterSpec &spec : kParameters) {
    if (parameters.*spec.field == defaults.*spec.field)
      continue;
    std::string why;
    bool read = false;
    for (const char *reader : spec.readers) {
      if (!reader)
        continue;
      std::string leftOutBy = passLeftOutBy(reader, options);
      if (leftOutBy.empty() && spec.gpuOnly && options.target != PipelineTarget::Gpu) {
        why +=
            (why.empty() ? "" : "; ") + std::string(reader) + " reads it in the GPU pipeline only";
        continue;
      }
      read |= leftOutBy.empty();
      why += (why.empty() ? "" : "; ") + std::string(reader) + " is " + reason(leftOutBy);
    }
    if (!read)
      notes.push_back("--pass-param " + std::string(spec.name) + "=" +
                      std::to_string(parameters.*spec.field) + " changes nothing: " + why);
  }
  for (const std::string &skipped : options.choices.skipped)
    if (std::string leftOutBy = passLeftOutBy(skipped, options);
        !leftOutBy.empty() && leftOutBy != "--skip-pass " + skipped)
      notes.push_back("--skip-pass " + skipped + " changes nothing: it is " + reason(leftOutBy));
  return notes;
}

std::vector<std::string> parametersRead(PipelineTarget target) {
  std::vector<std::string> passes = optimizationPasses(target);
  std::vector<std::string> names;
  for (const ParameterSpec &spec : kParameters)
    if ((!spec.gpuOnly || target == PipelineTarget::Gpu) &&
        std::ranges::any_of(spec.readers, [&](const char *reader) {
          return reader && std::ranges::find(passes, reader) != passes.end();
        }))
      names.push_back(spec.name);
  return names;
}

std::vector<std::string> optimizationPasses(std::optional<PipelineTarget> target) {
  std::vector<std::string> names;
  for (const Optimization &optimization : kOptimizations)
    if (!target || optimization.targets.contains(*target))
      names.push_back(optimization.name);
  return names;
}

bool choicesHoldAt(const ir::Function &function, const std::map<std::string, int64_t> &sizes) {
  return std::ranges::all_of(function.sizeChoices, [&](const ir::Function::SizeChoice &choice) {
    std::optional<int64_t> value = evaluateInteger(*choice.condition, sizes);
    return value && (*value != 0) == choice.holds;
  });
}

namespace {

// Under bounds checks, code compiled for one run serves only runs whose
// arrays are as empty or not as this one's: each array extent that is at
// least 1 becomes a size choice, a fact for BoundsProof. A histogram's bin
// `min(i64(...), B - 1)` is then proven (with B = 0 it is -1, really out of
// range: the check stays in code compiled for B = 0 or for no run).
void recordNonEmptyArrays(ir::Function &function, const std::map<std::string, int64_t> &runSizes) {
  std::set<std::string> extents;
  for (const ir::Buffer &buffer : function.buffers)
    for (const ir::Expr &extent : buffer->isParameter ? buffer->shape : std::vector<ir::Expr>{})
      if (const auto *size = extent->as<ir::Var>())
        extents.insert(size->name);
  for (const std::string &size : extents)
    if (auto value = runSizes.find(size); value != runSizes.end() && value->second >= 1)
      function.sizeChoices.push_back(
          {ir::makeBinary(ir::BinaryOpKind::Ge, ir::makeVar(ir::ScalarType::I64, size),
                          ir::makeI64(1)),
           true});
}

} // namespace

Expected<ir::Function> runPipeline(ir::Function function, const PipelineOptions &options) {
  const PassParameters &parameters = options.choices.parameters;
  function.boundsChecked = options.choices.boundsChecks;
  if (function.boundsChecked)
    recordNonEmptyArrays(function, options.runSizes);
  PassRunner passes(std::move(function), options);
  passes.check("lower"); // the input, as ir::lowerKernel made it
  passes.run("lower_scans",
             [&](ir::Function f) { return lowerScans(std::move(f), options.target); });
  passes.optimize("specialize_sizes", [&](ir::Function f) {
    return specializeSizes(std::move(f), options.specializedSizes);
  });
  passes.run("simplify", simplify);
  passes.optimize("drop_overwritten_fills", dropOverwrittenFills);
  passes.optimize("fuse_producers", fuseProducers);
  passes.optimize("fuse_with_lag", fuseWithLag);
  passes.optimize("hoist_independent_parfors", hoistIndependentParfors);
  passes.optimize("split_reductions", [&](ir::Function f, const RemarkReporter &remarks) {
    return splitReductions(std::move(f), options.target, remarks);
  });
  passes.optimize("map_rows_to_blocks", [&](ir::Function f, const RemarkReporter &remarks) {
    return mapRowsToBlocks(std::move(f),
                           !options.choices.skipped.contains("fuse_sibling_reductions"), remarks);
  });
  passes.optimize("privatize_combines", [&](ir::Function f, const RemarkReporter &remarks) {
    return privatizeCombines(std::move(f), parameters, options.target, remarks);
  });
  passes.optimize("transpose_column_reads", transposeColumnReads);
  passes.optimize("jam_serial_chains", jamSerialChains);
  passes.optimize("interchange_column_walks", interchangeColumnWalks);
  passes.optimize("promote_invariant_elements", promoteInvariantElements);
  passes.run("map_to_gpu", [&](ir::Function f) { return mapToGpu(std::move(f), options.target); });
  passes.optimize("unroll_around_reductions", unrollAroundReductions);
  passes.optimize("fuse_sibling_reductions", [&](ir::Function f, const RemarkReporter &remarks) {
    return fuseSiblingReductions(std::move(f), options.target, remarks);
  });
  passes.run("lower_reductions", [&](ir::Function f, const RemarkReporter &remarks) {
    return lowerReductions(std::move(f), options.target, remarks);
  });
  passes.optimize("interleave_reductions", interleaveReductions);
  passes.optimize("combine_in_warps", combineInWarps);
  passes.optimize("tile_registers", [&](ir::Function f, const RemarkReporter &remarks) {
    RegisterTilingTarget target{passLeftOutBy("stage_shared", options).empty(),
                                options.computeCapability, options.multiprocessors,
                                options.runSizes, options.target == PipelineTarget::Cpu};
    return tileRegisters(std::move(f), parameters, target, remarks);
  });
  passes.optimize("stage_shared", [&](ir::Function f, const RemarkReporter &remarks) {
    return stageShared(std::move(f), parameters, remarks, options.computeCapability);
  });
  // The accesses left uncoalesced by map_to_gpu's choice of x, once
  // stage_shared has read a transpose's columns through shared memory.
  if (options.target == PipelineTarget::Gpu)
    passes.inspect("map_to_gpu", warnUncoalescedAccesses);
  if (options.target == PipelineTarget::Gpu)
    passes.runOrRefuse("globalize_private_arrays", globalizePrivateArrays);
  passes.run("simplify", simplify);
  passes.optimize("drop_untaken_branches", [&](ir::Function f) {
    return dropUntakenBranches(std::move(f), options.runSizes);
  });
  passes.run("extract_kernels", extractKernels);
  if (options.choices.boundsChecks)
    passes.inspect("bounds_checks", remarkUncheckedIndices);
  return std::move(passes).result();
}

} // namespace loopc::passes
