#include "targets/cuda/kernel_binary.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "common/process.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "targets/cuda/map_to_gpu.h"
#include "transforms/pipeline.h"

namespace linnet::cuda {

namespace {

using namespace mlir;
using transforms::PipelineError;

gpu::ObjectAttr onlyObject(gpu::BinaryOp binary) {
  auto objects = binary.getObjects();
  if (objects.size() != 1) throw PipelineError("internal compiler error: a kernel binary without exactly one object");
  return cast<gpu::ObjectAttr>(objects[0]);
}

gpu::BinaryOp kernelBinary(ModuleOp module) {
  auto binary = module.lookupSymbol<gpu::BinaryOp>(kKernelModule);
  if (!binary) throw PipelineError("internal compiler error: no kernel binary");
  return binary;
}

// ptxas -v's report, per kernel.
std::map<std::string, artifact::Kernel> parseReport(const std::string& report) {
  std::map<std::string, artifact::Kernel> kernels;
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex spills(R"((\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  artifact::Kernel* current = nullptr;
  std::istringstream lines(report);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, entry)) {
      current = &kernels[m[1].str()];
      current->name = m[1].str();
    } else if (!current) {
      continue;
    } else if (std::regex_search(line, m, spills)) {
      current->spillBytes = std::stoll(m[1].str()) + std::stoll(m[2].str());
    } else if (std::regex_search(line, m, used)) {
      current->registers = std::stoll(m[1].str());
      if (std::regex_search(line, m, smem)) current->sharedBytes = std::stoll(m[1].str());
    }
  }
  return kernels;
}

}  // namespace

std::vector<std::string> launchFamilies(ModuleOp module) {
  std::vector<std::string> families;
  module.walk([&](gpu::LaunchOp launch) {
    auto family = launch->getAttrOfType<StringAttr>(kKernelFamily);
    families.push_back(family ? family.str() : "elementwise");
  });
  return families;
}

void setLaunchFamilies(ModuleOp module, const std::vector<std::string>& families) {
  std::size_t k = 0;
  OpBuilder b(module.getContext());
  module.walk([&](gpu::LaunchFuncOp launch) {
    if (k < families.size()) launch->setAttr(kKernelFamily, b.getStringAttr(families[k]));
    ++k;
  });
  if (k != families.size())
    throw PipelineError(fmt::format("internal compiler error: {} launches became {} kernel launches",
                                    families.size(), k));
}

void mergeKernelModules(ModuleOp module) {
  SmallVector<gpu::GPUModuleOp> modules(module.getOps<gpu::GPUModuleOp>());
  if (modules.empty()) return;
  OpBuilder b(modules.front());
  auto merged = gpu::GPUModuleOp::create(b, modules.front().getLoc(), kKernelModule);
  if (merged.getBodyRegion().empty()) merged.getBodyRegion().emplaceBlock();
  Block& body = merged.getBodyRegion().front();
  // Each kernel is named after its module, which outlining made unique.
  std::map<std::string, std::string> renamed;  // "module::func" -> the kernel's new name
  for (gpu::GPUModuleOp m : modules) {
    for (auto fn : llvm::make_early_inc_range(m.getOps<gpu::GPUFuncOp>())) {
      std::string name = m.getName().str();
      renamed[m.getName().str() + "::" + fn.getName().str()] = name;
      fn.setName(name);
      fn->moveBefore(&body, body.end());
    }
    if (!m.getBody()->empty())
      throw PipelineError("internal compiler error: a kernel module holds more than its kernel");
    m.erase();
  }
  module.walk([&](gpu::LaunchFuncOp launch) {
    auto it = renamed.find(launch.getKernelModuleName().str() + "::" + launch.getKernelName().str());
    if (it == renamed.end()) return;
    launch.setKernelAttr(SymbolRefAttr::get(b.getStringAttr(kKernelModule),
                                            {FlatSymbolRefAttr::get(b.getStringAttr(it->second))}));
  });
}

std::string kernelPTX(ModuleOp module) {
  gpu::ObjectAttr object = onlyObject(kernelBinary(module));
  if (object.getFormat() != gpu::CompilationTarget::Assembly)
    throw PipelineError("internal compiler error: the kernel binary is not PTX");
  return object.getObject().str();
}

std::vector<artifact::Kernel> assembleKernels(ModuleOp module, const std::filesystem::path& workDir) {
  gpu::BinaryOp binary = kernelBinary(module);
  gpu::ObjectAttr object = onlyObject(binary);
  std::filesystem::path ptx = workDir / "kernels.ptx", cubin = workDir / "kernels.cubin";
  std::ofstream(ptx) << kernelPTX(module);
  const char* ptxas = std::getenv("LINNET_PTXAS");
  ProcessResult r = runProcess({ptxas ? ptxas : LINNET_PTXAS, std::string("-arch=") + kChip, "-O3", "-v",
                                ptx.string(), "-o", cubin.string()});
  if (r.exitCode != 0) throw PipelineError(fmt::format("ptxas failed on {}:\n{}", ptx.string(), r.errors));
  std::ifstream in(cubin, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(cubin);
  OpBuilder b(module.getContext());
  auto cubinObject = gpu::ObjectAttr::get(module.getContext(), object.getTarget(), gpu::CompilationTarget::Binary,
                                          b.getStringAttr(bytes), object.getProperties(), object.getKernels());
  binary.setObjectsAttr(b.getArrayAttr({cubinObject}));

  std::map<std::string, artifact::Kernel> report = parseReport(r.errors);
  std::vector<artifact::Kernel> kernels;
  module.walk([&](gpu::LaunchFuncOp launch) {
    auto it = report.find(launch.getKernelName().str());
    if (it == report.end()) return;
    artifact::Kernel k = it->second;
    if (auto family = launch->getAttrOfType<StringAttr>(kKernelFamily)) k.family = family.str();
    for (Value v : {launch.getBlockSizeX(), launch.getBlockSizeY(), launch.getBlockSizeZ()})
      k.block.push_back(getConstantIntValue(v).value_or(0));
    kernels.push_back(std::move(k));
  });
  return kernels;
}

}  // namespace linnet::cuda
