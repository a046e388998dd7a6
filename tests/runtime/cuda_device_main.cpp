// The CUDA device's tests. Run with "[gpu]", the tests that need a GPU: where
// this machine cannot run CUDA (no driver, no device), they are reported to
// ctest as skipped (exit 77, with the reason), never as passed.

#include <cstdio>
#include <string_view>

#include "device/cuda/cuda_device.h"
#include "device/cuda/driver_api.h"
#include "support/catch_session.h"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) != "[gpu]") continue;
    try {
      linnet::device::cuda::create(linnet::device::cuda::optionsFromEnvironment());
    } catch (const linnet::device::cuda::Unavailable& e) {
      std::printf("SKIPPED: the [gpu] tests need a GPU: %s\n", e.what());
      return 77;
    }
  }
  return linnet::test::runCatchSession(argc, argv);
}
