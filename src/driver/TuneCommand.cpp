// `loopc tune` (see TuneCommand.h).
#include "driver/TuneCommand.h"

#include "codegen/CpuLibrary.h"
#include "driver/Cli.h"
#include "driver/Engines.h"
#include "driver/PerfReport.h"
#include "driver/RunCommand.h"
#include "driver/Session.h"
#include "driver/Tuning.h"
#include "engine/Compare.h"
#include "ir/IRPrinter.h"
#include "lower/Lower.h"
#include "passes/Passes.h"
#include "perf/CpuDevices.h"
#include "support/AtomicFile.h"

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <set>

namespace loopc::driver {

namespace {

struct TuneOptions {
  RunTargetOptions target;
  int repeat = 5;
  bool writeSchedule = false;
};

// One choice the search varies and the values it tries.
struct Dimension {
  std::string name;                // a pass (skipped or not) or a parameter
  std::vector<std::string> values; // "run"/"skip", or parameter values
};

// The parameters' values worth trying; each must be valid (kParameters).
const std::map<std::string, std::vector<std::string>> kParameterValues = {
    {"register_tile", {"0", "1", "2", "4", "8"}},
    {"stage_length", {"8", "16", "32", "64"}},
    {"shared_kib", {"8", "16", "24", "48"}},
    {"stage_min_reuse", {"2", "16", "64"}},
    {"copies_in_flight", {"0", "4", "8", "16"}},
    {"pipeline_depth", {"1", "2", "3"}},
    {"unclamped_tiles", {"0", "1"}},
    {"border_min_points", {"0", "1048576"}},
    {"block_x", {"0", "16", "32", "64"}},
    {"block_y", {"0", "4", "8", "16", "64"}},
};

using Point = std::map<std::string, std::string>; // dimension -> value

// How much faster a candidate must run to replace the best so far: more than
// the run-to-run noise of a busy machine.
constexpr double kSignificant = 0.05;

// A candidate the performance model predicts this many times slower than
// the best so far is not timed (on a GPU the model knows, and on the CPU,
// probed once): the model ranks a kernel's variants well (docs/perf.md) but
// its times may be off by up to 2x.
constexpr double kPrunedAbove = 1.5;

Expected<passes::PassChoices> choicesAt(const Point &point, bool boundsChecks) {
  passes::PassChoices choices;
  choices.boundsChecks = boundsChecks;
  choices.kernelSchedules = false; // the point is whole: it starts from the schedule
  for (const auto &[name, value] : point) {
    if (value == "skip")
      choices.skipped.insert(name);
    else if (value != "run")
      if (Status set = passes::setPassParameter(choices.parameters, name + "=" + value); !set)
        return std::unexpected(set.error());
  }
  return choices;
}

class Search {
public:
  Search(const TuneOptions &options, PreparedRun &run, passes::PipelineTarget target,
         std::ostream &out)
      : options_(options), run_(run), target_(target), out_(out), inputs_(run.args),
        compare_(compareOptionsFor(*run.kernel, run.args)),
        lowered_(ir::lowerKernel(*run.session->program, *run.kernel)),
        gpuModel_(target == passes::PipelineTarget::Gpu
                      ? perf::gpuDeviceForDriverName(run.engine->device())
                      : nullptr) {
    if (target == passes::PipelineTarget::Cpu)
      if (auto probed = perf::findCpuDevice("native"))
        cpuModel_ = *probed;
  }

  Expected<TunedChoice> tune() {
    if (Status usable = checkTuningCache(tuningCachePath(options_.target.tuningCache)); !usable)
      return std::unexpected(usable.error());
    Point point = defaults();
    visited_.insert(point);
    auto defaultPrediction = predict(point);
    if (!defaultPrediction)
      return std::unexpected(defaultPrediction.error());
    auto defaultCode = codeAt(point);
    if (!defaultCode)
      return std::unexpected(defaultCode.error());
    auto first = measure(point, *defaultPrediction, *defaultCode);
    if (!first)
      return std::unexpected(first.error());
    if (!*first)
      return makeError("the defaults could not be timed");
    double best = **first, defaultSeconds = best;
    std::optional<double> bestPrediction = *defaultPrediction;
    std::vector<Dimension> dimensions = searchSpace();
    for (int round = 0; round < 3; ++round) {
      bool changed = false;
      for (const Dimension &dimension : dimensions) {
        // The dimension's other values, fastest predicted first.
        struct Candidate {
          Point point;
          std::optional<double> predicted;
          std::string code;
        };
        std::vector<Candidate> candidates;
        for (const std::string &value : dimension.values) {
          Point candidate = point;
          candidate[dimension.name] = value;
          if (point[dimension.name] == value || !visited_.insert(candidate).second)
            continue;
          // Code already timed is neither predicted nor timed again (most
          // passes change nothing in a given kernel).
          auto code = codeAt(candidate);
          if (!code)
            return std::unexpected(code.error());
          if (sayTimedAlready(candidate, *code))
            continue;
          auto predicted = predict(candidate);
          if (!predicted)
            return std::unexpected(predicted.error());
          candidates.push_back({candidate, *predicted, std::move(*code)});
        }
        std::ranges::stable_sort(candidates, {}, [](const Candidate &candidate) {
          return candidate.predicted.value_or(0);
        });
        for (const auto &[candidate, predicted, code] : candidates) {
          if (predicted && bestPrediction && *predicted > *bestPrediction * kPrunedAbove) {
            skip(candidate, *predicted, *bestPrediction);
            continue;
          }
          auto seconds = measure(candidate, predicted, code);
          if (!seconds)
            return std::unexpected(seconds.error());
          if (*seconds && **seconds < best * (1 - kSignificant)) {
            best = **seconds;
            bestPrediction = predicted;
            point = candidate;
            changed = true;
          }
        }
      }
      if (!changed)
        break;
    }
    auto choices = choicesAt(point, run_.choices.boundsChecks);
    if (!choices)
      return std::unexpected(choices.error());
    TunedChoice tuned{*choices, best * 1e3, defaultSeconds * 1e3, "", candidates_};
    std::string path = tuningCachePath(options_.target.tuningCache);
    TuningKey key =
        tuningKey(run_.session->sources, *run_.kernel, inputs_, device_, run_.choices.boundsChecks);
    if (Status stored = storeTunedChoice(path, key, options_.target.file, tuned); !stored)
      return std::unexpected(stored.error());
    out_ << "tuned kernel '" << run_.kernel->name << "' on " << device_ << ": "
         << describeChoices(*choices) << ", " << formatMilliseconds(best) << " ms, " << std::fixed
         << std::setprecision(2) << defaultSeconds / best << "x the speed of "
         << (run_.kernel->schedule.empty() ? "the defaults" : "its @schedule") << " ("
         << formatMilliseconds(defaultSeconds) << " ms); kept in " << path << "\n";
    out_.unsetf(std::ios::fixed);
    return tuned;
  }

private:
  Point defaults() const {
    Point point;
    for (const std::string &pass : passes::optimizationPasses(target_))
      point[pass] = "run";
    for (const auto &[name, value] : passes::namedParameters({}))
      point[name] = std::to_string(value);
    for (const ScheduleChoice &choice : run_.kernel->schedule)
      if (choice.name == ScheduleChoice::kSkip)
        point[choice.value] = "skip";
      else if (!choice.namesArray()) // applied to every candidate (PassChoices)
        point[choice.name] = choice.value;
    return point;
  }

  std::vector<Dimension> searchSpace() const {
    std::vector<Dimension> dimensions;
    for (const std::string &pass : passes::optimizationPasses(target_))
      dimensions.push_back({pass, {"run", "skip"}});
    // Only what the target's pipeline reads: tile sizes mean nothing on the CPU.
    for (const std::string &name : passes::parametersRead(target_))
      if (auto values = kParameterValues.find(name); values != kParameterValues.end())
        dimensions.push_back({name, values->second});
    return dimensions;
  }

  // What the performance model predicts for the candidate, in seconds; none
  // off a GPU it knows.
  Expected<std::optional<double>> predict(const Point &point) const {
    if (!gpuModel_ && !cpuModel_)
      return std::nullopt;
    auto choices = choicesAt(point, run_.choices.boundsChecks);
    if (!choices)
      return std::unexpected(choices.error());
    std::map<std::string, int64_t> values = integerValues(*run_.kernel, inputs_);
    if (cpuModel_) {
      auto prediction =
          predictCpuRun(*run_.session->program, *run_.kernel, *choices, values, *cpuModel_);
      if (!prediction)
        return std::unexpected(prediction.error());
      return prediction->seconds;
    }
    auto prediction =
        predictGpuRun(*run_.session->program, *run_.kernel, *choices, values, *gpuModel_);
    if (!prediction)
      return std::unexpected(prediction.error());
    return prediction->seconds;
  }

  // The candidate's kernel after the pipeline, printed (compiledCode).
  Expected<std::string> codeAt(const Point &point) const {
    auto choices = choicesAt(point, run_.choices.boundsChecks);
    if (!choices)
      return std::unexpected(choices.error());
    return compiledCode(*choices);
  }

  // Whether `code`, the candidate's, was timed already, which it then says.
  bool sayTimedAlready(const Point &point, const std::string &code) {
    auto seen = timedCode_.find(code);
    if (seen == timedCode_.end())
      return false;
    out_ << "  " << describeChoices(*choicesAt(point, run_.choices.boundsChecks))
         << ": the same code as " << seen->second << "\n";
    return true;
  }

  // A candidate the model rules out.
  void skip(const Point &point, double predicted, double bestPredicted) {
    std::string label = describeChoices(*choicesAt(point, run_.choices.boundsChecks));
    out_ << "  " << label << ": predicted " << formatMilliseconds(predicted) << " ms, more than "
         << kPrunedAbove << "x the best's " << formatMilliseconds(bestPredicted)
         << " ms: not timed\n";
    candidates_.push_back({label, predicted * 1e3, std::nullopt});
  }

  // The candidate's median time in seconds; none when its code (`code`)
  // was timed already or it disagrees with the defaults.
  Expected<std::optional<double>> measure(const Point &point, std::optional<double> predicted,
                                          const std::string &code) {
    auto choices = choicesAt(point, run_.choices.boundsChecks);
    if (!choices)
      return std::unexpected(choices.error());
    if (sayTimedAlready(point, code))
      return std::nullopt;
    std::string label = describeChoices(*choices);
    timedCode_.emplace(code, label);
    auto engine = createEngine(run_.engine->kind(), *choices);
    if (!engine)
      return std::unexpected(engine.error());
    if (device_.empty())
      device_ = (*engine)->device();
    KernelArgs args = inputs_;
    const Program &program = *run_.session->program;
    if (auto warm = timeRuns(**engine, program, *run_.kernel, args, inputs_, 1); !warm)
      return std::unexpected(warm.error());
    auto times = timeRuns(**engine, program, *run_.kernel, args, inputs_, options_.repeat);
    if (!times)
      return std::unexpected(times.error());
    if (!reference_) {
      reference_ = args;
    } else if (std::string mismatch = disagreement(args); !mismatch.empty()) {
      out_ << "  " << label << ": DISAGREES with the defaults (" << mismatch
           << "): left out; please report this compiler bug with the program\n";
      return std::nullopt;
    }
    double median = medianOf(*times);
    out_ << "  " << label << ": " << formatMilliseconds(median) << " ms";
    if (predicted) {
      out_ << " (predicted " << formatMilliseconds(*predicted) << " ms)";
      candidates_.push_back({label, *predicted * 1e3, median * 1e3});
    }
    out_ << "\n";
    return median;
  }

  // The kernel after the pipeline with `choices`, printed: equal text, equal code.
  Expected<std::string> compiledCode(const passes::PassChoices &choices) const {
    passes::PipelineOptions pipeline;
    pipeline.target = target_;
    pipeline.choices = choices;
    codegen::targetCpu(pipeline);
    pipeline.specializedSizes = passes::sizesToSpecialize(lowered_, inputs_.sizes, pipeline);
    pipeline.runSizes = inputs_.sizes;
    auto compiled = passes::runPipeline(lowered_, pipeline);
    if (!compiled)
      return std::unexpected(compiled.error());
    // The same code whatever choices led to it (register_tile=0 choosing
    // 8 x 8 tiles at these sizes and register_tile=8).
    compiled->sizeChoices.clear();
    return ir::toString(*compiled);
  }

  // "" when every output of `args` matches the reference's.
  std::string disagreement(const KernelArgs &args) const {
    const KernelDecl &kernel = *run_.kernel;
    for (size_t i = 0; i < kernel.params.size(); ++i) {
      if (kernel.params[i]->intent != Intent::Out && kernel.params[i]->intent != Intent::InOut)
        continue;
      CompareReport compared = compareArrays(reference_->params[i], args.params[i], compare_);
      if (!compared.matches)
        return compared.describe(kernel.params[i]->name);
    }
    return "";
  }

  const TuneOptions &options_;
  PreparedRun &run_;
  passes::PipelineTarget target_;
  std::ostream &out_;
  KernelArgs inputs_;
  CompareOptions compare_;
  ir::Function lowered_;                // the kernel before the pipeline, which each candidate runs
  std::optional<KernelArgs> reference_; // the defaults' outputs
  std::map<std::string, std::string> timedCode_; // printed IR -> the candidate that had it
  std::set<Point> visited_;
  std::string device_;
  const perf::GpuDevice *gpuModel_;         // the GPU's performance model; null: none
  std::optional<perf::CpuDevice> cpuModel_; // this CPU's, when tuning on the CPU
  std::vector<TunedChoice::Candidate> candidates_;
};

} // namespace

Expected<TunedChoice> tunePreparedRun(const RunTargetOptions &target, int repeat, PreparedRun &run,
                                      std::ostream &out) {
  std::string engine = run.engine->kind();
  if (!isTunable(*run.engine))
    return makeError("nothing to tune on device '" +
                     (target.device.empty() ? engine : target.device) + "': tune on gpu or cpu");
  passes::PipelineTarget pipeline =
      engine == "gpu" ? passes::PipelineTarget::Gpu : passes::PipelineTarget::Cpu;
  out << "tuning kernel '" << run.kernel->name << "' on " << run.engine->device() << " (" << repeat
      << " runs per candidate, median):\n";
  TuneOptions options{target, repeat};
  Search search(options, run, pipeline, out);
  return search.tune();
}

Status writeSchedule(const std::string &mainFile, const Session &session, const KernelDecl &kernel,
                     const passes::PassChoices &choices, std::ostream &out) {
  const SourceFile &file = session.sources.file(kernel.range.begin.file);
  // The arrays' staging, which the search does not vary, stays as written.
  std::string arguments = passes::scheduleArguments(choices);
  for (const ScheduleChoice &choice : kernel.schedule)
    if (choice.namesArray())
      arguments += (arguments.empty() ? "" : ", ") + choice.name + "=" + choice.value;
  auto written = std::ranges::find_if(
      kernel.attributes, [](const Attribute &attribute) { return attribute.name == "schedule"; });
  if (arguments.empty() && written == kernel.attributes.end()) {
    out << "kernel '" << kernel.name << "' is fastest with the defaults: no @schedule written\n";
    return {};
  }
  if (file.path != mainFile)
    return makeError("--write-schedule: kernel '" + kernel.name + "' is in '" + file.path +
                     "', which '" + mainFile + "' imports: write its schedule there by hand (" +
                     (arguments.empty() ? "no @schedule" : "@schedule(" + arguments + ")") + ")");
  std::string text = file.text;
  size_t kernelStart = file.offsetOf(kernel.range.begin);
  // The kernel's own indentation (tabs kept), where it starts its line.
  std::string indent =
      text.substr(file.lineStarts[kernel.range.begin.line - 1], kernel.range.begin.col - 1);
  if (indent.find_first_not_of(" \t") != std::string::npos)
    indent.clear();
  std::string said;
  if (written != kernel.attributes.end()) {
    size_t begin = file.offsetOf(written->range.begin);
    size_t end = file.offsetOf(written->range.end) + 1;
    if (arguments.empty()) {
      // Alone on its line, the line goes; else the attribute and the blanks
      // after it.
      size_t lineStart = file.lineStarts[written->range.begin.line - 1];
      while (end < text.size() && (text[end] == ' ' || text[end] == '\t'))
        ++end;
      bool alone = text.find_first_not_of(" \t", lineStart) == begin;
      if (alone && text.compare(end, 2, "\r\n") == 0)
        text.erase(lineStart, end + 2 - lineStart);
      else if (alone && (end == text.size() || text[end] == '\n'))
        text.erase(lineStart, std::min(end + 1, text.size()) - lineStart);
      else
        text.erase(begin, end - begin);
      said = "removed the @schedule of kernel '" + kernel.name + "' (the defaults are best)";
    } else {
      text.replace(begin, end - begin, "@schedule(" + arguments + ")");
      said = "wrote @schedule(" + arguments + ") for kernel '" + kernel.name + "'";
    }
  } else {
    std::string lineBreak = text.find("\r\n") != std::string::npos ? "\r\n" : "\n";
    text.insert(kernelStart, "@schedule(" + arguments + ")" + lineBreak + indent);
    said = "wrote @schedule(" + arguments + ") before kernel '" + kernel.name + "'";
  }
  if (Status saved = writeFileAtomically(file.path, text, "'" + file.path + "'"); !saved)
    return saved;
  out << said << " in " << file.path << "\n";
  return {};
}

static Expected<TunedChoice> tuneAndWriteSchedule(const TuneOptions &options, PreparedRun &run,
                                                  std::ostream &out) {
  auto tuned = tunePreparedRun(options.target, options.repeat, run, out);
  if (tuned && options.writeSchedule)
    if (Status written =
            writeSchedule(options.target.file, *run.session, *run.kernel, tuned->choices, out);
        !written)
      return std::unexpected(written.error());
  return tuned;
}

void addTuneCommand(CLI::App &app) {
  auto options = std::make_shared<TuneOptions>();
  CLI::App *command = app.add_subcommand(
      "tune", "Search the optimizations' choices for a kernel and keep the fastest");
  // No --skip-pass, --pass-param or --tuned: the search makes those
  // choices, for checked code unless --unsafe.
  options->target.addTo(*command, "tune", /*passChoices=*/false);
  options->target.passes.addUnsafeTo(*command);
  options->target.passes.addFpContractTo(*command);
  command->add_option("--repeat", options->repeat, "Timed runs per candidate (default: 5)")
      ->type_name("N")
      ->check(wholeNumberIn(1, 1000));
  command->add_flag("--write-schedule", options->writeSchedule,
                    "Write the choices found into the kernel's source as its @schedule "
                    "(docs/schedules.md), replacing the one it has");
  command->callback([options] {
    std::optional<PreparedRun> run = prepareRun(options->target);
    if (!run)
      throw CLI::RuntimeError(1);
    if (auto tuned = tuneAndWriteSchedule(*options, *run, std::cout); !tuned) {
      run->session->report(tuned.error());
      throw CLI::RuntimeError(1);
    }
  });
}

} // namespace loopc::driver
