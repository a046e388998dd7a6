// The device's own declarations of cuBLASLt (device/cuda/blas_lt.h,
// blas_symbols.def) against the toolkit's, where one is installed: every
// function resolves from its libcublasLt, and (compiled with its
// cublasLt.h) every enum value and struct layout the device declares is
// the header's. Without a GPU, cublasLtCreate fails, and the device says so.
// On the fake libcuda and the stand-in cuBLASLt: the timed choice among the
// heuristic's candidates.
#include <catch2/catch.hpp>
#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>

#include "device/cuda/blas_lt.h"
#include "device/cuda/driver_api.h"

#ifdef LINNET_TEST_CUBLASLT_HEADER
#include <cublasLt.h>

namespace cu = linnet::device::cuda;
static_assert(cu::CUBLAS_STATUS_SUCCESS == ::CUBLAS_STATUS_SUCCESS);
static_assert(cu::CUBLAS_OP_N == ::CUBLAS_OP_N && cu::CUBLAS_OP_T == ::CUBLAS_OP_T);
static_assert(cu::CUBLAS_COMPUTE_32F == ::CUBLAS_COMPUTE_32F);
static_assert(cu::CUDA_R_32F == ::CUDA_R_32F && cu::CUDA_R_16F == ::CUDA_R_16F && cu::CUDA_R_16BF == ::CUDA_R_16BF);
static_assert(cu::CUBLASLT_MATMUL_DESC_TRANSA == ::CUBLASLT_MATMUL_DESC_TRANSA &&
              cu::CUBLASLT_MATMUL_DESC_TRANSB == ::CUBLASLT_MATMUL_DESC_TRANSB);
static_assert(cu::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT == ::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT &&
              cu::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET == ::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
static_assert(cu::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES == ::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
static_assert(sizeof(cu::BlasAlgo) == sizeof(cublasLtMatmulAlgo_t));
static_assert(sizeof(cu::BlasHeuristicResult) == sizeof(cublasLtMatmulHeuristicResult_t));
static_assert(offsetof(cu::BlasHeuristicResult, workspaceSize) == offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize));
static_assert(offsetof(cu::BlasHeuristicResult, state) == offsetof(cublasLtMatmulHeuristicResult_t, state));
static_assert(offsetof(cu::BlasHeuristicResult, wavesCount) == offsetof(cublasLtMatmulHeuristicResult_t, wavesCount));
#endif

using namespace linnet::device::cuda;

TEST_CASE("every cuBLASLt function the device uses is in the toolkit's library", "[cuda][blas]") {
  std::string library = LINNET_TEST_CUBLASLT;
  if (library.empty()) {
    WARN("no CUDA toolkit libcublasLt found at configure time: not checked");
    return;
  }
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(handle);
#define LINNET_BLAS_FUNCTION(name, result, parameters) CHECK(dlsym(handle, #name) != nullptr);
#include "device/cuda/blas_symbols.def"
#undef LINNET_BLAS_FUNCTION
  dlclose(handle);
}

TEST_CASE("cuBLASLt that cannot start is an error naming the call", "[cuda][blas]") {
  std::string library = LINNET_TEST_CUBLASLT, stub = LINNET_TEST_CUDA_STUB;
  if (library.empty() || stub.empty()) {
    WARN("no CUDA toolkit (libcublasLt and the stub libcuda) found at configure time: not checked");
    return;
  }
  std::shared_ptr<const DriverApi> driver = DriverApi::open(stub);
  // Missing libraries first: each tried, each reason kept.
  try {
    BlasLt blas(*driver, "/nonexistent/a.so:/nonexistent/b.so");
    FAIL("opened a missing library");
  } catch (const std::runtime_error& e) {
    CHECK_THAT(e.what(), Catch::StartsWith("cuda: this entry's matrix products need cuBLASLt, and none loads (") &&
                             Catch::Contains("/nonexistent/a.so") && Catch::Contains("/nonexistent/b.so"));
  }
  // The real library loads and resolves; without a GPU its handle cannot be made.
  try {
    BlasLt blas(*driver, "/nonexistent/a.so:" + library);
    FAIL("cublasLtCreate succeeded without a GPU");
  } catch (const std::runtime_error& e) {
    CHECK_THAT(e.what(), Catch::StartsWith("cuda: cublasLtCreate failed: CUBLAS_STATUS_"));
  }
}

TEST_CASE("cuBLASLt's candidates are timed at a shape's first call that may time, and the fastest kept",
          "[cuda][blas]") {
  // The fake libcuda (its events read the host's clock) and the stand-in
  // cuBLASLt, whose 3 candidates take 3, 0 and 1 ms here.
  ::setenv("FAKE_CUBLASLT_DELAYS_MS", "3,0,1", 1);
  std::shared_ptr<const DriverApi> driver = DriverApi::open(LINNET_TEST_FAKE_CUDA);
  long counts[3] = {};
  {
    BlasLt blas(*driver, LINNET_TEST_FAKE_CUBLASLT);
    CUdeviceptr x = 0, w = 0, c = 0;
    REQUIRE(driver->cuMemAlloc(&x, 4 * 16 * 4) == CUDA_SUCCESS);
    REQUIRE(driver->cuMemAlloc(&w, 8 * 16 * 4) == CUDA_SUCCESS);
    REQUIRE(driver->cuMemAlloc(&c, 4 * 8 * 4) == CUDA_SUCCESS);
    LinnetGemm g{};
    g.element_type = LINNET_CUDA_F32;
    g.transpose_w = 1;
    g.batch = 1, g.m = 4, g.n = 8, g.k = 16;
    g.x = reinterpret_cast<const void*>(x), g.w = reinterpret_cast<const void*>(w), g.c = reinterpret_cast<void*>(c);
    g.ld_x = 16, g.ld_w = 16, g.ld_c = 8;
    auto counted = [&] {
      using Counts = void (*)(long*);
      void* standIn = dlopen(LINNET_TEST_FAKE_CUBLASLT, RTLD_NOW | RTLD_NOLOAD);
      REQUIRE(standIn);
      reinterpret_cast<Counts>(dlsym(standIn, "fake_cublaslt_algorithm_counts"))(counts);
      dlclose(standIn);
    };
    blas.run(g, nullptr, /*mayTime=*/false);  // a capture's call: the heuristic's first, untimed
    counted();
    CHECK((counts[0] == 1 && counts[1] == 0 && counts[2] == 0));
    blas.run(g, nullptr, /*mayTime=*/true);  // each candidate: a warm-up and kRepeats, then the fastest
    counted();
    long each = 1 + BlasLt::kRepeats;
    CHECK((counts[0] == 1 + each && counts[1] == each + 1 && counts[2] == each));
    blas.run(g, nullptr, /*mayTime=*/true);  // timed once: the fastest from now on
    counted();
    CHECK((counts[0] == 1 + each && counts[1] == each + 2 && counts[2] == each));
    CHECK(blas.plans() == 1);
    for (CUdeviceptr p : {x, w, c}) driver->cuMemFree(p);
  }
  ::unsetenv("FAKE_CUBLASLT_DELAYS_MS");
}
