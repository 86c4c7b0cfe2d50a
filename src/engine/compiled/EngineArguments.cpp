// Binding KernelArgs to a lowered Function (see EngineArguments.h).
#include "engine/compiled/EngineArguments.h"

#include <algorithm>
#include <cstring>
#include <optional>

namespace loopc::engine {

Expected<FunctionArguments> bindFunctionArguments(const KernelDecl &kernel,
                                                  const ir::Function &function, KernelArgs &args,
                                                  const std::string &engine) {
  if (args.params.size() != kernel.params.size())
    return makeError("kernel '" + kernel.name + "' takes " + std::to_string(kernel.params.size()) +
                         " arguments, got " + std::to_string(args.params.size()),
                     kernel.range);
  auto paramIndex = [&](const std::string &name) -> std::optional<size_t> {
    for (size_t i = 0; i < kernel.params.size(); ++i)
      if (kernel.params[i]->name == name)
        return i;
    return std::nullopt;
  };

  for (size_t i = 0; i < kernel.params.size(); ++i)
    if (kernel.params[i]->intent == Intent::Out)
      std::ranges::fill(args.params[i].elementBytes(), 0);

  FunctionArguments bound;
  for (const ir::Buffer &buffer : function.buffers) {
    auto index = paramIndex(buffer->name);
    if (!index)
      return makeError(engine + " engine: no argument for buffer '" + buffer->name + "'",
                       buffer->declared);
    bound.bufferParams.push_back(*index);
  }
  bound.scalarSlots.assign(function.scalars.size(), 0);
  for (size_t i = 0; i < function.scalars.size(); ++i) {
    const ir::ScalarParam &scalar = function.scalars[i];
    if (auto index = paramIndex(scalar.name)) {
      const HostArray &value = args.params[*index];
      std::memcpy(&bound.scalarSlots[i], value.elementBytes().data(),
                  std::min(value.elementBytes().size(), scalarSize(scalar.type)));
      continue;
    }
    auto size = args.sizes.find(scalar.name);
    if (size == args.sizes.end())
      return makeError(engine + " engine: no value for '" + scalar.name + "'", kernel.range);
    // Sizes are i64; the lowering may narrow one to the type it uses.
    if (scalar.type == ScalarType::I32) {
      int32_t narrow = static_cast<int32_t>(size->second);
      std::memcpy(&bound.scalarSlots[i], &narrow, sizeof narrow);
    } else {
      std::memcpy(&bound.scalarSlots[i], &size->second, sizeof size->second);
    }
  }
  return bound;
}

} // namespace loopc::engine
