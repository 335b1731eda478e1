// Kubernetes' quantity and semver libraries.

#include <re2/re2.h>

#include <optional>
#include <string>

#include "pkg/api/quantity.h"
#include "pkg/cel/library.h"

namespace berth::cel::lib {
namespace {

// ---- quantity
// apimachinery's three refusals: the text's shape, its suffix, or its number.
std::string QuantityError(const std::string& text) {
  static const RE2 shape("[+-]?[0-9]*(\\.[0-9]*)?[eEinumkKMGTP]*[-+0-9]*");
  if (text.empty() || !RE2::FullMatch(text, shape)) {
    return "quantities must match the regular expression "
           "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
  }
  if (text.find_first_of("0123456789") == std::string::npos) {
    return "unable to parse numeric part of quantity";
  }
  return "unable to parse quantity's suffix";
}
Value QuantityOf(const Args& a, EvalBudget&) {
  api::Quantity q;
  if (!api::Quantity::TryParse(S(a[0]), &q, nullptr)) return Err(QuantityError(S(a[0])));
  return Value::Quantity(Decimal::FromQuantity(q));
}
Value IsQuantity(const Args& a, EvalBudget&) {
  api::Quantity q;
  return Value::Bool(api::Quantity::TryParse(S(a[0]), &q, nullptr));
}
const Decimal& Q(const Value& v) { return *v.As<QuantityValue>().q; }
Value QSign(const Args& a, EvalBudget&) { return Value::Int(Q(a[0]).Sign()); }
Value QGreater(const Args& a, EvalBudget&) { return Value::Bool(Q(a[0]).Compare(Q(a[1])) > 0); }
Value QLess(const Args& a, EvalBudget&) { return Value::Bool(Q(a[0]).Compare(Q(a[1])) < 0); }
Value QCompare(const Args& a, EvalBudget&) { return Value::Int(Q(a[0]).Compare(Q(a[1]))); }
Value QFloat(const Args& a, EvalBudget&) { return Value::Double(Q(a[0]).AsApproximateDouble()); }
Value QIsInteger(const Args& a, EvalBudget&) { return Value::Bool(Q(a[0]).AsInt64().has_value()); }
Value QAsInteger(const Args& a, EvalBudget&) {
  const auto v = Q(a[0]).AsInt64();
  if (!v) return Err("cannot convert value to integer");
  return Value::Int(*v);
}
Value QResult(std::optional<Decimal> d) {
  if (!d) return Err("quantity arithmetic needs more than 4096 digits");
  return Value::Quantity(std::move(*d));
}
Value QAdd(const Args& a, EvalBudget&) { return QResult(Q(a[0]).Add(Q(a[1]))); }
Value QAddInt(const Args& a, EvalBudget&) {
  return QResult(Q(a[0]).Add(Decimal::FromInt(I(a[1]))));
}
Value QSub(const Args& a, EvalBudget&) { return QResult(Q(a[0]).Sub(Q(a[1]))); }
Value QSubInt(const Args& a, EvalBudget&) {
  return QResult(Q(a[0]).Sub(Decimal::FromInt(I(a[1]))));
}

// ---- semver
Value SemverOf(const std::string& s, bool normalize) {
  Semver v;
  std::string error;
  if (!Semver::Parse(s, normalize, &v, &error)) return Err(error);
  return Value::SemverOf(std::move(v));
}
Value SemverParse(const Args& a, EvalBudget&) { return SemverOf(S(a[0]), false); }
Value SemverParseNorm(const Args& a, EvalBudget&) { return SemverOf(S(a[0]), a[1].As<bool>()); }
Value IsSemver(const Args& a, EvalBudget&) {
  return Value::Bool(!SemverOf(S(a[0]), false).IsError());
}
Value IsSemverNorm(const Args& a, EvalBudget&) {
  return Value::Bool(!SemverOf(S(a[0]), a[1].As<bool>()).IsError());
}
const Semver& V(const Value& v) { return *v.As<SemverValue>().v; }
Value VGreater(const Args& a, EvalBudget&) { return Value::Bool(V(a[0]).Compare(V(a[1])) > 0); }
Value VLess(const Args& a, EvalBudget&) { return Value::Bool(V(a[0]).Compare(V(a[1])) < 0); }
Value VCompare(const Args& a, EvalBudget&) { return Value::Int(V(a[0]).Compare(V(a[1]))); }
Value VMajor(const Args& a, EvalBudget&) { return Value::Int(static_cast<int64_t>(V(a[0]).major)); }
Value VMinor(const Args& a, EvalBudget&) { return Value::Int(static_cast<int64_t>(V(a[0]).minor)); }
Value VPatch(const Args& a, EvalBudget&) { return Value::Int(static_cast<int64_t>(V(a[0]).patch)); }

}  // namespace

void RegisterKubernetes(Registry& r) {
  r.Global("string_to_quantity", "quantity", {kString}, kQuantity, QuantityOf);
  r.Global("is_quantity_string", "isQuantity", {kString}, kBool, IsQuantity);
  r.Global("quantity_sign", "sign", {kQuantity}, kInt, QSign);
  r.Member("quantity_is_greater_than", "isGreaterThan", {kQuantity, kQuantity}, kBool, QGreater);
  r.Member("quantity_is_less_than", "isLessThan", {kQuantity, kQuantity}, kBool, QLess);
  r.Member("quantity_compare_to", "compareTo", {kQuantity, kQuantity}, kInt, QCompare);
  r.Member("quantity_get_float", "asApproximateFloat", {kQuantity}, kDouble, QFloat);
  r.Member("quantity_get_int", "asInteger", {kQuantity}, kInt, QAsInteger);
  r.Member("quantity_is_integer", "isInteger", {kQuantity}, kBool, QIsInteger);
  r.Member("quantity_add", "add", {kQuantity, kQuantity}, kQuantity, QAdd);
  r.Member("quantity_add_int", "add", {kQuantity, kInt}, kQuantity, QAddInt);
  r.Member("quantity_sub", "sub", {kQuantity, kQuantity}, kQuantity, QSub);
  r.Member("quantity_sub_int", "sub", {kQuantity, kInt}, kQuantity, QSubInt);

  r.Global("string_to_semver", "semver", {kString}, kSemver, SemverParse);
  r.Global("string_bool_to_semver", "semver", {kString, kBool}, kSemver, SemverParseNorm);
  r.Global("is_semver_string", "isSemver", {kString}, kBool, IsSemver);
  r.Global("is_semver_string_bool", "isSemver", {kString, kBool}, kBool, IsSemverNorm);
  r.Member("semver_is_greater_than", "isGreaterThan", {kSemver, kSemver}, kBool, VGreater);
  r.Member("semver_is_less_than", "isLessThan", {kSemver, kSemver}, kBool, VLess);
  r.Member("semver_compare_to", "compareTo", {kSemver, kSemver}, kInt, VCompare);
  r.Member("semver_major", "major", {kSemver}, kInt, VMajor);
  r.Member("semver_minor", "minor", {kSemver}, kInt, VMinor);
  r.Member("semver_patch", "patch", {kSemver}, kInt, VPatch);
}

}  // namespace berth::cel::lib
