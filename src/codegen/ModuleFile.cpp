// Building, writing and reading module files (see ModuleFile.h).
#include "codegen/ModuleFile.h"

#include "codegen/DeviceErrors.h"
#include "ir/IRPrinter.h"

#include <nlohmann/json.hpp>

namespace loopc::codegen {

namespace {

using nlohmann::json;

constexpr const char *kFormat = "loopc-module";

ModuleParameter describeBuffer(const ir::BufferInfo &buffer) {
  ModuleParameter parameter{.name = buffer.name,
                            .type = scalarTypeName(buffer.element),
                            .isBuffer = true,
                            .isWritten = buffer.isWritten};
  for (const ir::Expr &extent : buffer.shape)
    parameter.shape.push_back(ir::toString(extent));
  return parameter;
}

ModuleParameter describeScalar(const ir::ScalarParam &scalar) {
  return {.name = scalar.name, .type = scalarTypeName(scalar.type)};
}

void collectLaunches(const ir::StmtNode &stmt, std::vector<const ir::Launch *> &launches) {
  using Kind = ir::StmtNode::Kind;
  switch (stmt.kind) {
  case Kind::Launch:
    launches.push_back(stmt.as<ir::Launch>());
    return;
  case Kind::For:
    return collectLaunches(*stmt.as<ir::For>()->body, launches);
  case Kind::LetStmt:
    return collectLaunches(*stmt.as<ir::LetStmt>()->body, launches);
  case Kind::Allocate:
    return collectLaunches(*stmt.as<ir::Allocate>()->body, launches);
  case Kind::IfThenElse: {
    auto &branch = *stmt.as<ir::IfThenElse>();
    collectLaunches(*branch.thenCase, launches);
    if (branch.elseCase)
      collectLaunches(*branch.elseCase, launches);
    return;
  }
  case Kind::Block:
    for (const ir::Stmt &child : stmt.as<ir::Block>()->stmts)
      collectLaunches(*child, launches);
    return;
  default:
    return;
  }
}

json toJson(const ModuleParameter &parameter) {
  return {{"name", parameter.name},
          {"type", parameter.type},
          {"shape", parameter.shape},
          {"buffer", parameter.isBuffer},
          {"written", parameter.isWritten}};
}

ModuleParameter parameterFromJson(const json &value) {
  return {.name = value.at("name"),
          .type = value.at("type"),
          .shape = value.at("shape"),
          .isBuffer = value.at("buffer"),
          .isWritten = value.at("written")};
}

json toJson(const std::vector<ModuleParameter> &parameters) {
  json list = json::array();
  for (const ModuleParameter &parameter : parameters)
    list.push_back(toJson(parameter));
  return list;
}

std::vector<ModuleParameter> parametersFromJson(const json &list) {
  std::vector<ModuleParameter> parameters;
  for (const json &value : list)
    parameters.push_back(parameterFromJson(value));
  return parameters;
}

} // namespace

ModuleFile describeModule(const ir::Function &function, const std::string &gpu, std::string ptx,
                          const SourceManager &sources) {
  ModuleFile module{.function = function.name, .gpu = gpu, .ptx = std::move(ptx)};
  for (const ir::Buffer &buffer : function.buffers)
    module.parameters.push_back(describeBuffer(*buffer));
  for (const ir::ScalarParam &scalar : function.scalars)
    module.parameters.push_back(describeScalar(scalar));
  std::vector<const ir::Launch *> launches;
  if (function.body) {
    collectLaunches(*function.body, launches);
    module.hostProgram = ir::toString(function.body);
  }
  for (const ir::KernelFunc &kernel : function.kernels) {
    ModuleKernel described{.name = kernel.name,
                           .maxThreadsPerBlock = kernel.maxThreadsPerBlock,
                           .minBlocksPerSM = kernel.minBlocksPerSM,
                           .source = sources.location(kernel.source)};
    for (const ir::Buffer &buffer : kernel.buffers)
      described.parameters.push_back(describeBuffer(*buffer));
    for (const ir::ScalarParam &scalar : kernel.scalars)
      described.parameters.push_back(describeScalar(scalar));
    // The device error record (DeviceErrors.h): three zeroed i64 the host
    // reads back.
    described.parameters.push_back({.name = kDeviceErrorName,
                                    .type = scalarTypeName(ScalarType::I64),
                                    .shape = {"3"},
                                    .isBuffer = true,
                                    .isWritten = true});
    for (const ir::Launch *launch : launches) {
      if (launch->kernel != kernel.name)
        continue;
      ModuleLaunch geometry;
      for (const ir::Expr &extent : launch->grid)
        geometry.grid.push_back(ir::toString(extent));
      for (const ir::Expr &extent : launch->block)
        geometry.block.push_back(ir::toString(extent));
      described.launches.push_back(std::move(geometry));
      if (described.source.empty())
        described.source = sources.location(launch->source);
    }
    module.kernels.push_back(std::move(described));
  }
  return module;
}

std::string serializeModule(const ModuleFile &module) {
  json kernels = json::array();
  for (const ModuleKernel &kernel : module.kernels) {
    json launches = json::array();
    for (const ModuleLaunch &launch : kernel.launches)
      launches.push_back({{"grid", launch.grid}, {"block", launch.block}});
    kernels.push_back({{"name", kernel.name},
                       {"parameters", toJson(kernel.parameters)},
                       {"launches", launches},
                       {"maxThreadsPerBlock", kernel.maxThreadsPerBlock},
                       {"minBlocksPerSM", kernel.minBlocksPerSM},
                       {"source", kernel.source}});
  }
  json document = {{"format", kFormat},
                   {"version", ModuleFile::kVersion},
                   {"function", module.function},
                   {"gpu", module.gpu},
                   {"parameters", toJson(module.parameters)},
                   {"kernels", kernels},
                   {"host", module.hostProgram},
                   {"ptx", module.ptx}};
  return document.dump(2) + "\n";
}

Expected<ModuleFile> parseModule(const std::string &text) {
  json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_object())
    return makeError("not a loopc module file: it is not a JSON object");
  if (document.value("format", "") != kFormat)
    return makeError("not a loopc module file: \"format\" is not \"" + std::string(kFormat) + "\"");
  if (document.value("version", 0) != ModuleFile::kVersion)
    return makeError("loopc module file version " + document.value("version", json()).dump() +
                     " is not supported (this loopc reads version " +
                     std::to_string(ModuleFile::kVersion) + ")");
  try {
    ModuleFile module{.function = document.at("function"),
                      .gpu = document.at("gpu"),
                      .parameters = parametersFromJson(document.at("parameters")),
                      .hostProgram = document.at("host"),
                      .ptx = document.at("ptx")};
    for (const json &kernel : document.at("kernels")) {
      ModuleKernel parsed{.name = kernel.at("name"),
                          .parameters = parametersFromJson(kernel.at("parameters")),
                          .maxThreadsPerBlock = kernel.at("maxThreadsPerBlock"),
                          .minBlocksPerSM = kernel.at("minBlocksPerSM"),
                          .source = kernel.at("source")};
      for (const json &launch : kernel.at("launches"))
        parsed.launches.push_back({launch.at("grid"), launch.at("block")});
      module.kernels.push_back(std::move(parsed));
    }
    return module;
  } catch (const json::exception &error) {
    return makeError(std::string("malformed loopc module file: ") + error.what());
  }
}

} // namespace loopc::codegen
