// A stand-in for libcublasLt (LINNET_CUBLASLT=<this module>) for runs of the
// CUDA device on the fake libcuda, where nothing can compute: it checks that
// each cublasLtMatmul is a product cuBLASLt would accept (every layout's
// rows, columns and leading dimension consistent with the transposes, one
// batch count, f32 scaling and compute, an algorithm from the heuristic, the
// workspace the preference allowed) and counts them; it writes nothing.
// FAKE_CUBLASLT_REPORT=1 prints the counters at exit; a rejected call
// returns CUBLAS_STATUS_INVALID_VALUE (7) and says why on stderr.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>

#include "device/cuda/blas_lt.h"

using namespace linnet::device::cuda;

extern "C" {
#define LINNET_BLAS_FUNCTION(name, result, parameters) result name parameters;
#include "device/cuda/blas_symbols.def"
#undef LINNET_BLAS_FUNCTION
}

namespace {

constexpr BlasStatus kInvalid = 7;

struct Layout {
  int type;
  std::uint64_t rows, cols;
  std::int64_t ld;
  std::int32_t batch = 1;
  std::int64_t stride = 0;
};
struct Desc {
  int compute, scale;
  std::int32_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
};
struct Preference {
  std::uint64_t workspace = 0;
};

constexpr int kAlgorithms = 3;

struct Counters {
  long products = 0, heuristics = 0, rejected = 0;
  long byAlgorithm[kAlgorithms] = {};
  std::set<void*> live;
};
Counters& counters() {
  static Counters c;
  return c;
}

void report() {
  std::fprintf(stderr, "fake cuBLASLt: %ld products, %ld plans, %ld rejected, %zu live descriptors\n",
               counters().products, counters().heuristics, counters().rejected, counters().live.size());
}

BlasStatus reject(const char* why) {
  ++counters().rejected;
  std::fprintf(stderr, "fake cuBLASLt: rejected: %s\n", why);
  return kInvalid;
}

template <class T>
T* make() {
  T* p = new T{};
  counters().live.insert(p);
  return p;
}
template <class T>
BlasStatus drop(T* p) {
  if (!counters().live.erase(p)) return reject("destroying an unknown descriptor");
  delete p;
  return CUBLAS_STATUS_SUCCESS;
}

// op(X)'s rows and columns for a layout read with `trans`.
std::uint64_t opRows(const Layout& l, std::int32_t trans) { return trans == CUBLAS_OP_T ? l.cols : l.rows; }
std::uint64_t opCols(const Layout& l, std::int32_t trans) { return trans == CUBLAS_OP_T ? l.rows : l.cols; }

const char* check(const Desc* d, const Layout* a, const Layout* b, const Layout* c) {
  if (!d || !a || !b || !c) return "a null descriptor";
  if (d->compute != CUBLAS_COMPUTE_32F || d->scale != CUDA_R_32F) return "not f32 compute and scaling";
  for (const Layout* l : {a, b, c}) {
    if (l->ld < static_cast<std::int64_t>(l->rows)) return "a leading dimension below the rows";
    if (l->type != a->type) return "mixed element types";
    if (l->batch != c->batch) return "batch counts differ";
  }
  if (opRows(*a, d->transA) != c->rows) return "op(A)'s rows are not C's";
  if (opCols(*b, d->transB) != c->cols) return "op(B)'s columns are not C's";
  if (opCols(*a, d->transA) != opRows(*b, d->transB)) return "op(A)'s columns are not op(B)'s rows";
  return nullptr;
}

}  // namespace

extern "C" {

BlasStatus cublasLtCreate(BlasHandle* handle) {
  static const bool reporting = [] {
    const char* on = std::getenv("FAKE_CUBLASLT_REPORT");
    return on && std::strcmp(on, "1") == 0 && std::atexit(report) == 0;
  }();
  (void)reporting;
  *handle = reinterpret_cast<BlasHandle>(make<int>());
  return CUBLAS_STATUS_SUCCESS;
}
BlasStatus cublasLtDestroy(BlasHandle handle) { return drop(reinterpret_cast<int*>(handle)); }
const char* cublasLtGetStatusName(BlasStatus status) {
  return status == kInvalid ? "CUBLAS_STATUS_INVALID_VALUE" : status == 0 ? "CUBLAS_STATUS_SUCCESS" : nullptr;
}

BlasStatus cublasLtMatmulDescCreate(BlasMatmulDesc* desc, int computeType, int scaleType) {
  Desc* d = make<Desc>();
  d->compute = computeType;
  d->scale = scaleType;
  *desc = reinterpret_cast<BlasMatmulDesc>(d);
  return CUBLAS_STATUS_SUCCESS;
}
BlasStatus cublasLtMatmulDescDestroy(BlasMatmulDesc desc) { return drop(reinterpret_cast<Desc*>(desc)); }
BlasStatus cublasLtMatmulDescSetAttribute(BlasMatmulDesc desc, int attribute, const void* value, std::size_t bytes) {
  auto* d = reinterpret_cast<Desc*>(desc);
  if (bytes != sizeof(std::int32_t)) return reject("a transpose attribute not of int32_t");
  if (attribute == CUBLASLT_MATMUL_DESC_TRANSA) std::memcpy(&d->transA, value, bytes);
  else if (attribute == CUBLASLT_MATMUL_DESC_TRANSB) std::memcpy(&d->transB, value, bytes);
  else return reject("an unexpected matmul attribute");
  return CUBLAS_STATUS_SUCCESS;
}

BlasStatus cublasLtMatrixLayoutCreate(BlasLayout* layout, int type, std::uint64_t rows, std::uint64_t cols,
                                      std::int64_t ld) {
  if (type != CUDA_R_32F && type != CUDA_R_16BF && type != CUDA_R_16F) return reject("an unexpected element type");
  Layout* l = make<Layout>();
  *l = Layout{type, rows, cols, ld};
  *layout = reinterpret_cast<BlasLayout>(l);
  return CUBLAS_STATUS_SUCCESS;
}
BlasStatus cublasLtMatrixLayoutDestroy(BlasLayout layout) { return drop(reinterpret_cast<Layout*>(layout)); }
BlasStatus cublasLtMatrixLayoutSetAttribute(BlasLayout layout, int attribute, const void* value, std::size_t bytes) {
  auto* l = reinterpret_cast<Layout*>(layout);
  if (attribute == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT && bytes == sizeof l->batch) std::memcpy(&l->batch, value, bytes);
  else if (attribute == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET && bytes == sizeof l->stride)
    std::memcpy(&l->stride, value, bytes);
  else return reject("an unexpected layout attribute or size");
  return CUBLAS_STATUS_SUCCESS;
}

BlasStatus cublasLtMatmulPreferenceCreate(BlasPreference* preference) {
  *preference = reinterpret_cast<BlasPreference>(make<Preference>());
  return CUBLAS_STATUS_SUCCESS;
}
BlasStatus cublasLtMatmulPreferenceDestroy(BlasPreference preference) {
  return drop(reinterpret_cast<Preference*>(preference));
}
BlasStatus cublasLtMatmulPreferenceSetAttribute(BlasPreference preference, int attribute, const void* value,
                                                std::size_t bytes) {
  if (attribute != CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES || bytes != sizeof(std::uint64_t))
    return reject("an unexpected preference");
  std::memcpy(&reinterpret_cast<Preference*>(preference)->workspace, value, bytes);
  return CUBLAS_STATUS_SUCCESS;
}

BlasStatus cublasLtMatmulAlgoGetHeuristic(BlasHandle, BlasMatmulDesc desc, BlasLayout a, BlasLayout b, BlasLayout c,
                                          BlasLayout d, BlasPreference preference, int requested,
                                          BlasHeuristicResult* results, int* returned) {
  if (c != d) return reject("D is not C");
  if (const char* why = check(reinterpret_cast<Desc*>(desc), reinterpret_cast<Layout*>(a),
                              reinterpret_cast<Layout*>(b), reinterpret_cast<Layout*>(c)))
    return reject(why);
  if (requested < 1 || !preference) return reject("no room for a result");
  ++counters().heuristics;
  // kAlgorithms candidates, as many as asked for: the device times them.
  int n = std::min(requested, kAlgorithms);
  for (int i = 0; i < n; ++i) {
    std::memset(&results[i], 0, sizeof results[i]);
    results[i].algo.data[0] = 0x11a1;  // what cublasLtMatmul checks it was given
    results[i].algo.data[1] = static_cast<std::uint64_t>(i);
    results[i].workspaceSize = 1 << 20;
  }
  *returned = n;
  return CUBLAS_STATUS_SUCCESS;
}

BlasStatus cublasLtMatmul(BlasHandle, BlasMatmulDesc desc, const void* alpha, const void* a, BlasLayout aLayout,
                          const void* b, BlasLayout bLayout, const void* beta, const void* c, BlasLayout cLayout,
                          void* d, BlasLayout dLayout, const BlasAlgo* algo, void* workspace, std::size_t workspaceBytes,
                          CUstream) {
  if (const char* why = check(reinterpret_cast<Desc*>(desc), reinterpret_cast<Layout*>(aLayout),
                              reinterpret_cast<Layout*>(bLayout), reinterpret_cast<Layout*>(cLayout)))
    return reject(why);
  if (cLayout != dLayout || c != d) return reject("D is not C");
  if (!a || !b || !d) return reject("a null matrix");
  if (!alpha || !beta || *static_cast<const float*>(alpha) != 1.0f || *static_cast<const float*>(beta) != 0.0f)
    return reject("alpha is not 1 or beta not 0");
  if (!algo || algo->data[0] != 0x11a1 || algo->data[1] >= kAlgorithms)
    return reject("an algorithm not from the heuristic");
  if (!workspace || workspaceBytes < (1 << 20)) return reject("less workspace than the algorithm needs");
  ++counters().products;
  ++counters().byAlgorithm[algo->data[1]];
  // FAKE_CUBLASLT_DELAYS_MS=a,b,c: candidate i takes that long (the
  // device's timing must keep the fastest).
  if (const char* delays = std::getenv("FAKE_CUBLASLT_DELAYS_MS")) {
    std::string list = delays;
    for (std::uint64_t i = 0; i < algo->data[1] && list.find(',') != std::string::npos; ++i)
      list = list.substr(list.find(',') + 1);
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<long>(std::atof(list.c_str()) * 1000)));
  }
  return CUBLAS_STATUS_SUCCESS;
}

// How many products ran with each candidate (the tests' view).
void fake_cublaslt_algorithm_counts(long* counts) {
  for (int i = 0; i < kAlgorithms; ++i) counts[i] = counters().byAlgorithm[i];
}

}  // extern "C"
