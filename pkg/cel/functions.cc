#include "pkg/cel/functions.h"

#include <re2/re2.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <set>

namespace berth::cel {

bool EvalBudget::Charge(uint64_t units) {
  cost_ = units > std::numeric_limits<uint64_t>::max() - cost_
              ? std::numeric_limits<uint64_t>::max()
              : cost_ + units;
  if (cost_ > limit_) exceeded_ = true;
  return !exceeded_;
}

bool EvalBudget::Allocate(uint64_t bytes) {
  allocated_ += bytes;
  if (allocated_ > kMaxAllocatedBytes) out_of_memory_ = true;
  return !out_of_memory_;
}

const char* EvalBudget::cancellation() const {
  return exceeded_ ? kCostLimitMessage : kMemoryLimitMessage;
}

namespace {

using Args = std::vector<Value>;

TypePtr T(TypeKind k) { return Type::Of(k); }
const TypePtr kDyn = T(TypeKind::kDyn);
const TypePtr kBool = T(TypeKind::kBool);
const TypePtr kInt = T(TypeKind::kInt);
const TypePtr kUint = T(TypeKind::kUint);
const TypePtr kDouble = T(TypeKind::kDouble);
const TypePtr kString = T(TypeKind::kString);
const TypePtr kBytes = T(TypeKind::kBytes);
const TypePtr kNull = T(TypeKind::kNull);
const TypePtr kQuantity = T(TypeKind::kQuantity);
const TypePtr kSemver = T(TypeKind::kSemver);
const TypePtr kTypeT = T(TypeKind::kType);
const TypePtr kA = Type::Param('A');
const TypePtr kB = Type::Param('B');
const TypePtr kListA = Type::ListOf(kA);
const TypePtr kListString = Type::ListOf(kString);
const TypePtr kListDyn = Type::ListOf(kDyn);
const TypePtr kMapAB = Type::MapOf(kA, kB);

Value Err(std::string m) { return Value::Error(std::move(m)); }
Value IntOverflow() { return Err("integer overflow"); }
Value UintOverflow() { return Err("unsigned integer overflow"); }

int64_t I(const Value& v) { return v.As<int64_t>(); }
uint64_t U(const Value& v) { return v.As<uint64_t>(); }
double D(const Value& v) { return v.As<double>(); }
const std::string& S(const Value& v) { return v.Str(); }

Value MakeString(std::string s, EvalBudget& b) {
  if (!b.Allocate(s.size())) return Err(kMemoryLimitMessage);
  return Value::String(std::move(s));
}
Value MakeList(std::vector<Value> items, EvalBudget& b) {
  if (!b.Allocate(items.size() * sizeof(Value))) return Err(kMemoryLimitMessage);
  return Value::List(std::move(items));
}

// ---- UTF-8 helpers: CEL string functions count code points.
std::vector<size_t> CodePointOffsets(const std::string& s) {
  std::vector<size_t> offs;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) offs.push_back(i);
  }
  offs.push_back(s.size());
  return offs;
}
int64_t CodePoints(const std::string& s) {
  return static_cast<int64_t>(CodePointOffsets(s).size() - 1);
}

bool ValidUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size() || (static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

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

// Substring search in linear time (Knuth-Morris-Pratt): std::string::find is quadratic on
// periodic inputs ("aaa...a".contains("aa...ab")), which an expression controls.
class Searcher {
 public:
  explicit Searcher(const std::string& needle) : needle_(needle), fail_(needle.size() + 1, 0) {
    size_t k = 0;
    for (size_t i = 1; i < needle.size(); ++i) {
      while (k > 0 && needle[i] != needle[k]) k = fail_[k];
      if (needle[i] == needle[k]) ++k;
      fail_[i + 1] = k;
    }
  }
  // The first occurrence at or after `from`, or npos.
  size_t Find(const std::string& hay, size_t from) const {
    if (needle_.empty()) return from <= hay.size() ? from : std::string::npos;
    size_t k = 0;
    for (size_t i = from; i < hay.size(); ++i) {
      while (k > 0 && hay[i] != needle_[k]) k = fail_[k];
      if (hay[i] == needle_[k]) ++k;
      if (k == needle_.size()) return i + 1 - k;
    }
    return std::string::npos;
  }

 private:
  const std::string& needle_;
  std::vector<size_t> fail_;
};

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

// ---- strings
Value Contains(const Args& a, EvalBudget&) {
  return Value::Bool(Searcher(S(a[1])).Find(S(a[0]), 0) != std::string::npos);
}
Value StartsWith(const Args& a, EvalBudget&) {
  return Value::Bool(S(a[0]).compare(0, S(a[1]).size(), S(a[1])) == 0 &&
                     S(a[0]).size() >= S(a[1]).size());
}
Value EndsWith(const Args& a, EvalBudget&) {
  const std::string& s = S(a[0]);
  const std::string& x = S(a[1]);
  return Value::Bool(s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0);
}

Value MatchesWith(const RE2& re, const Args& a) {
  return Value::Bool(RE2::PartialMatch(S(a[0]), re));
}
Value FindWith(const RE2& re, const Args& a) {
  re2::StringPiece match;
  if (!re.Match(S(a[0]), 0, S(a[0]).size(), RE2::UNANCHORED, &match, 1)) {
    return Value::String("");
  }
  return Value::String(std::string(match.data(), match.size()));
}
Value FindAllWith(const RE2& re, const Args& a, EvalBudget& b) {
  const std::string& s = S(a[0]);
  const int64_t n = a.size() > 2 ? I(a[2]) : -1;
  std::vector<Value> out;
  if (n == 0) return Value::List({});
  size_t pos = 0;
  size_t last_end = std::string::npos;
  while ((n < 0 || static_cast<int64_t>(out.size()) < n) && pos <= s.size()) {
    re2::StringPiece match;
    if (!re.Match(s, pos, s.size(), RE2::UNANCHORED, &match, 1)) break;
    const auto start = static_cast<size_t>(match.data() - s.data());
    const size_t end = start + match.size();
    // As Go's FindAllString: an empty match right after the previous match is skipped.
    if (!(match.empty() && start == last_end)) {
      out.push_back(Value::String(std::string(match.data(), match.size())));
      if (!b.Allocate(match.size() + sizeof(Value))) return Err(kMemoryLimitMessage);
    }
    last_end = end;
    if (end > pos) {
      pos = end;
    } else {
      // Step over one code point.
      ++pos;
      while (pos < s.size() && (static_cast<unsigned char>(s[pos]) & 0xC0) == 0x80) ++pos;
    }
  }
  return Value::List(std::move(out));
}
template <int kFn>
Value RegexFn(const Args& a, EvalBudget& b) {
  std::string error;
  const auto re = CompileRegex(S(a[1]), &error);
  if (!re) return Err(error);
  switch (kFn) {
    case 0:
      return MatchesWith(*re, a);
    case 1:
      return FindWith(*re, a);
    default:
      return FindAllWith(*re, a, b);
  }
}
Value Matches(const Args& a, EvalBudget& b) { return RegexFn<0>(a, b); }
Value Find(const Args& a, EvalBudget& b) { return RegexFn<1>(a, b); }
Value FindAll(const Args& a, EvalBudget& b) { return RegexFn<2>(a, b); }
Value FindAllLimit(const Args& a, EvalBudget& b) { return RegexFn<2>(a, b); }

Value CharAt(const Args& a, EvalBudget&) {
  // An ASCII string (as many code points as bytes) is indexed directly; charAt() costs one unit
  // in CEL whatever the length.
  if (a[0].As<StringValue>().code_points == static_cast<int64_t>(S(a[0]).size())) {
    const int64_t i = I(a[1]);
    const auto n = static_cast<int64_t>(S(a[0]).size());
    if (i < 0 || i > n) return Err("index out of range: " + std::to_string(i));
    if (i == n) return Value::String("");
    return Value::String(S(a[0]).substr(static_cast<size_t>(i), 1));
  }
  const auto offs = CodePointOffsets(S(a[0]));
  const int64_t i = I(a[1]);
  const auto n = static_cast<int64_t>(offs.size() - 1);
  if (i < 0 || i > n) return Err("index out of range: " + std::to_string(i));
  if (i == n) return Value::String("");
  return Value::String(
      S(a[0]).substr(offs[static_cast<size_t>(i)],
                     offs[static_cast<size_t>(i) + 1] - offs[static_cast<size_t>(i)]));
}
// Code-point index of a byte offset.
int64_t CpIndex(const std::vector<size_t>& offs, size_t byte) {
  return static_cast<int64_t>(std::lower_bound(offs.begin(), offs.end(), byte) - offs.begin());
}
// The strings extension's indexOf/lastIndexOf over code points: a negative offset is an error,
// an offset past the end finds nothing (the empty string is found at the clamped offset).
Value IndexOfImpl(const std::string& s, const std::string& sub, int64_t off) {
  if (off < 0) return Err("index out of range: " + std::to_string(off));
  const auto offs = CodePointOffsets(s);
  const auto n = static_cast<int64_t>(offs.size() - 1);
  if (sub.empty()) return Value::Int(std::min(off, n));
  if (off >= n) return Value::Int(-1);
  const size_t at = Searcher(sub).Find(s, offs[static_cast<size_t>(off)]);
  if (at == std::string::npos) return Value::Int(-1);
  return Value::Int(CpIndex(offs, at));
}
Value IndexOf(const Args& a, EvalBudget&) { return IndexOfImpl(S(a[0]), S(a[1]), 0); }
Value IndexOfFrom(const Args& a, EvalBudget&) { return IndexOfImpl(S(a[0]), S(a[1]), I(a[2])); }
Value LastIndexOfImpl(const std::string& s, const std::string& sub, int64_t off) {
  if (off < 0) return Err("index out of range: " + std::to_string(off));
  const auto offs = CodePointOffsets(s);
  const auto n = static_cast<int64_t>(offs.size() - 1);
  if (sub.empty()) return Value::Int(std::min(off, n));
  if (off >= n) return Value::Int(-1);
  const int64_t m = CodePoints(sub);
  if (m > n) return Value::Int(-1);
  off = std::min(off, n - m);
  // The last occurrence starting at or before `off`: the first one in the reversed string
  // starting at or after the mirrored position.
  const size_t limit = offs[static_cast<size_t>(off)];
  const std::string reversed(s.rbegin(), s.rend());
  const std::string reversed_sub(sub.rbegin(), sub.rend());
  const size_t start = limit + sub.size() >= s.size() ? 0 : s.size() - limit - sub.size();
  const size_t found = Searcher(reversed_sub).Find(reversed, start);
  if (found == std::string::npos) return Value::Int(-1);
  return Value::Int(CpIndex(offs, s.size() - found - sub.size()));
}
Value LastIndexOf(const Args& a, EvalBudget&) {
  if (S(a[1]).empty()) return Value::Int(CodePoints(S(a[0])));
  if (S(a[0]).size() < S(a[1]).size()) return Value::Int(-1);
  return LastIndexOfImpl(S(a[0]), S(a[1]), CodePoints(S(a[0])) - 1);
}
Value LastIndexOfFrom(const Args& a, EvalBudget&) {
  return LastIndexOfImpl(S(a[0]), S(a[1]), I(a[2]));
}
Value LowerAscii(const Args& a, EvalBudget& b) {
  std::string s = S(a[0]);
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return MakeString(std::move(s), b);
}
Value UpperAscii(const Args& a, EvalBudget& b) {
  std::string s = S(a[0]);
  for (char& c : s) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  }
  return MakeString(std::move(s), b);
}
Value ReplaceN(const std::string& s, const std::string& from, const std::string& to, int64_t n,
               EvalBudget& b) {
  if (n == 0) return Value::String(s);
  // The result's size is known before it is built; refuse what the budget would not hold.
  std::vector<size_t> at;
  if (from.empty()) {
    const auto offs = CodePointOffsets(s);
    for (size_t i = 0; i < offs.size() && (n < 0 || static_cast<int64_t>(at.size()) < n); ++i) {
      at.push_back(offs[i]);
    }
  } else {
    const Searcher searcher(from);
    for (size_t p = searcher.Find(s, 0);
         p != std::string::npos && (n < 0 || static_cast<int64_t>(at.size()) < n);
         p = searcher.Find(s, p + from.size())) {
      at.push_back(p);
    }
  }
  const uint64_t size = s.size() + at.size() * to.size();
  if (!b.Allocate(size)) return Err(kMemoryLimitMessage);
  std::string out;
  out.reserve(size);
  size_t prev = 0;
  for (size_t p : at) {
    out.append(s, prev, p - prev);
    out += to;
    prev = p + from.size();
  }
  if (prev <= s.size()) out.append(s, prev, std::string::npos);
  return Value::String(std::move(out));
}
Value Replace(const Args& a, EvalBudget& b) { return ReplaceN(S(a[0]), S(a[1]), S(a[2]), -1, b); }
Value ReplaceLimit(const Args& a, EvalBudget& b) {
  return ReplaceN(S(a[0]), S(a[1]), S(a[2]), I(a[3]), b);
}
Value SplitN(const std::string& s, const std::string& sep, int64_t n, EvalBudget& b) {
  std::vector<Value> out;
  if (n == 0) return Value::List({});
  if (sep.empty()) {
    const auto offs = CodePointOffsets(s);
    for (size_t i = 0; i + 1 < offs.size(); ++i) {
      if (n > 0 && static_cast<int64_t>(out.size()) == n - 1) {
        out.push_back(Value::String(s.substr(offs[i])));
        break;
      }
      out.push_back(Value::String(s.substr(offs[i], offs[i + 1] - offs[i])));
    }
  } else {
    size_t prev = 0;
    const Searcher searcher(sep);
    while (n < 0 || static_cast<int64_t>(out.size()) < n - 1) {
      const size_t p = searcher.Find(s, prev);
      if (p == std::string::npos) break;
      out.push_back(Value::String(s.substr(prev, p - prev)));
      prev = p + sep.size();
    }
    out.push_back(Value::String(s.substr(prev)));
  }
  if (!b.Allocate(s.size() + out.size() * sizeof(Value))) return Err(kMemoryLimitMessage);
  return Value::List(std::move(out));
}
Value Split(const Args& a, EvalBudget& b) { return SplitN(S(a[0]), S(a[1]), -1, b); }
Value SplitLimit(const Args& a, EvalBudget& b) { return SplitN(S(a[0]), S(a[1]), I(a[2]), b); }
Value Substring(const std::string& s, int64_t from, int64_t to) {
  const auto offs = CodePointOffsets(s);
  const auto n = static_cast<int64_t>(offs.size() - 1);
  if (from > to) {
    return Err("invalid substring range. start: " + std::to_string(from) +
               ", end: " + std::to_string(to));
  }
  if (from < 0 || from > n) return Err("index out of range: " + std::to_string(from));
  if (to < 0 || to > n) return Err("index out of range: " + std::to_string(to));
  return Value::String(s.substr(offs[static_cast<size_t>(from)],
                                offs[static_cast<size_t>(to)] - offs[static_cast<size_t>(from)]));
}
Value Substring1(const Args& a, EvalBudget&) {
  const int64_t n = CodePoints(S(a[0]));
  if (I(a[1]) < 0 || I(a[1]) > n) return Err("index out of range: " + std::to_string(I(a[1])));
  return Substring(S(a[0]), I(a[1]), n);
}
Value Substring2(const Args& a, EvalBudget&) { return Substring(S(a[0]), I(a[1]), I(a[2])); }
Value Trim(const Args& a, EvalBudget&) {
  // Unicode White_Space in ASCII and the common non-ASCII spaces.
  static const std::vector<std::string> kSpaces = {" ",
                                                   "\t",
                                                   "\n",
                                                   "\v",
                                                   "\f",
                                                   "\r",
                                                   "\xc2\x85",
                                                   "\xc2\xa0",
                                                   "\xe1\x9a\x80",
                                                   "\xe2\x80\x80",
                                                   "\xe2\x80\x81",
                                                   "\xe2\x80\x82",
                                                   "\xe2\x80\x83",
                                                   "\xe2\x80\x84",
                                                   "\xe2\x80\x85",
                                                   "\xe2\x80\x86",
                                                   "\xe2\x80\x87",
                                                   "\xe2\x80\x88",
                                                   "\xe2\x80\x89",
                                                   "\xe2\x80\x8a",
                                                   "\xe2\x80\xa8",
                                                   "\xe2\x80\xa9",
                                                   "\xe2\x80\xaf",
                                                   "\xe2\x81\x9f",
                                                   "\xe3\x80\x80"};
  std::string_view s = S(a[0]);
  bool changed = true;
  while (changed) {
    changed = false;
    for (const auto& sp : kSpaces) {
      if (s.size() >= sp.size() && s.substr(0, sp.size()) == sp) {
        s.remove_prefix(sp.size());
        changed = true;
      }
      if (s.size() >= sp.size() && s.substr(s.size() - sp.size()) == sp) {
        s.remove_suffix(sp.size());
        changed = true;
      }
    }
  }
  return Value::String(std::string(s));
}
Value JoinImpl(const Value& list, const std::string& sep, EvalBudget& b) {
  uint64_t size = 0;
  for (const Value& v : list.Items()) {
    if (!v.Is<StringValue>()) return Err("no such overload");
    size += v.Str().size() + sep.size();
  }
  if (!b.Allocate(size)) return Err(kMemoryLimitMessage);
  std::string out;
  for (size_t i = 0; i < list.Items().size(); ++i) {
    if (i > 0) out += sep;
    out += list.Items()[i].Str();
  }
  return Value::String(std::move(out));
}
Value Join(const Args& a, EvalBudget& b) { return JoinImpl(a[0], "", b); }
Value JoinSep(const Args& a, EvalBudget& b) { return JoinImpl(a[0], S(a[1]), b); }
Value Quote(const Args& a, EvalBudget& b) {
  const std::string& s = S(a[0]);
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\v':
        out += "\\v";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        out.push_back(c);
    }
  }
  out += "\"";
  if (!ValidUtf8(s)) {
    // Invalid sequences become U+FFFD, as Go's strings.ToValidUTF8 does before quoting.
    std::string fixed;
    size_t i = 0;
    while (i < out.size()) {
      const auto c = static_cast<unsigned char>(out[i]);
      size_t n = c < 0x80             ? 1
                 : (c & 0xE0) == 0xC0 ? 2
                 : (c & 0xF0) == 0xE0 ? 3
                 : (c & 0xF8) == 0xF0 ? 4
                                      : 0;
      if (n != 0 && i + n <= out.size() && ValidUtf8(out.substr(i, n))) {
        fixed.append(out, i, n);
        i += n;
      } else {
        fixed += "\xef\xbf\xbd";
        ++i;
        while (i < out.size() && (static_cast<unsigned char>(out[i]) & 0xC0) == 0x80) ++i;
      }
    }
    out = std::move(fixed);
  }
  return MakeString(std::move(out), b);
}

// ---- lists (Kubernetes and the lists extension)
Value IsSorted(const Args& a, EvalBudget&) {
  const auto& items = a[0].Items();
  for (size_t i = 1; i < items.size(); ++i) {
    bool ordered = false;
    const int c = Compare(items[i - 1], items[i], &ordered);
    if (!ordered) return Err("no such overload");
    if (c > 0) return Value::Bool(false);
  }
  return Value::Bool(true);
}
Value Sum(const Args& a, EvalBudget& b) {
  const auto& items = a[0].Items();
  if (items.empty()) return Value::Int(0);
  Value acc = items[0];
  for (size_t i = 1; i < items.size(); ++i) {
    const Value& v = items[i];
    if (acc.Is<int64_t>() && v.Is<int64_t>()) {
      acc = AddInt({acc, v}, b);
    } else if (acc.Is<uint64_t>() && v.Is<uint64_t>()) {
      acc = AddUint({acc, v}, b);
    } else if (acc.Is<double>() && v.Is<double>()) {
      acc = Value::Double(D(acc) + D(v));
    } else {
      return Err("no such overload");
    }
    if (acc.IsError()) return acc;
  }
  if (!acc.Is<int64_t>() && !acc.Is<uint64_t>() && !acc.Is<double>())
    return Err("no such overload");
  return acc;
}
Value MinMax(const Args& a, bool want_max) {
  const auto& items = a[0].Items();
  if (items.empty()) return Err(std::string(want_max ? "max" : "min") + " called on empty list");
  Value best = items[0];
  for (size_t i = 1; i < items.size(); ++i) {
    bool ordered = false;
    const int c = Compare(items[i], best, &ordered);
    if (!ordered && !(items[i].Is<double>() || best.Is<double>())) return Err("no such overload");
    if ((want_max && c > 0 && ordered) || (!want_max && c < 0 && ordered)) best = items[i];
  }
  if (items.size() == 1 && (best.Is<ListValue>() || best.Is<MapValue>() || best.Is<NullValue>())) {
    return Err("no such overload");
  }
  return best;
}
Value Max(const Args& a, EvalBudget&) { return MinMax(a, true); }
Value Min(const Args& a, EvalBudget&) { return MinMax(a, false); }
Value ListIndexOf(const Args& a, EvalBudget&) {
  const auto& items = a[0].Items();
  for (size_t i = 0; i < items.size(); ++i) {
    if (Equal(items[i], a[1])) return Value::Int(static_cast<int64_t>(i));
  }
  return Value::Int(-1);
}
Value ListLastIndexOf(const Args& a, EvalBudget&) {
  const auto& items = a[0].Items();
  for (size_t i = items.size(); i-- > 0;) {
    if (Equal(items[i], a[1])) return Value::Int(static_cast<int64_t>(i));
  }
  return Value::Int(-1);
}
// includes(): a list contains the value, or a scalar equals it (Kubernetes' list-typed
// attributes made this work on either).
Value Includes(const Args& a, EvalBudget&) {
  if (a[0].Is<ListValue>()) {
    for (const Value& v : a[0].Items()) {
      if (Equal(v, a[1])) return Value::Bool(true);
    }
    return Value::Bool(false);
  }
  return Value::Bool(Equal(a[0], a[1]));
}
Value Slice(const Args& a, EvalBudget& b) {
  const auto& items = a[0].Items();
  const int64_t from = I(a[1]);
  const int64_t to = I(a[2]);
  if (from < 0 || to < 0) {
    return Err("cannot slice(" + std::to_string(from) + ", " + std::to_string(to) +
               "), negative indexes not supported");
  }
  if (from > to) {
    return Err("cannot slice(" + std::to_string(from) + ", " + std::to_string(to) +
               "), start index must be less than or equal to end index");
  }
  if (static_cast<uint64_t>(to) > items.size()) {
    return Err("cannot slice(" + std::to_string(from) + ", " + std::to_string(to) +
               "), list is length " + std::to_string(items.size()));
  }
  return MakeList(std::vector<Value>(items.begin() + from, items.begin() + to), b);
}
bool FlattenInto(const Value& list, int64_t depth, std::vector<Value>* out, EvalBudget& b) {
  for (const Value& v : list.Items()) {
    if (v.Is<ListValue>() && depth > 0) {
      if (!FlattenInto(v, depth - 1, out, b)) return false;
    } else {
      out->push_back(v);
    }
  }
  return b.Allocate(list.Items().size() * sizeof(Value));
}
Value Flatten(const Args& a, EvalBudget& b) {
  std::vector<Value> out;
  if (!FlattenInto(a[0], 1, &out, b)) return Err(kMemoryLimitMessage);
  return Value::List(std::move(out));
}
Value FlattenDepth(const Args& a, EvalBudget& b) {
  if (I(a[1]) < 0) return Err("level must be non-negative");
  std::vector<Value> out;
  // Nesting is bounded by the expression (values only nest as deep as literals do).
  if (!FlattenInto(a[0], std::min<int64_t>(I(a[1]), 1000), &out, b)) {
    return Err(kMemoryLimitMessage);
  }
  return Value::List(std::move(out));
}
Value Sort(const Args& a, EvalBudget& b) {
  std::vector<Value> items = a[0].Items();
  if (items.empty()) return a[0];
  const size_t kind = items[0].data().index();
  for (const Value& v : items) {
    bool ordered = false;
    if (v.data().index() != kind) return Err("list elements must have the same type");
    Compare(v, v, &ordered);
    if (!ordered && !v.Is<double>()) return Err("list elements must be comparable");
  }
  std::stable_sort(items.begin(), items.end(), [](const Value& x, const Value& y) {
    bool ordered = false;
    return Compare(x, y, &ordered) < 0 && ordered;
  });
  return MakeList(std::move(items), b);
}
Value Range(const Args& a, EvalBudget& b) {
  constexpr int64_t kMaxRange = 1000000;
  const int64_t n = I(a[0]);
  if (n > kMaxRange) {
    return Err("lists.range: size " + std::to_string(n) + " exceeds maximum allowed (" +
               std::to_string(kMaxRange) + ")");
  }
  if (n <= 0) return Value::List({});
  if (!b.Allocate(static_cast<uint64_t>(n) * sizeof(Value))) return Err(kMemoryLimitMessage);
  std::vector<Value> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.push_back(Value::Int(i));
  return Value::List(std::move(out));
}
Value Reverse(const Args& a, EvalBudget& b) {
  std::vector<Value> items(a[0].Items().rbegin(), a[0].Items().rend());
  return MakeList(std::move(items), b);
}
Value Distinct(const Args& a, EvalBudget& b) {
  std::vector<Value> out;
  for (const Value& v : a[0].Items()) {
    bool seen = false;
    for (const Value& o : out) {
      if (Equal(o, v)) {
        seen = true;
        break;
      }
    }
    if (!seen) out.push_back(v);
  }
  return MakeList(std::move(out), b);
}

// ---- sets
Value SetsContains(const Args& a, EvalBudget&) {
  for (const Value& x : a[1].Items()) {
    bool found = false;
    for (const Value& y : a[0].Items()) {
      if (Equal(x, y)) {
        found = true;
        break;
      }
    }
    if (!found) return Value::Bool(false);
  }
  return Value::Bool(true);
}
Value SetsEquivalent(const Args& a, EvalBudget& b) {
  return Value::Bool(SetsContains({a[0], a[1]}, b).As<bool>() &&
                     SetsContains({a[1], a[0]}, b).As<bool>());
}
Value SetsIntersects(const Args& a, EvalBudget&) {
  for (const Value& x : a[0].Items()) {
    for (const Value& y : a[1].Items()) {
      if (Equal(x, y)) return Value::Bool(true);
    }
  }
  return Value::Bool(false);
}

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

struct Registry {
  std::vector<std::unique_ptr<Overload>> all;
  std::map<std::string, std::vector<const Overload*>, std::less<>> by_name;

  void Add(const char* id, const std::string& fn, bool member, std::vector<TypePtr> params,
           TypePtr result, Value (*impl)(const Args&, EvalBudget&)) {
    auto o = std::make_unique<Overload>(
        Overload{id, fn, member, std::move(params), std::move(result), impl});
    by_name[fn].push_back(o.get());
    all.push_back(std::move(o));
  }
  void Global(const char* id, const std::string& fn, std::vector<TypePtr> p, TypePtr r,
              Value (*impl)(const Args&, EvalBudget&)) {
    Add(id, fn, false, std::move(p), std::move(r), impl);
  }
  void Member(const char* id, const std::string& fn, std::vector<TypePtr> p, TypePtr r,
              Value (*impl)(const Args&, EvalBudget&)) {
    Add(id, fn, true, std::move(p), std::move(r), impl);
  }
};

Registry BuildRegistry() {
  Registry r;
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

  r.Member("contains_string", "contains", {kString, kString}, kBool, Contains);
  r.Member("starts_with_string", "startsWith", {kString, kString}, kBool, StartsWith);
  r.Member("ends_with_string", "endsWith", {kString, kString}, kBool, EndsWith);
  r.Global("matches", "matches", {kString, kString}, kBool, Matches);
  r.Member("matches_string", "matches", {kString, kString}, kBool, Matches);
  r.Member("string_find_string", "find", {kString, kString}, kString, Find);
  r.Member("string_find_all_string", "findAll", {kString, kString}, kListString, FindAll);
  r.Member("string_find_all_string_int", "findAll", {kString, kString, kInt}, kListString,
           FindAllLimit);

  r.Member("string_char_at_int", "charAt", {kString, kInt}, kString, CharAt);
  r.Member("string_index_of_string", "indexOf", {kString, kString}, kInt, IndexOf);
  r.Member("string_index_of_string_int", "indexOf", {kString, kString, kInt}, kInt, IndexOfFrom);
  r.Member("string_last_index_of_string", "lastIndexOf", {kString, kString}, kInt, LastIndexOf);
  r.Member("string_last_index_of_string_int", "lastIndexOf", {kString, kString, kInt}, kInt,
           LastIndexOfFrom);
  r.Member("string_lower_ascii", "lowerAscii", {kString}, kString, LowerAscii);
  r.Member("string_upper_ascii", "upperAscii", {kString}, kString, UpperAscii);
  r.Member("string_replace_string_string", "replace", {kString, kString, kString}, kString,
           Replace);
  r.Member("string_replace_string_string_int", "replace", {kString, kString, kString, kInt},
           kString, ReplaceLimit);
  r.Member("string_split_string", "split", {kString, kString}, kListString, Split);
  r.Member("string_split_string_int", "split", {kString, kString, kInt}, kListString, SplitLimit);
  r.Member("string_substring_int", "substring", {kString, kInt}, kString, Substring1);
  r.Member("string_substring_int_int", "substring", {kString, kInt, kInt}, kString, Substring2);
  r.Member("string_trim", "trim", {kString}, kString, Trim);
  r.Member("list_join", "join", {kListString}, kString, Join);
  r.Member("list_join_string", "join", {kListString, kString}, kString, JoinSep);
  r.Global("strings_quote", "strings.quote", {kString}, kString, Quote);

  r.Member("list_is_sorted_bool", "isSorted", {kListA}, kBool, IsSorted);
  r.Member("list_sum", "sum", {kListA}, kA, Sum);
  r.Member("list_max", "max", {kListA}, kA, Max);
  r.Member("list_min", "min", {kListA}, kA, Min);
  r.Member("list_a_index_of_int", "indexOf", {kListA, kA}, kInt, ListIndexOf);
  r.Member("list_a_last_index_of_int", "lastIndexOf", {kListA, kA}, kInt, ListLastIndexOf);
  r.Member("list_includes_dyn_dyn", "includes", {kDyn, kDyn}, kBool, Includes);
  r.Member("list_slice", "slice", {kListA, kInt, kInt}, kListA, Slice);
  r.Member("list_flatten", "flatten", {Type::ListOf(kListA)}, kListA, Flatten);
  r.Member("list_flatten_int", "flatten", {kListDyn, kInt}, kListDyn, FlattenDepth);
  r.Member("list_sort", "sort", {kListA}, kListA, Sort);
  r.Global("lists_range", "lists.range", {kInt}, Type::ListOf(kInt), Range);
  r.Member("list_reverse", "reverse", {kListA}, kListA, Reverse);
  r.Member("list_distinct", "distinct", {kListA}, kListA, Distinct);
  r.Global("list_sets_contains_list", "sets.contains", {kListA, kListA}, kBool, SetsContains);
  r.Global("list_sets_equivalent_list", "sets.equivalent", {kListA, kListA}, kBool, SetsEquivalent);
  r.Global("list_sets_intersects_list", "sets.intersects", {kListA, kListA}, kBool, SetsIntersects);

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
  return r;
}

const Registry& GetRegistry() {
  static const Registry registry = BuildRegistry();
  return registry;
}

uint64_t Size(const Value& v) {
  if (v.Is<StringValue>()) return static_cast<uint64_t>(v.As<StringValue>().code_points);
  if (v.Is<BytesValue>()) return v.Str().size();
  if (v.Is<ListValue>()) return v.Items().size();
  if (v.Is<MapValue>()) return v.Entries().size();
  return 1;
}

uint64_t Traversal(const Value& v) {
  if (v.Is<StringValue>() || v.Is<BytesValue>())
    return static_cast<uint64_t>(static_cast<double>(Size(v)) * 0.1);
  if (v.Is<ListValue>()) {
    uint64_t c = 0;
    for (const Value& x : v.Items()) c += Traversal(x);
    return c;
  }
  if (v.Is<MapValue>()) {
    uint64_t c = 0;
    for (const auto& [k, kv] : v.Entries()) c += Traversal(kv.first) + Traversal(kv.second);
    return c;
  }
  return 1;
}

uint64_t Tenth(double n) { return static_cast<uint64_t>(std::ceil(n * 0.1)); }

// The lists extension's O(n^2) charge for sort() and distinct().
uint64_t SelfCompareCost(const Value& list) {
  const uint64_t n = Size(list);
  double factor = 2.0;
  if (n > 0 && (list.Items()[0].Is<StringValue>() || list.Items()[0].Is<BytesValue>())) {
    factor += 0.1;
  }
  return static_cast<uint64_t>(static_cast<double>(n * n) * factor);
}

}  // namespace

const std::vector<const Overload*>* FindOverloads(std::string_view function) {
  const auto& r = GetRegistry();
  const auto it = r.by_name.find(function);
  return it == r.by_name.end() ? nullptr : &it->second;
}

bool IsUnsupportedFunction(std::string_view function) {
  static const std::set<std::string_view> kNames = {"duration",
                                                    "timestamp",
                                                    "getFullYear",
                                                    "getMonth",
                                                    "getDate",
                                                    "getDayOfMonth",
                                                    "getDayOfWeek",
                                                    "getDayOfYear",
                                                    "getHours",
                                                    "getMinutes",
                                                    "getSeconds",
                                                    "getMilliseconds",
                                                    "url",
                                                    "isURL",
                                                    "getScheme",
                                                    "getHost",
                                                    "getHostname",
                                                    "getPort",
                                                    "getEscapedPath",
                                                    "getQuery",
                                                    "ip",
                                                    "isIP",
                                                    "ip.isCanonical",
                                                    "cidr",
                                                    "isCIDR",
                                                    "containsIP",
                                                    "containsCIDR",
                                                    "masked",
                                                    "prefixLength",
                                                    "family",
                                                    "isUnspecified",
                                                    "isLoopback",
                                                    "isLinkLocalMulticast",
                                                    "isLinkLocalUnicast",
                                                    "isGlobalUnicast",
                                                    "format",
                                                    "format.named",
                                                    "validate",
                                                    "optional.of",
                                                    "optional.ofNonZeroValue",
                                                    "optional.none",
                                                    "hasValue",
                                                    "value",
                                                    "or",
                                                    "orValue",
                                                    "optMap",
                                                    "optFlatMap",
                                                    "check",
                                                    "fieldSelector",
                                                    "labelSelector",
                                                    "serviceAccount",
                                                    "errored",
                                                    "reason",
                                                    "allowed",
                                                    "path",
                                                    "group",
                                                    "resource",
                                                    "subresource",
                                                    "namespace",
                                                    "name",
                                                    "error",
                                                    "first",
                                                    "last"};
  return kNames.count(function) != 0;
}

bool RuntimeMatches(const TypePtr& t, const Value& v) {
  switch (t->kind) {
    case TypeKind::kDyn:
    case TypeKind::kParam:
      return true;
    case TypeKind::kNull:
      return v.Is<NullValue>();
    case TypeKind::kBool:
      return v.Is<bool>();
    case TypeKind::kInt:
      return v.Is<int64_t>();
    case TypeKind::kUint:
      return v.Is<uint64_t>();
    case TypeKind::kDouble:
      return v.Is<double>();
    case TypeKind::kString:
      return v.Is<StringValue>();
    case TypeKind::kBytes:
      return v.Is<BytesValue>();
    case TypeKind::kList:
      return v.Is<ListValue>();
    case TypeKind::kMap:
    case TypeKind::kDevice:
      return v.Is<MapValue>();
    case TypeKind::kQuantity:
      return v.Is<QuantityValue>();
    case TypeKind::kSemver:
      return v.Is<SemverValue>();
    case TypeKind::kType:
      return v.Is<TypeValue>();
  }
  return false;
}

uint64_t CallCost(std::string_view fn, bool resolved, const std::vector<Value>& args,
                  const Value& result) {
  const auto size = [&args](size_t i) { return static_cast<double>(Size(args[i])); };
  // The Kubernetes cost estimator, by function name.
  if (fn == "isSorted" || fn == "sum" || fn == "max" || fn == "min" || fn == "indexOf" ||
      fn == "lastIndexOf" || fn == "includes") {
    return Traversal(args[0]);
  }
  if (fn == "lowerAscii" || fn == "upperAscii" || fn == "substring" || fn == "trim" ||
      fn == "quantity" || fn == "isQuantity" || fn == "semver" || fn == "isSemver") {
    return Tenth(size(0));
  }
  if (fn == "replace" || fn == "split") return Tenth(2.0 * size(0));
  if (fn == "join") return Tenth(2.0 * static_cast<double>(Size(result)));
  if (fn == "find" || fn == "findAll") {
    return static_cast<uint64_t>(std::ceil((1.0 + size(0)) * 0.1)) *
           static_cast<uint64_t>(std::ceil(size(1) * 0.25));
  }
  if ((fn == "_==_" || fn == "_!=_") &&
      (args[0].Is<QuantityValue>() || args[0].Is<SemverValue>())) {
    return 1;
  }
  // cel-go's own costs and the lists and sets extensions' trackers are keyed by overload, so
  // they apply only where the checker resolved the call to a single overload.
  if (!resolved) return 1;
  if (fn == "startsWith" || fn == "endsWith") return Tenth(size(1));
  if ((fn == "bytes" && args[0].Is<StringValue>()) ||
      (fn == "string" && args[0].Is<BytesValue>()) || fn == "strings.quote") {
    return Tenth(size(0));
  }
  if (fn == "@in" && args[1].Is<ListValue>()) return Size(args[1]);
  const bool text = args.size() == 2 && ((args[0].Is<StringValue>() && args[1].Is<StringValue>()) ||
                                         (args[0].Is<BytesValue>() && args[1].Is<BytesValue>()));
  if (fn == "_==_" || fn == "_!=_" ||
      (text && (fn == "_<_" || fn == "_<=_" || fn == "_>_" || fn == "_>=_"))) {
    return Tenth(std::min(size(0), size(1)));
  }
  if (fn == "_+_" && text) return Tenth(size(0) + size(1));
  if (fn == "matches") {
    return static_cast<uint64_t>(std::ceil((1.0 + size(0)) * 0.1)) *
           static_cast<uint64_t>(std::ceil(size(1) * 0.25));
  }
  if (fn == "contains") return Tenth(size(0)) * Tenth(size(1));
  if (fn == "slice" || fn == "lists.range" || fn == "reverse") return 11 + Size(result);
  if (fn == "flatten") {
    const double depth = args.size() == 2 && args[1].Is<int64_t>()
                             ? static_cast<double>(args[1].As<int64_t>())
                             : 1.0;
    return 11 + static_cast<uint64_t>(size(0) * (depth < 0 ? 1.0 : depth));
  }
  if (fn == "distinct" || fn == "sort") return 11 + SelfCompareCost(args[0]);
  if (fn == "sets.contains" || fn == "sets.intersects") return 1 + Size(args[0]) * Size(args[1]);
  if (fn == "sets.equivalent") return 1 + 2 * Size(args[0]) * Size(args[1]);
  return 1;
}

uint64_t WorkBound(std::string_view fn, const std::vector<Value>& args) {
  if (fn == "distinct" && args[0].Is<ListValue>()) return SelfCompareCost(args[0]);
  if ((fn == "sets.contains" || fn == "sets.intersects" || fn == "sets.equivalent") &&
      args[0].Is<ListValue>() && args[1].Is<ListValue>()) {
    return Size(args[0]) * Size(args[1]);
  }
  return 0;
}

std::shared_ptr<const RE2> CompileRegex(const std::string& pattern, std::string* error) {
  RE2::Options opts;
  opts.set_log_errors(false);
  // RE2 bounds the memory of a compiled pattern; past it the pattern is refused.
  opts.set_max_mem(int64_t{8} << 20);
  auto re = std::make_shared<const RE2>(pattern, opts);
  if (re->ok()) return re;
  // Go's regexp/syntax wording of the error, which upstream reports.
  const char* what = "invalid regular expression";
  switch (re->error_code()) {
    case RE2::ErrorBadEscape:
      what = "invalid escape sequence";
      break;
    case RE2::ErrorBadCharClass:
      what = "invalid character class";
      break;
    case RE2::ErrorBadCharRange:
      what = "invalid character class range";
      break;
    case RE2::ErrorMissingBracket:
      what = "missing closing ]";
      break;
    case RE2::ErrorMissingParen:
      what = "missing closing )";
      break;
    case RE2::ErrorTrailingBackslash:
      what = "trailing backslash at end of expression";
      break;
    case RE2::ErrorRepeatArgument:
      what = "missing argument to repetition operator";
      break;
    case RE2::ErrorRepeatSize:
      what = "invalid repeat count";
      break;
    case RE2::ErrorRepeatOp:
      what = "invalid nested repetition operator";
      break;
    case RE2::ErrorBadPerlOp:
      what = "invalid or unsupported Perl syntax";
      break;
    case RE2::ErrorBadUTF8:
      what = "invalid UTF-8";
      break;
    case RE2::ErrorBadNamedCapture:
      what = "invalid named capture";
      break;
    case RE2::ErrorPatternTooLarge:
      what = "expression too large";
      break;
    default:
      break;
  }
  *error = std::string("error parsing regexp: ") + what + ": `" + re->error_arg() + "`";
  return nullptr;
}

Value RegexCall(std::string_view function, const RE2& re, const std::vector<Value>& args,
                EvalBudget& budget) {
  if (function == "matches") return MatchesWith(re, args);
  if (function == "find") return FindWith(re, args);
  return FindAllWith(re, args, budget);
}

std::string GoTypeName(const Value& v) {
  if (v.Is<QuantityValue>()) return "cel.Quantity";
  if (v.Is<SemverValue>()) return "cel.Semver";
  if (v.Is<NullValue>()) return "types.Null";
  std::string name = v.TypeName();
  if (name == "type") return "*types.Type";
  name[0] = static_cast<char>(name[0] - 32);
  return "types." + name;
}

}  // namespace berth::cel
