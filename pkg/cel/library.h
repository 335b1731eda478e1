#ifndef BERTH_PKG_CEL_LIBRARY_H_
#define BERTH_PKG_CEL_LIBRARY_H_

// What the function libraries (lib_*.cc) share: the overload registry they fill, the types
// their signatures name and small helpers over values. Internal to pkg/cel.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pkg/cel/functions.h"

namespace berth::cel::lib {

using Args = std::vector<Value>;
using Impl = Value (*)(const Args&, EvalBudget&);

extern const TypePtr kDyn, kBool, kInt, kUint, kDouble, kString, kBytes, kNull, kQuantity, kSemver,
    kTypeT, kA, kB, kListA, kListString, kListDyn, kMapAB;

// Every overload of the environment, built once and never changed after.
struct Registry {
  std::vector<std::unique_ptr<Overload>> all;
  std::map<std::string, std::vector<const Overload*>, std::less<>> by_name;

  void Add(const char* id, const std::string& fn, bool member, std::vector<TypePtr> params,
           TypePtr result, Impl impl);
  void Global(const char* id, const std::string& fn, std::vector<TypePtr> params, TypePtr result,
              Impl impl) {
    Add(id, fn, false, std::move(params), std::move(result), impl);
  }
  void Member(const char* id, const std::string& fn, std::vector<TypePtr> params, TypePtr result,
              Impl impl) {
    Add(id, fn, true, std::move(params), std::move(result), impl);
  }
};

// CEL's operators, size() and the conversions.
void RegisterStandard(Registry& r);
// String functions: CEL's own, the strings extension (v2) and the regex library.
void RegisterStrings(Registry& r);
// The Kubernetes lists library (v1), the lists extension (v3) and the sets extension.
void RegisterLists(Registry& r);
// The Kubernetes quantity and semver libraries.
void RegisterKubernetes(Registry& r);

Value Err(std::string message);
Value IntOverflow();
Value UintOverflow();
inline int64_t I(const Value& v) { return v.As<int64_t>(); }
inline uint64_t U(const Value& v) { return v.As<uint64_t>(); }
inline double D(const Value& v) { return v.As<double>(); }
inline const std::string& S(const Value& v) { return v.Str(); }

// Values whose size an expression controls are charged to the budget's memory bound.
Value MakeString(std::string s, EvalBudget& b);
Value MakeList(std::vector<Value> items, EvalBudget& b);

bool ValidUtf8(const std::string& s);

}  // namespace berth::cel::lib

#endif  // BERTH_PKG_CEL_LIBRARY_H_
