// The middle end as a list of passes, read top to bottom (after Halide's
// Lower.cpp). After each one the verifier checks the IR and `afterPass` sees
// it (`loopc explain` prints it), so a broken pass is caught where it broke.
#include "passes/Pipeline.h"

#include "ir/IRPrinter.h"
#include "ir/Verifier.h"
#include "passes/Passes.h"
#include "passes/analysis/ArrayUses.h"
#include "passes/analysis/BoundsProof.h"
#include "passes/analysis/Coalescing.h"
#include "passes/analysis/Evaluate.h"
#include "support/Suggestions.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <charconv>
#include <tuple>

namespace loopc::passes {

namespace {

// How a pass takes part in the pipeline.
enum class PassRole {
  Required,     // the program's meaning needs it
  Optimization, // the meaning does not depend on it: `--skip-pass` may leave it out
  Inspection,   // reports remarks about the IR without changing it
};

// What a pass of the registry is given: the pipeline's options and the
// reporter of its remarks (Remarks.h).
struct PassContext {
  const PipelineOptions &options;
  const RemarkReporter &remarks;
  // Whether the pass `name` runs in this pipeline. The few choices a pass
  // makes by what runs after it are asked here, in the pipeline's list, and
  // handed to the pass as facts: no pass looks another up by name.
  bool runs(const std::string &name) const { return passLeftOutBy(name, options).empty(); }
};
// A pass run on one Function; an error is a located refusal of the program.
using PassBody = std::function<Expected<ir::Function>(ir::Function, const PassContext &)>;

const std::set<PipelineTarget> kBothTargets = {PipelineTarget::Gpu, PipelineTarget::Cpu};
const std::set<PipelineTarget> kGpuOnly = {PipelineTarget::Gpu};
const std::set<PipelineTarget> kCpuOnly = {PipelineTarget::Cpu};

// One pass of the registry: everything the pipeline, `--skip-pass`,
// `explain --after`, the verifier and the tuner know of it.
struct PassEntry {
  const char *name;
  const char *summary; // one line
  std::set<PipelineTarget> targets;
  PassRole role;
  PassBody body;
  // What the verifier holds the IR to from this pass on.
  ir::VerifyOptions establishes = {};
  // Whether it replaces a program's array accesses (fusion computes an
  // element where it was read) or moves them into buffers it makes
  // (transposed copies), whose accesses are not checked: a bounds check
  // would then be lost. Under PassChoices::boundsChecks such a pass runs
  // only on a function whose every index is proven in range
  // (BoundsProof.h). (privatize_combines checks the indices of the combines
  // it sends to private copies against the program's arrays itself, and
  // stage_shared stages only the nests whose indices are all proven.)
  bool hidesAccesses = false;
};

// A pass that reports remarks, as Passes.h declares most.
PassBody reporting(ir::Function (*pass)(ir::Function, const RemarkReporter &)) {
  return [pass](ir::Function function, const PassContext &context) -> Expected<ir::Function> {
    return pass(std::move(function), context.remarks);
  };
}
// A pass that reports none.
PassBody quiet(ir::Function (*pass)(ir::Function)) {
  return [pass](ir::Function function, const PassContext &) -> Expected<ir::Function> {
    return pass(std::move(function));
  };
}
// An inspection: remarks about the Function, which it leaves as it is.
PassBody inspecting(std::function<void(const ir::Function &, const PassContext &)> analysis) {
  return [analysis](ir::Function function, const PassContext &context) -> Expected<ir::Function> {
    analysis(function, context);
    return function;
  };
}

void remarkUncheckedIndices(const ir::Function &function, const RemarkReporter &remarks);

// The pipeline, top to bottom: each target runs the passes listed for it, in
// this order (after Halide's Lower.cpp). The passes' own headers (Passes.h)
// say what each does, and why.
const std::vector<PassEntry> &registry() {
  static const std::vector<PassEntry> passes = {
      {"lower_scans",
       "a scan becomes loops of partial results (a block's, then theirs)",
       kBothTargets,
       PassRole::Required,
       [](ir::Function f, const PassContext &c) -> Expected<ir::Function> {
         return lowerScans(std::move(f), c.options.target);
       },
       {.scansLowered = true}},
      {"specialize_sizes", "small sizes of the run compiled as constants", kGpuOnly,
       PassRole::Optimization,
       [](ir::Function f, const PassContext &c) -> Expected<ir::Function> {
         return specializeSizes(std::move(f), c.options.specializedSizes);
       }},
      {"simplify", "constant folding and algebraic simplification", kBothTargets,
       PassRole::Required, quiet(simplify)},
      {"drop_overwritten_fills", "zero fills that a later write covers removed", kBothTargets,
       PassRole::Optimization, quiet(dropOverwrittenFills)},
      {"fuse_producers",
       "a local array's elements computed where they are read",
       kBothTargets,
       PassRole::Optimization,
       reporting(fuseProducers),
       {},
       true},
      {"fuse_with_lag", "consecutive stencil nests fused a row apart", kCpuOnly,
       PassRole::Optimization, reporting(fuseWithLag)},
      {"hoist_independent_parfors", "parfors that no host loop iteration needs moved out of it",
       kCpuOnly, PassRole::Optimization, reporting(hoistIndependentParfors)},
      {"partition_borders", "a nest testing its window's bounds split into interior and borders",
       kBothTargets, PassRole::Optimization,
       [](ir::Function f, const PassContext &c) -> Expected<ir::Function> {
         return partitionBorders(std::move(f), c.options.target,
                                 c.options.choices.parameters.borderMinPoints, c.remarks);
       }},
      {"split_reductions", "long rows of few reductions split across blocks, combined in order",
       kBothTargets, PassRole::Optimization,
       [](ir::Function f, const PassContext &c) -> Expected<ir::Function> {
         return splitReductions(std::move(f), c.options.target, c.remarks);
       }},
      {"map_rows_to_blocks", "a parfor whose body walks a row: a block per row", kGpuOnly,
       PassRole::Optimization,
       [](ir::Function f, const PassContext &c) -> Expected<ir::Function> {
         return mapRowsToBlocks(std::move(f), c.runs("fuse_sibling_reductions"), c.remarks);
       }},
      {"privatize_combines", "combines into a small array done on private copies first",
       kBothTargets, PassRole::Optimization,
       [](ir::Function f, const PassContext &c) -> Expected<ir::Function> {
         return privatizeCombines(std::move(f), c.options.choices.parameters, c.options.target,
                                  c.options.multiprocessors, c.remarks);
       }},
      {"transpose_column_reads",
       "arrays read down columns copied transposed first",
       kCpuOnly,
       PassRole::Optimization,
       reporting(transposeColumnReads),
       {},
       true},
      {"jam_serial_chains", "independent serial chains run several at a time", kCpuOnly,
       PassRole::Optimization, reporting(jamSerialChains)},
      {"interchange_column_walks", "nests walking a column turned to walk rows", kCpuOnly,
       PassRole::Optimization, reporting(interchangeColumnWalks)},
      {"promote_invariant_elements", "elements a serial loop reads unchanged kept in registers",
       kCpuOnly, PassRole::Optimization, reporting(promoteInvariantElements)},
      {"map_to_gpu", "each top-level parfor nest on blocks and threads, with bounds guards",
       kBothTargets, PassRole::Required,
       [](ir::Function f, const PassContext &c) -> Expected<ir::Function> {
         if (auto wrong = blockShapeError(c.options.choices.parameters, c.options.target))
           return makeError(*wrong);
         return mapToGpu(std::move(f), c.options.target, c.options.runSizes,
                         c.options.multiprocessors, c.options.choices.parameters, c.remarks,
                         c.options.cpuVectors);
       }},
      {"unroll_around_reductions", "short serial loops around reductions unrolled", kBothTargets,
       PassRole::Optimization, quiet(unrollAroundReductions)},
      {"fuse_sibling_reductions", "reductions over one range done in one pass", kBothTargets,
       PassRole::Optimization,
       [](ir::Function f, const PassContext &c) -> Expected<ir::Function> {
         return fuseSiblingReductions(std::move(f), c.options.target, c.options.multiprocessors,
                                      c.remarks);
       }},
      {"lower_reductions",
       "reductions become per-thread folds and block trees",
       kBothTargets,
       PassRole::Required,
       [](ir::Function f, const PassContext &c) -> Expected<ir::Function> {
         return lowerReductions(std::move(f), c.options.target, c.options.multiprocessors,
                                c.remarks);
       },
       {.reductionsLowered = true}},
      {"interleave_reductions", "serial folds LLVM keeps serial given lanes", kCpuOnly,
       PassRole::Optimization, reporting(interleaveReductions)},
      {"combine_in_warps", "a block tree's last halvings as warp shuffles", kGpuOnly,
       PassRole::Optimization, reporting(combineInWarps)},
      {"tile_registers", "a thread computes a tile of points, its loads shared in registers",
       kBothTargets, PassRole::Optimization,
       [](ir::Function f, const PassContext &c) -> Expected<ir::Function> {
         const PipelineOptions &options = c.options;
         RegisterTilingTarget target{c.runs("stage_shared"), options.computeCapability,
                                     options.multiprocessors, options.runSizes,
                                     options.target == PipelineTarget::Cpu};
         return tileRegisters(std::move(f), options.choices.parameters, target, c.remarks);
       }},
      {"stage_shared", "tiles read by many threads staged in shared memory", kGpuOnly,
       PassRole::Optimization,
       [](ir::Function f, const PassContext &c) -> Expected<ir::Function> {
         return stageShared(std::move(f), c.options.choices.parameters, c.remarks,
                            c.options.computeCapability);
       }},
      // The accesses left uncoalesced by map_to_gpu's choice of x, once
      // stage_shared has read a transpose's columns through shared memory.
      {"map_to_gpu", "", kGpuOnly, PassRole::Inspection,
       inspecting([](const ir::Function &f, const PassContext &c) {
         warnUncoalescedAccesses(f, c.remarks);
       })},
      {"globalize_private_arrays", "a GPU thread's private arrays in global memory", kGpuOnly,
       PassRole::Required,
       [](ir::Function f, const PassContext &) { return globalizePrivateArrays(std::move(f)); }},
      {"simplify", "constant folding and algebraic simplification", kBothTargets,
       PassRole::Required, quiet(simplify)},
      {"drop_untaken_branches", "host branches the run's sizes decide: the other side removed",
       kBothTargets, PassRole::Optimization,
       [](ir::Function f, const PassContext &c) -> Expected<ir::Function> {
         return dropUntakenBranches(std::move(f), c.options.runSizes);
       }},
      {"extract_kernels", "each mapped nest becomes a kernel, the rest host code", kBothTargets,
       PassRole::Required, quiet(extractKernels)},
      {"bounds_checks", "", kBothTargets, PassRole::Inspection,
       inspecting([](const ir::Function &f, const PassContext &c) {
         if (c.options.choices.boundsChecks)
           remarkUncheckedIndices(f, c.remarks);
       })},
  };
  return passes;
}

// The registry's entry of the pass `name` (its first, for simplify).
const PassEntry *passNamed(const std::string &name) {
  for (const PassEntry &pass : registry())
    if (pass.name == name && pass.role != PassRole::Inspection)
      return &pass;
  return nullptr;
}

// Runs the registry's passes one after the other on one Function, verifying
// and logging the IR after each; after the first invalid IR the remaining
// passes are skipped.
class PassRunner {
public:
  PassRunner(ir::Function function, const PipelineOptions &options)
      : function_(std::move(function)), options_(options) {}

  void run(const PassEntry &pass) {
    if (!status_ || !pass.targets.contains(options_.target))
      return;
    if (pass.role == PassRole::Optimization && !passLeftOutBy(pass.name, options_).empty())
      return;
    runAsked(pass);
  }

  // Runs `pass` whether or not the choices leave it out (`loopc opt`).
  void runAsked(const PassEntry &pass) {
    if (!status_)
      return;
    if (pass.role == PassRole::Optimization && options_.choices.boundsChecks &&
        pass.hidesAccesses &&
        !passes::proveAccessesInBounds(function_).allProvenIn(function_.body, function_.body)) {
      // Said only where the pass would have changed something (a trial
      // run, its remarks unheard).
      RemarkReporter unheard(nullptr, pass.name, function_.programNames);
      Expected<ir::Function> trial = pass.body(function_, PassContext{options_, unheard});
      if (trial && ir::toString(*trial) != ir::toString(function_))
        RemarkReporter(options_.remarks, pass.name, function_.programNames)
            .declined({}, "not run: an index it would move out of the bounds checks' sight is "
                          "not proven in range (`loopc explain --remarks` lists the checks kept)");
      return;
    }
    RemarkReporter remarks(options_.remarks, pass.name, function_.programNames);
    PassContext context{options_, remarks};
    if (pass.role == PassRole::Inspection) {
      (void)pass.body(function_, context);
      return;
    }
    Expected<ir::Function> result = pass.body(std::move(function_), context);
    if (!result) {
      status_ = std::unexpected(result.error());
      return;
    }
    function_ = std::move(*result);
    holdTo(pass.establishes);
    check(pass.name);
  }

  // From here on, the IR must hold what `established` says.
  void holdTo(const ir::VerifyOptions &established) {
    verify_.reductionsLowered |= established.reductionsLowered;
    verify_.scansLowered |= established.scansLowered;
  }

  // Verifies the Function as the output of the step `name` and logs it.
  void check(const std::string &name) {
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
    return std::move(function_);
  }

  // The result, once the choices are known to name passes that exist.
  Expected<ir::Function> checkedResult() && {
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
    {"border_min_points",
     &PassParameters::borderMinPoints,
     0,
     int64_t{1} << 30,
     false,
     {"partition_borders"},
     "every nest it can",
     true},
    {"block_x", &PassParameters::blockX, 1, 1024, true, {"map_to_gpu"}, "the pass's shape"},
    {"block_y", &PassParameters::blockY, 1, 1024, true, {"map_to_gpu"}, "the pass's shape"},
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

// `1 to 8, a power of two; 0: ...`: the values a parameter takes.
std::string describeValues(const ParameterSpec &spec) {
  return std::to_string(spec.min) + " to " + std::to_string(spec.max) +
         (spec.powerOfTwo ? ", a power of two" : "") +
         (spec.zeroMeans ? std::string("; 0: ") + spec.zeroMeans : "");
}

// `register_tile (1 to 8, ...)`: a parameter and the values it takes.
std::string describeRange(const ParameterSpec &spec) {
  return std::string(spec.name) + " (" + describeValues(spec) + ")";
}

std::string describeRanges() {
  std::string known;
  for (const ParameterSpec &spec : kParameters)
    known += (known.empty() ? "" : ", ") + describeRange(spec);
  return known;
}

const ParameterSpec *parameterNamed(const std::string &name) {
  auto spec = std::ranges::find_if(
      kParameters, [&](const ParameterSpec &candidate) { return name == candidate.name; });
  return spec == std::end(kParameters) ? nullptr : spec;
}

} // namespace

Status setPassParameter(PassParameters &parameters, const std::string &assignment) {
  std::string known = describeRanges();
  size_t equals = assignment.find('=');
  std::string name = assignment.substr(0, equals);
  const ParameterSpec *spec = parameterNamed(name);
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

std::optional<ScheduleError> scheduleChoiceError(const ScheduleChoice &choice) {
  if (choice.name == ScheduleChoice::kSkip) {
    const PassEntry *pass = passNamed(choice.value);
    if (pass && pass->role == PassRole::Optimization)
      return std::nullopt;
    std::vector<std::string> passes = optimizationPasses();
    std::string guess = closestName(choice.value, passes);
    std::string list;
    for (const std::string &name : passes)
      list += (list.empty() ? "" : ", ") + name;
    return ScheduleError{"'" + choice.value + "' is " +
                             (pass ? "a pass the program's meaning needs, which cannot be left out"
                                   : "no optimization pass") +
                             (guess.empty() ? "" : "; did you mean '" + guess + "'?") +
                             " (skip= leaves out one of " + list + ")",
                         true};
  }
  if (choice.namesArray())
    return std::nullopt; // an array of the program: Sema checks those
  const ParameterSpec *spec = parameterNamed(choice.name);
  if (!spec) {
    std::vector<std::string> names{ScheduleChoice::kSkip, ScheduleChoice::kStage,
                                   ScheduleChoice::kNoStage};
    for (const ParameterSpec &known : kParameters)
      names.push_back(known.name);
    std::string guess = closestName(choice.name, names);
    return ScheduleError{"unknown schedule choice '" + choice.name + "'" +
                             (guess.empty() ? "" : "; did you mean '" + guess + "'?") +
                             " (a schedule sets pass parameters: " + describeRanges() +
                             "; skip=PASS leaves out an optimization; stage=ARRAY and "
                             "no_stage=ARRAY stage an input array in shared memory or not)",
                         false};
  }
  PassParameters scratch;
  if (!setPassParameter(scratch, choice.name + "=" + choice.value))
    return ScheduleError{"bad value '" + choice.value + "' for " + choice.name + ": it takes " +
                             describeValues(*spec),
                         true};
  return std::nullopt;
}

Expected<PassChoices> withSchedule(PassChoices choices, const Schedule &schedule) {
  for (const ScheduleChoice &choice : schedule) {
    if (std::optional<ScheduleError> why = scheduleChoiceError(choice))
      return makeError(why->message);
    if (choice.name == ScheduleChoice::kStage)
      choices.parameters.stagedArrays.insert(choice.value);
    else if (choice.name == ScheduleChoice::kNoStage)
      choices.parameters.unstagedArrays.insert(choice.value);
    else if (!choices.kernelSchedules)
      continue;
    else if (choice.name == ScheduleChoice::kSkip)
      choices.skipped.insert(choice.value);
    else if (!choices.parametersGiven.contains(choice.name))
      (void)setPassParameter(choices.parameters, choice.name + "=" + choice.value);
  }
  return choices;
}

std::string scheduleArguments(const PassChoices &choices) {
  std::string arguments;
  auto add = [&](const std::string &choice) {
    arguments += (arguments.empty() ? "" : ", ") + choice;
  };
  const PassParameters defaults;
  for (const ParameterSpec &spec : kParameters)
    if (choices.parameters.*spec.field != defaults.*spec.field)
      add(std::string(spec.name) + "=" + std::to_string(choices.parameters.*spec.field));
  for (const std::string &pass : optimizationPasses())
    if (choices.skipped.contains(pass))
      add(std::string(ScheduleChoice::kSkip) + "=" + pass);
  return arguments;
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
  const PassEntry *pass = passNamed(name);
  if (!pass)
    return "";
  if (!pass->targets.contains(options.target))
    return options.target == PipelineTarget::Cpu ? "--target cpu" : "--target gpu";
  if (pass->role == PassRole::Optimization && options.choices.skipped.contains(name))
    return "--skip-pass " + name;
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
  std::vector<std::string> passes;
  for (const PassEntry &pass : registry())
    if (pass.role != PassRole::Inspection && pass.targets.contains(target))
      passes.push_back(pass.name);
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
  for (const PassEntry &pass : registry())
    if (pass.role == PassRole::Optimization && (!target || pass.targets.contains(*target)))
      names.push_back(pass.name);
  return names;
}

std::vector<PassDescription> describePasses() {
  std::vector<PassDescription> passes;
  for (const PassEntry &pass : registry()) {
    if (pass.role == PassRole::Inspection ||
        std::ranges::any_of(passes, [&](const auto &known) { return known.name == pass.name; }))
      continue;
    std::vector<PipelineTarget> targets(pass.targets.begin(), pass.targets.end());
    passes.push_back({pass.name, pass.summary, targets, pass.role == PassRole::Optimization});
  }
  return passes;
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
          {ir::greaterOrEqual(ir::makeVar(ir::ScalarType::I64, size), ir::makeI64(1)), true});
}

// Records Function::writtenWholeFirst: an array whose first top-level
// statement to touch it writes each of its elements and reads none (the
// analysis drop_overwritten_fills trusts).
void recordArraysWrittenWhole(ir::Function &function) {
  std::vector<ir::Stmt> stmts = {function.body};
  if (const auto *block = function.body->as<ir::Block>())
    stmts = block->stmts;
  for (const ir::Buffer &buffer : function.buffers) {
    if (buffer->shape.empty())
      continue;
    for (const ir::Stmt &stmt : stmts) {
      ArrayUses uses(buffer.get());
      uses.visit(stmt);
      if (uses.reads.empty() && uses.writes == 0)
        continue;
      if (uses.reads.empty() && uses.writes == 1 && fullWrite(stmt, buffer.get()))
        function.writtenWholeFirst.insert(buffer->name);
      break;
    }
  }
}

// Says, at each choice of the kernel's schedule, what it changed: a
// parameter the command line also gives keeps the command line's value.
void remarkSchedule(const Schedule &schedule, const PassChoices &given, Remarks *remarks) {
  RemarkReporter reporter(remarks, "schedule");
  if (!reporter.enabled() || !given.kernelSchedules)
    return;
  for (const ScheduleChoice &choice : schedule) {
    if (choice.namesArray())
      continue; // stage_shared says what became of the array
    if (choice.name == ScheduleChoice::kSkip)
      reporter.applied(choice.source, "the schedule leaves out " + choice.value);
    else if (given.parametersGiven.contains(choice.name))
      reporter.declined(choice.source, choice.name + "=" + choice.value +
                                           " not applied: --pass-param gives " + choice.name +
                                           " for this run");
    else
      reporter.applied(choice.source, "the schedule sets " + choice.name + "=" + choice.value);
  }
}

} // namespace

Expected<ir::Function> runPipeline(ir::Function function, const PipelineOptions &given) {
  Expected<PassChoices> scheduled = withSchedule(given.choices, function.schedule);
  if (!scheduled)
    return std::unexpected(scheduled.error());
  remarkSchedule(function.schedule, given.choices, given.remarks);
  PipelineOptions options = given;
  options.choices = std::move(*scheduled);
  function.boundsChecked = options.choices.boundsChecks;
  if (function.boundsChecked)
    recordNonEmptyArrays(function, options.runSizes);
  recordArraysWrittenWhole(function);
  PassRunner passes(std::move(function), options);
  passes.check("lower"); // the input, as ir::lowerKernel made it
  for (const PassEntry &pass : registry())
    passes.run(pass);
  return std::move(passes).checkedResult();
}

Expected<ir::Function> runPasses(ir::Function function, const std::vector<std::string> &names,
                                 const PipelineOptions &options) {
  std::vector<const PassEntry *> inPipeline, asked;
  for (const PassEntry &pass : registry())
    if (pass.targets.contains(options.target) &&
        std::ranges::find(inPipeline, &pass) == inPipeline.end())
      inPipeline.push_back(&pass);
  for (const std::string &name : names) {
    auto entry =
        std::ranges::find_if(inPipeline, [&](const PassEntry *pass) { return pass->name == name; });
    if (entry == inPipeline.end()) {
      std::vector<std::string> known;
      for (const PassEntry *pass : inPipeline)
        if (std::ranges::find(known, pass->name) == known.end())
          known.push_back(pass->name);
      std::string list;
      for (const std::string &pass : known)
        list += (list.empty() ? "" : ", ") + pass;
      return makeError("no pass '" + name + "' in the " +
                       (options.target == PipelineTarget::Cpu ? "CPU" : "GPU") +
                       " pipeline; its passes are " + list);
    }
    asked.push_back(*entry);
  }
  // The input holds what the pipeline's passes before the first one asked
  // establish.
  ir::VerifyOptions holds;
  for (const PassEntry *pass : inPipeline) {
    if (asked.empty() || pass == asked.front())
      break;
    holds.reductionsLowered |= pass->establishes.reductionsLowered;
    holds.scansLowered |= pass->establishes.scansLowered;
  }
  if (Status valid = ir::verifyFunction(function, "", holds); !valid)
    return std::unexpected(valid.error());
  PassRunner runner(std::move(function), options);
  runner.holdTo(holds);
  for (const PassEntry *pass : asked)
    runner.runAsked(*pass);
  return std::move(runner).result();
}

} // namespace loopc::passes
