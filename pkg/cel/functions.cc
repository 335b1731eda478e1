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

#include "pkg/cel/library.h"

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

namespace lib {

const TypePtr kDyn = Type::Of(TypeKind::kDyn);
const TypePtr kBool = Type::Of(TypeKind::kBool);
const TypePtr kInt = Type::Of(TypeKind::kInt);
const TypePtr kUint = Type::Of(TypeKind::kUint);
const TypePtr kDouble = Type::Of(TypeKind::kDouble);
const TypePtr kString = Type::Of(TypeKind::kString);
const TypePtr kBytes = Type::Of(TypeKind::kBytes);
const TypePtr kNull = Type::Of(TypeKind::kNull);
const TypePtr kQuantity = Type::Of(TypeKind::kQuantity);
const TypePtr kSemver = Type::Of(TypeKind::kSemver);
const TypePtr kTypeT = Type::Of(TypeKind::kType);
const TypePtr kA = Type::Param('A');
const TypePtr kB = Type::Param('B');
const TypePtr kListA = Type::ListOf(kA);
const TypePtr kListString = Type::ListOf(kString);
const TypePtr kListDyn = Type::ListOf(kDyn);
const TypePtr kMapAB = Type::MapOf(kA, kB);

Value Err(std::string m) { return Value::Error(std::move(m)); }
Value IntOverflow() { return Err("integer overflow"); }
Value UintOverflow() { return Err("unsigned integer overflow"); }

Value MakeString(std::string s, EvalBudget& b) {
  if (!b.Allocate(s.size())) return Err(kMemoryLimitMessage);
  return Value::String(std::move(s));
}
Value MakeList(std::vector<Value> items, EvalBudget& b) {
  if (!b.Allocate(items.size() * sizeof(Value))) return Err(kMemoryLimitMessage);
  return Value::List(std::move(items));
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

void Registry::Add(const char* id, const std::string& fn, bool member, std::vector<TypePtr> params,
                   TypePtr result, Impl impl) {
  auto o = std::make_unique<Overload>(
      Overload{id, fn, member, std::move(params), std::move(result), impl});
  by_name[fn].push_back(o.get());
  all.push_back(std::move(o));
}

}  // namespace lib

namespace {

using lib::Registry;

Registry BuildRegistry() {
  Registry r;
  lib::RegisterStandard(r);
  lib::RegisterStrings(r);
  lib::RegisterLists(r);
  lib::RegisterKubernetes(r);
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

// Kubernetes' traversal cost: a tenth of each string's bytes (not its code points, which
// size() counts), one per other leaf.
uint64_t Traversal(const Value& v) {
  if (v.Is<StringValue>() || v.Is<BytesValue>()) {
    return static_cast<uint64_t>(static_cast<double>(v.Str().size()) * 0.1);
  }
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
