// The part of libxgboost's C API that learned_schedule_model.cc calls, defined here as forwarders
// that dlopen the library on their first call. Why: linked normally, libxgboost (with libgomp and
// libdmlc) is loaded and relocated at every process start, ~9 ms of a `fusetune query` that never
// trains a model (issue 14: `query` in <= 50 ms). fusetune_tuner links this file instead of
// libxgboost, so callers keep using <xgboost/c_api.h> unchanged. If the library cannot be loaded,
// every call fails with -1 and XGBGetLastError() says why, which the model's callers report.
#include <dlfcn.h>

#include <mutex>
#include <string>

#include <xgboost/c_api.h>

#ifndef FUSETUNE_XGBOOST_SONAME
#error "FUSETUNE_XGBOOST_SONAME (the library's soname) is set by server/CMakeLists.txt"
#endif

namespace {

// Why the library or one of its functions is unavailable; written once, by the first failure, so
// the pointer XGBGetLastError() returns stays valid.
std::mutex error_mutex;
std::string load_error;

void SetLoadError(const std::string& what) {
  std::lock_guard<std::mutex> lock(error_mutex);
  if (load_error.empty()) load_error = what + " (Debian package libxgboost0)";
}

const char* LoadError() {
  std::lock_guard<std::mutex> lock(error_mutex);
  return load_error.empty() ? nullptr : load_error.c_str();
}

void* Library() {
  static void* const handle = [] {
    void* h = dlopen(FUSETUNE_XGBOOST_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) SetLoadError(std::string("cannot load ") + dlerror());
    return h;
  }();
  return handle;
}

template <typename Function>
Function* Resolve(const char* name) {
  void* handle = Library();
  if (handle == nullptr) return nullptr;
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    SetLoadError(std::string(FUSETUNE_XGBOOST_SONAME) + " has no " + name);
  }
  return reinterpret_cast<Function*>(symbol);
}

}  // namespace

// Each forwarder resolves its function once, on its first call (thread-safe static init).
#define FUSETUNE_XGB_FORWARD(name, params, args)                        \
  int name params {                                                     \
    static decltype(&name) const real = Resolve<decltype(name)>(#name); \
    return real == nullptr ? -1 : real args;                            \
  }

extern "C" {

const char* XGBGetLastError() {
  static decltype(&XGBGetLastError) const real =
      Resolve<decltype(XGBGetLastError)>("XGBGetLastError");
  const char* load = LoadError();
  if (load != nullptr || real == nullptr) return load != nullptr ? load : "libxgboost not loaded";
  return real();
}

FUSETUNE_XGB_FORWARD(XGDMatrixCreateFromMat,
                     (const float* data, bst_ulong nrow, bst_ulong ncol, float missing,
                      DMatrixHandle* out),
                     (data, nrow, ncol, missing, out))
FUSETUNE_XGB_FORWARD(XGDMatrixFree, (DMatrixHandle handle), (handle))
FUSETUNE_XGB_FORWARD(XGDMatrixSetFloatInfo,
                     (DMatrixHandle handle, const char* field, const float* array, bst_ulong len),
                     (handle, field, array, len))
FUSETUNE_XGB_FORWARD(XGDMatrixSetUIntInfo,
                     (DMatrixHandle handle, const char* field, const unsigned* array,
                      bst_ulong len),
                     (handle, field, array, len))
FUSETUNE_XGB_FORWARD(XGBoosterCreate,
                     (const DMatrixHandle dmats[], bst_ulong len, BoosterHandle* out),
                     (dmats, len, out))
FUSETUNE_XGB_FORWARD(XGBoosterFree, (BoosterHandle handle), (handle))
FUSETUNE_XGB_FORWARD(XGBoosterSetParam, (BoosterHandle handle, const char* name, const char* value),
                     (handle, name, value))
FUSETUNE_XGB_FORWARD(XGBoosterUpdateOneIter, (BoosterHandle handle, int iter, DMatrixHandle dtrain),
                     (handle, iter, dtrain))
FUSETUNE_XGB_FORWARD(XGBoosterPredict,
                     (BoosterHandle handle, DMatrixHandle dmat, int option_mask,
                      unsigned ntree_limit, int training, bst_ulong* out_len,
                      const float** out_result),
                     (handle, dmat, option_mask, ntree_limit, training, out_len, out_result))

}  // extern "C"
