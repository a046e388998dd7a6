// cuBLASLt for the CUDA device's library products (a LinnetGemm from a
// CUDA artifact: prefill's matrix products), reached through dlopen only,
// like the driver: `linnet` starts without it, and only an entry that has
// such a product needs it.
//
// One handle and one 32 MiB workspace per context. Each distinct shape
// (types, transposes, sizes, leading dimensions, batch and strides) gets a
// plan once: its descriptors and up to kCandidates algorithms the heuristic
// proposes. At the plan's first call that may time (not inside a graph
// capture, not while profiling), each candidate runs on the call's own
// operands, timed by events (a warm-up, then the best of kRepeats), and the
// fastest is kept for every later call; until then, and when there is one
// candidate, the heuristic's first. So a call inside a CUDA graph capture
// only enqueues.
// f32 products compute in CUBLAS_COMPUTE_32F (never TF32); bf16 and f16 take
// f32 sums too and round once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "artifact/cuda_api.h"
#include "device/cuda/driver_api.h"
#include "device/cuda/gemm_layout.h"

namespace linnet::device::cuda {

// cublasLt.h's types, as the library has them.
using BlasStatus = int;
using BlasHandle = struct cublasLtContext*;
using BlasMatmulDesc = struct BlasMatmulDescOpaque*;
using BlasLayout = struct BlasLayoutOpaque*;
using BlasPreference = struct BlasPreferenceOpaque*;
struct BlasAlgo {
  std::uint64_t data[8];
};
struct BlasHeuristicResult {
  BlasAlgo algo;
  std::size_t workspaceSize;
  BlasStatus state;
  float wavesCount;
  int reserved[4];
};

// The values of cublasLt.h's, cublas_api.h's and library_types.h's enums that the device uses.
inline constexpr BlasStatus CUBLAS_STATUS_SUCCESS = 0;
inline constexpr int CUBLAS_OP_N = 0, CUBLAS_OP_T = 1;
inline constexpr int CUBLAS_COMPUTE_32F = 68;
inline constexpr int CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14;
inline constexpr int CUBLASLT_MATMUL_DESC_TRANSA = 3, CUBLASLT_MATMUL_DESC_TRANSB = 4;
inline constexpr int CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6;
inline constexpr int CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1;

class BlasLt {
 public:
  static constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

  // dlopen, every function of blas_symbols.def, the handle and the
  // workspace (cuMemAlloc). Throws std::runtime_error naming the library
  // and what failed ("cuda: cuBLASLt: ...").
  BlasLt(const DriverApi& driver, const std::string& libraries);
  ~BlasLt();
  BlasLt(const BlasLt&) = delete;
  BlasLt& operator=(const BlasLt&) = delete;

  static constexpr int kCandidates = 8, kRepeats = 3;

  // gemm on `stream`; throws on a failed call, naming it and its status.
  // With `mayTime`, a plan not yet timed first times its candidates, which
  // waits for the stream.
  void run(const LinnetGemm& gemm, CUstream stream, bool mayTime = false);
  std::size_t plans() const { return plans_.size(); }

#define LINNET_BLAS_FUNCTION(name, result, parameters) result(*name) parameters = nullptr;
#include "device/cuda/blas_symbols.def"
#undef LINNET_BLAS_FUNCTION

 private:
  struct Plan {
    BlasMatmulDesc desc = nullptr;
    BlasLayout a = nullptr, b = nullptr, c = nullptr;
    BlasAlgo algo{};                   // the one the calls use
    std::vector<BlasAlgo> candidates;  // the heuristic's, best first
    bool timed = false;
  };
  using Key = std::tuple<std::uint32_t, bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                         std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
  Plan& plan(const LinnetGemm& gemm, const ColumnMajorGemm& p);
  void build(Plan& plan, const LinnetGemm& gemm, const ColumnMajorGemm& p);
  BlasStatus matmul(const Plan& plan, const BlasAlgo& algo, const ColumnMajorGemm& p, CUstream stream);
  // Times plan's candidates on p's operands and keeps the fastest.
  void time(Plan& plan, const ColumnMajorGemm& p, CUstream stream);
  void destroy(Plan& plan);
  void check(BlasStatus status, const char* call) const;
  BlasLayout layout(int type, std::int64_t rows, std::int64_t cols, std::int64_t ld, std::int64_t batch,
                    std::int64_t stride);

  const DriverApi& driver_;
  std::string library_;
  BlasHandle handle_ = nullptr;
  CUdeviceptr workspace_ = 0;
  std::map<Key, Plan> plans_;
};

}  // namespace linnet::device::cuda
