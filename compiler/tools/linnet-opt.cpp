// linnet-opt: mlir-opt with the `linnet` dialect and passes registered, for
// the lit/FileCheck tests of each pass (tests/ir) and for experiments.
#include "ir/dialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "transforms/passes.h"
#ifdef LINNET_OPT_CUDA
#include "targets/cuda/fuse_elementwise.h"
#include "targets/cuda/merge_launches.h"
#endif

int main(int argc, char** argv) {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<linnet::ir::LinnetDialect>();
  mlir::registerAllPasses();
  linnet::transforms::registerPasses();
#ifdef LINNET_OPT_CUDA
  linnet::cuda::registerFuseElementwisePass();
  linnet::cuda::registerMergeLaunchesPass();
#endif
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "linnet-opt: the linnet dialect's passes\n", registry));
}
