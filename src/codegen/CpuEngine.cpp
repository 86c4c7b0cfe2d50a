// The CPU engine (see CpuEngine.h): binding KernelArgs to the entry function's
// buffer and scalar slots, by name, as the lowering names them after the
// kernel's parameters and sizes.
#include "codegen/CpuEngine.h"

#include "codegen/CpuJit.h"
#include "ir/Lower.h"
#include "passes/Pipeline.h"

#include <chrono>
#include <cstring>

namespace loopc::codegen {

struct CpuEngine::Compiled {
  const Program *program;
  ir::Function function; // its buffers and scalars give the slot order
  std::unique_ptr<CpuProgram> code;
};

CpuEngine::CpuEngine() = default;
CpuEngine::~CpuEngine() = default;

Expected<const CpuEngine::Compiled *> CpuEngine::compiled(const Program &program,
                                                          const KernelDecl &kernel) {
  auto found = cache_.find(&kernel);
  if (found != cache_.end() && found->second->program == &program)
    return found->second.get();
  auto entry = std::make_unique<Compiled>();
  entry->program = &program;
  entry->function = passes::runPipeline(ir::lowerKernel(program, kernel));
  auto code = CpuProgram::compile(entry->function);
  if (!code)
    return std::unexpected(code.error());
  entry->code = std::move(*code);
  const Compiled *result = entry.get();
  cache_[&kernel] = std::move(entry);
  return result;
}

Expected<RunStats> CpuEngine::run(const Program &program, const KernelDecl &kernel,
                                  KernelArgs &args) {
  auto compiledProgram = compiled(program, kernel);
  if (!compiledProgram)
    return std::unexpected(compiledProgram.error());
  const ir::Function &function = (*compiledProgram)->function;
  if (args.params.size() != kernel.params.size())
    return makeError("kernel '" + kernel.name + "' takes " + std::to_string(kernel.params.size()) +
                         " arguments, got " + std::to_string(args.params.size()),
                     kernel.range);
  auto paramIndex = [&](const std::string &name) -> int {
    for (size_t i = 0; i < kernel.params.size(); ++i)
      if (kernel.params[i]->name == name)
        return static_cast<int>(i);
    return -1;
  };

  // `out` parameters start zeroed, whatever the caller left in them.
  for (size_t i = 0; i < kernel.params.size(); ++i)
    if (kernel.params[i]->intent == Intent::Out)
      std::fill(args.params[i].bytes.begin(), args.params[i].bytes.end(), 0);

  std::vector<void *> buffers;
  for (const ir::Buffer &buffer : function.buffers) {
    int index = paramIndex(buffer->name);
    if (index < 0)
      return makeError("CPU engine: no argument for buffer '" + buffer->name + "'",
                       buffer->declared);
    buffers.push_back(args.params[index].bytes.data());
  }
  std::vector<uint64_t> scalars(function.scalars.size(), 0);
  for (size_t i = 0; i < function.scalars.size(); ++i) {
    const ir::ScalarParam &scalar = function.scalars[i];
    int index = paramIndex(scalar.name);
    if (index >= 0) {
      const HostArray &value = args.params[index];
      std::memcpy(&scalars[i], value.bytes.data(),
                  std::min(value.bytes.size(), scalarSize(scalar.type)));
      continue;
    }
    auto size = args.sizes.find(scalar.name);
    if (size == args.sizes.end())
      return makeError("CPU engine: no value for '" + scalar.name + "'", kernel.range);
    // Sizes are i64; the lowering may narrow one to the type it uses.
    if (scalar.type == ScalarType::I32) {
      int32_t narrow = static_cast<int32_t>(size->second);
      std::memcpy(&scalars[i], &narrow, sizeof narrow);
    } else {
      std::memcpy(&scalars[i], &size->second, sizeof size->second);
    }
  }

  auto start = std::chrono::steady_clock::now();
  (*compiledProgram)->code->run(buffers.data(), scalars.data());
  RunStats stats;
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

} // namespace loopc::codegen
