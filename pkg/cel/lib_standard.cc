// CEL's operators, size() and conversions, with its overflow and division errors.

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>

#include "pkg/cel/library.h"

namespace berth::cel::lib {
namespace {

// A double as CEL's string() shows it (Go's shortest %g): 1.5, 1e+06, 1.234567e+06, NaN, +Inf.
std::string FormatDouble(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  if (d == 0) return std::signbit(d) ? "-0" : "0";
  char buf[64];
  int prec = 1;
  for (; prec <= 17; ++prec) {
    snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  // buf is [-]D.DDDDe[+-]XX with `prec` significant digits.
  std::string s(buf);
  const bool neg = s[0] == '-';
  if (neg) s.erase(0, 1);
  const size_t e = s.find('e');
  std::string digits = s.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const int exp = std::atoi(s.c_str() + e + 1);
  std::string out;
  // Go's shortest %g switches to an exponent outside [1e-4, 1e6).
  if (exp < -4 || exp >= 6) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  } else if (exp < 0) {
    out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
    out = digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0');
  } else {
    out = digits.substr(0, static_cast<size_t>(exp) + 1) + "." +
          digits.substr(static_cast<size_t>(exp) + 1);
  }
  return neg ? "-" + out : out;
}

// ---- arithmetic
Value AddInt(const Args& a, EvalBudget&) {
  int64_t r;
  if (__builtin_add_overflow(I(a[0]), I(a[1]), &r)) return IntOverflow();
  return Value::Int(r);
}
Value SubInt(const Args& a, EvalBudget&) {
  int64_t r;
  if (__builtin_sub_overflow(I(a[0]), I(a[1]), &r)) return IntOverflow();
  return Value::Int(r);
}
Value MulInt(const Args& a, EvalBudget&) {
  int64_t r;
  if (__builtin_mul_overflow(I(a[0]), I(a[1]), &r)) return IntOverflow();
  return Value::Int(r);
}
Value DivInt(const Args& a, EvalBudget&) {
  if (I(a[1]) == 0) return Err("division by zero");
  if (I(a[0]) == std::numeric_limits<int64_t>::min() && I(a[1]) == -1) return IntOverflow();
  return Value::Int(I(a[0]) / I(a[1]));
}
Value ModInt(const Args& a, EvalBudget&) {
  if (I(a[1]) == 0) return Err("modulus by zero");
  if (I(a[0]) == std::numeric_limits<int64_t>::min() && I(a[1]) == -1) return IntOverflow();
  return Value::Int(I(a[0]) % I(a[1]));
}
Value NegInt(const Args& a, EvalBudget&) {
  if (I(a[0]) == std::numeric_limits<int64_t>::min()) return IntOverflow();
  return Value::Int(-I(a[0]));
}
Value AddUint(const Args& a, EvalBudget&) {
  uint64_t r;
  if (__builtin_add_overflow(U(a[0]), U(a[1]), &r)) return UintOverflow();
  return Value::Uint(r);
}
Value SubUint(const Args& a, EvalBudget&) {
  uint64_t r;
  if (__builtin_sub_overflow(U(a[0]), U(a[1]), &r)) return UintOverflow();
  return Value::Uint(r);
}
Value MulUint(const Args& a, EvalBudget&) {
  uint64_t r;
  if (__builtin_mul_overflow(U(a[0]), U(a[1]), &r)) return UintOverflow();
  return Value::Uint(r);
}
Value DivUint(const Args& a, EvalBudget&) {
  if (U(a[1]) == 0) return Err("division by zero");
  return Value::Uint(U(a[0]) / U(a[1]));
}
Value ModUint(const Args& a, EvalBudget&) {
  if (U(a[1]) == 0) return Err("modulus by zero");
  return Value::Uint(U(a[0]) % U(a[1]));
}
Value AddDouble(const Args& a, EvalBudget&) { return Value::Double(D(a[0]) + D(a[1])); }
Value SubDouble(const Args& a, EvalBudget&) { return Value::Double(D(a[0]) - D(a[1])); }
Value MulDouble(const Args& a, EvalBudget&) { return Value::Double(D(a[0]) * D(a[1])); }
Value DivDouble(const Args& a, EvalBudget&) { return Value::Double(D(a[0]) / D(a[1])); }
Value NegDouble(const Args& a, EvalBudget&) { return Value::Double(-D(a[0])); }
Value AddString(const Args& a, EvalBudget& b) { return MakeString(S(a[0]) + S(a[1]), b); }
Value AddBytes(const Args& a, EvalBudget& b) {
  if (!b.Allocate(S(a[0]).size() + S(a[1]).size())) return Err(kMemoryLimitMessage);
  return Value::Bytes(S(a[0]) + S(a[1]));
}
Value AddList(const Args& a, EvalBudget& b) {
  std::vector<Value> out = a[0].Items();
  out.insert(out.end(), a[1].Items().begin(), a[1].Items().end());
  return MakeList(std::move(out), b);
}
Value Not(const Args& a, EvalBudget&) { return Value::Bool(!a[0].As<bool>()); }

// ---- equality, ordering, membership
Value Eq(const Args& a, EvalBudget&) { return Value::Bool(Equal(a[0], a[1])); }
Value Ne(const Args& a, EvalBudget&) { return Value::Bool(!Equal(a[0], a[1])); }
template <int kOp>
Value Rel(const Args& a, EvalBudget&) {
  bool ordered = false;
  const int c = Compare(a[0], a[1], &ordered);
  if (!ordered) {
    if (a[0].Is<double>() || a[1].Is<double>()) return Err("NaN values cannot be ordered");
    return Err("no such overload");
  }
  switch (kOp) {
    case 0:
      return Value::Bool(c < 0);
    case 1:
      return Value::Bool(c <= 0);
    case 2:
      return Value::Bool(c > 0);
    default:
      return Value::Bool(c >= 0);
  }
}
Value InList(const Args& a, EvalBudget&) {
  for (const Value& v : a[1].Items()) {
    if (Equal(a[0], v)) return Value::Bool(true);
  }
  return Value::Bool(false);
}
Value InMap(const Args& a, EvalBudget&) { return Value::Bool(MapFind(a[1], a[0]) != nullptr); }

// ---- index (list and map lookups; the evaluator handles the device's defaulting maps)
Value IndexList(const Args& a, EvalBudget&) {
  const auto& items = a[0].Items();
  int64_t i = 0;
  const Value& idx = a[1];
  if (idx.Is<int64_t>()) {
    i = I(idx);
  } else if (idx.Is<uint64_t>()) {
    if (U(idx) > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Err("index out of range");
    }
    i = static_cast<int64_t>(U(idx));
  } else if (idx.Is<double>() && std::trunc(D(idx)) == D(idx) && std::abs(D(idx)) < 9.2e18) {
    i = static_cast<int64_t>(D(idx));
  } else {
    return Err("unsupported index type '" + idx.TypeName() + "' in list");
  }
  if (i < 0 || static_cast<uint64_t>(i) >= items.size()) {
    return Err("index out of bounds: " + std::to_string(i));
  }
  return items[static_cast<size_t>(i)];
}
Value IndexMap(const Args& a, EvalBudget&) {
  if (const Value* v = MapFind(a[0], a[1])) return *v;
  if (!a[1].Is<bool>() && !a[1].Is<int64_t>() && !a[1].Is<uint64_t>() && !a[1].Is<StringValue>() &&
      !a[1].Is<double>()) {
    return Err("unsupported key type");
  }
  return Err("no such key: " + Describe(a[1]));
}

// ---- size and conversions
Value SizeString(const Args& a, EvalBudget&) {
  return Value::Int(a[0].As<StringValue>().code_points);
}
Value SizeBytes(const Args& a, EvalBudget&) {
  return Value::Int(static_cast<int64_t>(S(a[0]).size()));
}
Value SizeList(const Args& a, EvalBudget&) {
  return Value::Int(static_cast<int64_t>(a[0].Items().size()));
}
Value SizeMap(const Args& a, EvalBudget&) {
  return Value::Int(static_cast<int64_t>(a[0].Entries().size()));
}

Value Identity(const Args& a, EvalBudget&) { return a[0]; }
Value TypeOf(const Args& a, EvalBudget&) { return Value::Type(a[0].TypeName()); }

Value IntFromUint(const Args& a, EvalBudget&) {
  if (U(a[0]) > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return IntOverflow();
  return Value::Int(static_cast<int64_t>(U(a[0])));
}
Value IntFromDouble(const Args& a, EvalBudget&) {
  const double d = D(a[0]);
  if (std::isnan(d) || d <= -9223372036854775808.0 || d >= 9223372036854775807.0) {
    return IntOverflow();
  }
  return Value::Int(static_cast<int64_t>(d));
}
Value IntFromString(const Args& a, EvalBudget&) {
  const std::string& s = S(a[0]);
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  const bool syntax =
      s.empty() || end != s.c_str() + s.size() || std::isspace(static_cast<unsigned char>(s[0]));
  if (syntax || errno == ERANGE) return Err("type conversion error from 'string' to 'int'");
  return Value::Int(v);
}
Value UintFromInt(const Args& a, EvalBudget&) {
  if (I(a[0]) < 0) return UintOverflow();
  return Value::Uint(static_cast<uint64_t>(I(a[0])));
}
Value UintFromDouble(const Args& a, EvalBudget&) {
  const double d = D(a[0]);
  if (std::isnan(d) || d < 0 || d >= 18446744073709551615.0) return UintOverflow();
  return Value::Uint(static_cast<uint64_t>(d));
}
Value UintFromString(const Args& a, EvalBudget&) {
  const std::string& s = S(a[0]);
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || end != s.c_str() + s.size() || s[0] == '-' || s[0] == '+' ||
      std::isspace(static_cast<unsigned char>(s[0]))) {
    return Err("type conversion error from 'string' to 'uint'");
  }
  if (errno == ERANGE) return Err("type conversion error from 'string' to 'uint'");
  return Value::Uint(v);
}
Value DoubleFromInt(const Args& a, EvalBudget&) {
  return Value::Double(static_cast<double>(I(a[0])));
}
Value DoubleFromUint(const Args& a, EvalBudget&) {
  return Value::Double(static_cast<double>(U(a[0])));
}
Value DoubleFromString(const Args& a, EvalBudget&) {
  const std::string& s = S(a[0]);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  // Go's ParseFloat refuses what overflows to an infinity (a written "inf" is fine).
  const bool overflow = errno == ERANGE && std::isinf(v);
  if (s.empty() || end != s.c_str() + s.size() || std::isspace(static_cast<unsigned char>(s[0])) ||
      overflow) {
    return Err("type conversion error from 'string' to 'double'");
  }
  return Value::Double(v);
}
Value StringFromInt(const Args& a, EvalBudget&) { return Value::String(std::to_string(I(a[0]))); }
Value StringFromUint(const Args& a, EvalBudget&) { return Value::String(std::to_string(U(a[0]))); }
Value StringFromDouble(const Args& a, EvalBudget&) { return Value::String(FormatDouble(D(a[0]))); }
Value StringFromBool(const Args& a, EvalBudget&) {
  return Value::String(a[0].As<bool>() ? "true" : "false");
}
Value StringFromBytes(const Args& a, EvalBudget&) {
  if (!ValidUtf8(S(a[0]))) return Err("invalid UTF-8 in bytes, cannot convert to string");
  return Value::String(S(a[0]));
}
Value BytesFromString(const Args& a, EvalBudget&) { return Value::Bytes(S(a[0])); }
Value BoolFromString(const Args& a, EvalBudget&) {
  static const std::set<std::string> kTrue = {"1", "t", "T", "TRUE", "true", "True"};
  static const std::set<std::string> kFalse = {"0", "f", "F", "FALSE", "false", "False"};
  if (kTrue.count(S(a[0])) != 0) return Value::Bool(true);
  if (kFalse.count(S(a[0])) != 0) return Value::Bool(false);
  return Err("type conversion error from 'string' to 'bool'");
}

}  // namespace

void RegisterStandard(Registry& r) {
  r.Global("logical_not", "!_", {kBool}, kBool, Not);
  r.Global("negate_int64", "-_", {kInt}, kInt, NegInt);
  r.Global("negate_double", "-_", {kDouble}, kDouble, NegDouble);
  r.Global("equals", "_==_", {kA, kA}, kBool, Eq);
  r.Global("not_equals", "_!=_", {kA, kA}, kBool, Ne);
  const std::vector<std::pair<TypePtr, TypePtr>> ordered = {
      {kBool, kBool},     {kInt, kInt},     {kUint, kUint},  {kDouble, kDouble},
      {kString, kString}, {kBytes, kBytes}, {kInt, kUint},   {kInt, kDouble},
      {kUint, kInt},      {kUint, kDouble}, {kDouble, kInt}, {kDouble, kUint}};
  for (const auto& [x, y] : ordered) {
    r.Global("less", "_<_", {x, y}, kBool, Rel<0>);
    r.Global("less_equals", "_<=_", {x, y}, kBool, Rel<1>);
    r.Global("greater", "_>_", {x, y}, kBool, Rel<2>);
    r.Global("greater_equals", "_>=_", {x, y}, kBool, Rel<3>);
  }
  r.Global("add_int64", "_+_", {kInt, kInt}, kInt, AddInt);
  r.Global("add_uint64", "_+_", {kUint, kUint}, kUint, AddUint);
  r.Global("add_double", "_+_", {kDouble, kDouble}, kDouble, AddDouble);
  r.Global("add_string", "_+_", {kString, kString}, kString, AddString);
  r.Global("add_bytes", "_+_", {kBytes, kBytes}, kBytes, AddBytes);
  r.Global("add_list", "_+_", {kListA, kListA}, kListA, AddList);
  r.Global("subtract_int64", "_-_", {kInt, kInt}, kInt, SubInt);
  r.Global("subtract_uint64", "_-_", {kUint, kUint}, kUint, SubUint);
  r.Global("subtract_double", "_-_", {kDouble, kDouble}, kDouble, SubDouble);
  r.Global("multiply_int64", "_*_", {kInt, kInt}, kInt, MulInt);
  r.Global("multiply_uint64", "_*_", {kUint, kUint}, kUint, MulUint);
  r.Global("multiply_double", "_*_", {kDouble, kDouble}, kDouble, MulDouble);
  r.Global("divide_int64", "_/_", {kInt, kInt}, kInt, DivInt);
  r.Global("divide_uint64", "_/_", {kUint, kUint}, kUint, DivUint);
  r.Global("divide_double", "_/_", {kDouble, kDouble}, kDouble, DivDouble);
  r.Global("modulo_int64", "_%_", {kInt, kInt}, kInt, ModInt);
  r.Global("modulo_uint64", "_%_", {kUint, kUint}, kUint, ModUint);
  r.Global("index_list", "_[_]", {kListA, kInt}, kA, IndexList);
  r.Global("index_map", "_[_]", {kMapAB, kA}, kB, IndexMap);
  r.Global("in_list", "@in", {kA, kListA}, kBool, InList);
  r.Global("in_map", "@in", {kA, kMapAB}, kBool, InMap);

  for (bool member : {false, true}) {
    r.Add("size_string", "size", member, {kString}, kInt, SizeString);
    r.Add("size_bytes", "size", member, {kBytes}, kInt, SizeBytes);
    r.Add("size_list", "size", member, {kListA}, kInt, SizeList);
    r.Add("size_map", "size", member, {kMapAB}, kInt, SizeMap);
  }
  r.Global("int64_to_int64", "int", {kInt}, kInt, Identity);
  r.Global("uint64_to_int64", "int", {kUint}, kInt, IntFromUint);
  r.Global("double_to_int64", "int", {kDouble}, kInt, IntFromDouble);
  r.Global("string_to_int64", "int", {kString}, kInt, IntFromString);
  r.Global("uint64_to_uint64", "uint", {kUint}, kUint, Identity);
  r.Global("int64_to_uint64", "uint", {kInt}, kUint, UintFromInt);
  r.Global("double_to_uint64", "uint", {kDouble}, kUint, UintFromDouble);
  r.Global("string_to_uint64", "uint", {kString}, kUint, UintFromString);
  r.Global("double_to_double", "double", {kDouble}, kDouble, Identity);
  r.Global("int64_to_double", "double", {kInt}, kDouble, DoubleFromInt);
  r.Global("uint64_to_double", "double", {kUint}, kDouble, DoubleFromUint);
  r.Global("string_to_double", "double", {kString}, kDouble, DoubleFromString);
  r.Global("string_to_string", "string", {kString}, kString, Identity);
  r.Global("int64_to_string", "string", {kInt}, kString, StringFromInt);
  r.Global("uint64_to_string", "string", {kUint}, kString, StringFromUint);
  r.Global("double_to_string", "string", {kDouble}, kString, StringFromDouble);
  r.Global("bool_to_string", "string", {kBool}, kString, StringFromBool);
  r.Global("bytes_to_string", "string", {kBytes}, kString, StringFromBytes);
  r.Global("bytes_to_bytes", "bytes", {kBytes}, kBytes, Identity);
  r.Global("string_to_bytes", "bytes", {kString}, kBytes, BytesFromString);
  r.Global("bool_to_bool", "bool", {kBool}, kBool, Identity);
  r.Global("string_to_bool", "bool", {kString}, kBool, BoolFromString);
  r.Global("to_dyn", "dyn", {kA}, kDyn, Identity);
  r.Global("type", "type", {kA}, kTypeT, TypeOf);
}

}  // namespace berth::cel::lib
