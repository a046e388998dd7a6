// The device's own declarations of cuBLASLt (device/cuda/blas_lt.h,
// blas_symbols.def) against the toolkit's, where one is installed: every
// function resolves from its libcublasLt, and (compiled with its
// cublasLt.h) every enum value and struct layout the device declares is
// the header's. Without a GPU, cublasLtCreate fails, and the device says so.
#include <catch2/catch.hpp>
#include <dlfcn.h>

#include <cstddef>
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
