#include "device/cuda/blas_lt.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "device/cuda/event_timer.h"

namespace linnet::device::cuda {

namespace {

int dataType(std::uint32_t elementType) {
  switch (elementType) {
    case LINNET_CUDA_F32: return CUDA_R_32F;
    case LINNET_CUDA_BF16: return CUDA_R_16BF;
    case LINNET_CUDA_F16: return CUDA_R_16F;
    default: throw std::runtime_error(fmt::format("cuda: cuBLASLt: unknown element type {}", elementType));
  }
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::size_t from = 0;
  while (from <= list.size()) {
    std::size_t to = list.find(':', from);
    if (to == std::string::npos) to = list.size();
    if (to > from) out.push_back(list.substr(from, to - from));
    from = to + 1;
  }
  return out;
}

}  // namespace

BlasLt::BlasLt(const DriverApi& driver, const std::string& libraries) : driver_(driver) {
  // Never closed, like the driver: cuBLASLt keeps state for the process.
  void* handle = nullptr;
  std::string errors;
  for (const std::string& name : split(libraries)) {
    handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      library_ = name;
      break;
    }
    errors += fmt::format("{}{}", errors.empty() ? "" : "; ", dlerror());
  }
  if (!handle)
    throw std::runtime_error(fmt::format(
        "cuda: this entry's matrix products need cuBLASLt, and none loads ({}); install the CUDA toolkit's "
        "libcublasLt or set LINNET_CUBLASLT to its path",
        errors));
  auto resolve = [&](const char* symbol) {
    void* address = dlsym(handle, symbol);
    if (!address) throw std::runtime_error(fmt::format("cuda: {} has no function {}", library_, symbol));
    return address;
  };
#define LINNET_BLAS_FUNCTION(name, result, parameters) name = reinterpret_cast<decltype(name)>(resolve(#name));
#include "device/cuda/blas_symbols.def"
#undef LINNET_BLAS_FUNCTION
  check(cublasLtCreate(&handle_), "cublasLtCreate");
  driver_.check(driver_.cuMemAlloc(&workspace_, kWorkspaceBytes), "cuMemAlloc (cuBLASLt's workspace)");
}

void BlasLt::destroy(Plan& p) {
  for (BlasLayout l : {p.a, p.b, p.c})
    if (l) cublasLtMatrixLayoutDestroy(l);
  if (p.desc) cublasLtMatmulDescDestroy(p.desc);
  p = Plan{};
}

BlasLt::~BlasLt() {
  for (auto& [key, p] : plans_) destroy(p);
  if (workspace_) driver_.cuMemFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

void BlasLt::check(BlasStatus status, const char* call) const {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const char* name = cublasLtGetStatusName ? cublasLtGetStatusName(status) : nullptr;
  throw std::runtime_error(fmt::format("cuda: {} failed: {}", call, name ? name : fmt::format("status {}", status)));
}

BlasLayout BlasLt::layout(int type, std::int64_t rows, std::int64_t cols, std::int64_t ld, std::int64_t batch,
                          std::int64_t stride) {
  BlasLayout l = nullptr;
  check(cublasLtMatrixLayoutCreate(&l, type, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols), ld),
        "cublasLtMatrixLayoutCreate");
  if (batch > 1) {
    auto count = static_cast<std::int32_t>(batch);
    check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
          "cublasLtMatrixLayoutSetAttribute (batch count)");
    check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
          "cublasLtMatrixLayoutSetAttribute (batch stride)");
  }
  return l;
}

BlasLt::Plan& BlasLt::plan(const LinnetGemm& g, const ColumnMajorGemm& p) {
  Key key{g.element_type, p.transposeA, p.m, p.n, p.k, p.lda, p.ldb, p.ldc, p.batch, p.strideA, p.strideB, p.strideC};
  if (auto found = plans_.find(key); found != plans_.end()) return found->second;
  Plan plan;
  try {
    build(plan, g, p);
  } catch (...) {
    destroy(plan);
    throw;
  }
  return plans_.emplace(key, plan).first->second;
}

void BlasLt::build(Plan& plan, const LinnetGemm& g, const ColumnMajorGemm& p) {
  int type = dataType(g.element_type);
  check(cublasLtMatmulDescCreate(&plan.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  std::int32_t transA = p.transposeA ? CUBLAS_OP_T : CUBLAS_OP_N, transB = p.transposeB ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transA, sizeof transA),
        "cublasLtMatmulDescSetAttribute (transa)");
  check(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &transB, sizeof transB),
        "cublasLtMatmulDescSetAttribute (transb)");
  plan.a = layout(type, p.rowsA(), p.colsA(), p.lda, p.batch, p.strideA);
  plan.b = layout(type, p.rowsB(), p.colsB(), p.ldb, p.batch, p.strideB);
  plan.c = layout(type, p.m, p.n, p.ldc, p.batch, p.strideC);
  BlasPreference preference = nullptr;
  check(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  std::uint64_t workspace = kWorkspaceBytes;
  BlasStatus set = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                        sizeof workspace);
  BlasHeuristicResult results[kCandidates] = {};
  int found = 0;
  BlasStatus heuristic = set == CUBLAS_STATUS_SUCCESS
                             ? cublasLtMatmulAlgoGetHeuristic(handle_, plan.desc, plan.a, plan.b, plan.c, plan.c,
                                                              preference, kCandidates, results, &found)
                             : set;
  cublasLtMatmulPreferenceDestroy(preference);
  check(set, "cublasLtMatmulPreferenceSetAttribute (workspace)");
  check(heuristic, "cublasLtMatmulAlgoGetHeuristic");
  for (int i = 0; i < std::min(found, kCandidates); ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= kWorkspaceBytes)
      plan.candidates.push_back(results[i].algo);
  if (plan.candidates.empty())
    throw std::runtime_error(fmt::format(
        "cuda: cuBLASLt has no algorithm for a {} x {} x {} product (batch {}, lda {}, ldb {}, ldc {})", p.m, p.n, p.k,
        p.batch, p.lda, p.ldb, p.ldc));
  plan.algo = plan.candidates.front();
  plan.timed = plan.candidates.size() == 1;
}

BlasStatus BlasLt::matmul(const Plan& plan, const BlasAlgo& algo, const ColumnMajorGemm& p, CUstream stream) {
  const float one = 1.0f, zero = 0.0f;
  return cublasLtMatmul(handle_, plan.desc, &one, p.a, plan.a, p.b, plan.b, &zero, p.c, plan.c, p.c, plan.c, &algo,
                        reinterpret_cast<void*>(workspace_), kWorkspaceBytes, stream);
}

void BlasLt::time(Plan& plan, const ColumnMajorGemm& p, CUstream stream) {
  EventTimer timer(driver_, stream);
  float best = 0;
  bool any = false;
  for (const BlasAlgo& algo : plan.candidates) {
    // A candidate that fails to run is not a choice (the others may be).
    if (matmul(plan, algo, p, stream) != CUBLAS_STATUS_SUCCESS) continue;
    timer.start();
    bool ran = true;
    for (int r = 0; r < kRepeats && ran; ++r) ran = matmul(plan, algo, p, stream) == CUBLAS_STATUS_SUCCESS;
    float ms = timer.stop();
    if (ran && (!any || ms < best)) {
      best = ms;
      plan.algo = algo;
      any = true;
    }
  }
  plan.timed = true;
}

void BlasLt::run(const LinnetGemm& gemm, CUstream stream, bool mayTime) {
  ColumnMajorGemm p = columnMajor(gemm);
  Plan& plan = this->plan(gemm, p);
  // The candidates write the result too; the call below writes it last.
  if (mayTime && !plan.timed) time(plan, p, stream);
  check(matmul(plan, plan.algo, p, stream), "cublasLtMatmul");
}

}  // namespace linnet::device::cuda
