#include "pkg/cel/cel.h"

#include <utility>

#include "pkg/cel/checker.h"
#include "pkg/cel/compiled.h"
#include "pkg/cel/eval.h"
#include "pkg/cel/parser.h"

namespace berth::cel {
namespace {

// cel-go's rendering of one issue: "ERROR: <input>:L:C: message", the source line and a
// caret under the column (both counted in code points, from 1).
std::string FormatIssue(std::string_view input, int32_t offset, const std::string& message) {
  const auto at = static_cast<size_t>(std::max<int32_t>(0, offset));
  size_t line_start = 0;
  int line = 1;
  for (size_t i = 0; i < at && i < input.size(); ++i) {
    if (input[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  size_t line_end = input.find('\n', line_start);
  if (line_end == std::string_view::npos) line_end = input.size();
  int column = 0;
  for (size_t i = line_start; i < at && i < input.size(); ++i) {
    if ((static_cast<unsigned char>(input[i]) & 0xC0) != 0x80) ++column;
  }
  std::string out = "ERROR: <input>:" + std::to_string(line) + ":" + std::to_string(column + 1) +
                    ": " + message + "\n | " +
                    std::string(input.substr(line_start, line_end - line_start)) + "\n | " +
                    std::string(static_cast<size_t>(column), '.') + "^";
  return out;
}

// Splits a qualified name at its first '/'; a bare name belongs to the driver's domain.
std::pair<std::string, std::string> SplitName(const std::string& name, const std::string& driver) {
  const size_t slash = name.find('/');
  if (slash == std::string::npos) return {driver, name};
  return {name.substr(0, slash), name.substr(slash + 1)};
}

void Put(MapEntries* m, const std::string& key, Value v) {
  MapKey k;
  k.rank = 2;
  k.s = key;
  (*m)[k] = std::make_pair(Value::String(key), std::move(v));
}

bool ToVersion(const Version& v, Value* out, std::string* error) {
  Semver s;
  if (!Semver::Parse(v.text, false, &s, error)) return false;
  *out = Value::SemverOf(std::move(s));
  return true;
}

bool AttributeToValue(const AttributeValue& a, Value* out, std::string* error) {
  return std::visit(
      [&](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          *out = Value::Bool(x);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          *out = Value::Int(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          *out = Value::String(x);
        } else if constexpr (std::is_same_v<T, Version>) {
          return ToVersion(x, out, error);
        } else {
          std::vector<Value> items;
          for (const auto& item : x) {
            Value v;
            if constexpr (std::is_same_v<typename T::value_type, Version>) {
              if (!ToVersion(item, &v, error)) return false;
            } else if constexpr (std::is_same_v<typename T::value_type, bool>) {
              v = Value::Bool(item);
            } else if constexpr (std::is_same_v<typename T::value_type, int64_t>) {
              v = Value::Int(item);
            } else {
              v = Value::String(item);
            }
            items.push_back(std::move(v));
          }
          *out = Value::List(std::move(items));
        }
        return true;
      },
      a);
}

// The `device` variable as a map of its fields. Returns false with the reason when an
// attribute holds no valid value (a version that does not parse).
bool DeviceValue(const DeviceView& d, Value* out, std::string* error) {
  std::map<std::string, MapEntries> attributes;
  for (const auto& [name, attr] : d.attributes) {
    Value v;
    if (!AttributeToValue(attr, &v, error)) {
      *error = "attribute " + name + ": parse semantic version: " + *error;
      return false;
    }
    const auto [domain, id] = SplitName(name, d.driver);
    Put(&attributes[domain], id, std::move(v));
  }
  std::map<std::string, MapEntries> capacity;
  for (const auto& [name, q] : d.capacity) {
    const auto [domain, id] = SplitName(name, d.driver);
    Put(&capacity[domain], id, Value::Quantity(Decimal::FromQuantity(q)));
  }
  MapEntries attrs;
  for (auto& [domain, m] : attributes) Put(&attrs, domain, Value::Map(std::move(m)));
  MapEntries caps;
  for (auto& [domain, m] : capacity) Put(&caps, domain, Value::Map(std::move(m)));
  MapEntries device;
  Put(&device, "driver", Value::String(d.driver));
  Put(&device, "allowMultipleAllocations", Value::Bool(d.allow_multiple_allocations));
  Put(&device, "attributes", Value::Map(std::move(attrs), /*absent_is_empty=*/true));
  Put(&device, "capacity", Value::Map(std::move(caps), /*absent_is_empty=*/true));
  *out = Value::Map(std::move(device));
  return true;
}

}  // namespace

CompileResult Compile(std::string_view expression) {
  CompileResult result;
  ParseError error;
  auto compiled = std::make_shared<internal::CompiledExpr>();
  compiled->root = Parse(expression, &error);
  if (!compiled->root || !Check(compiled->root.get(), &compiled->slots, &error)) {
    result.error =
        error.plain ? error.message
                    : "compilation failed: " + FormatIssue(expression, error.offset, error.message);
    return result;
  }
  const TypePtr& t = compiled->root->type;
  if (t->kind != TypeKind::kBool && t->kind != TypeKind::kDyn) {
    result.error = "must evaluate to bool or the unknown type, not " + TypeString(t);
    return result;
  }
  result.program.emplace(std::move(compiled));
  return result;
}

EvalResult Matches(const Program& program, const DeviceView& device, uint64_t cost_limit) {
  EvalResult result;
  const internal::CompiledExpr& expr = program.expr();
  std::vector<Value> slots(static_cast<size_t>(expr.slots));
  if (!DeviceValue(device, &slots[kDeviceSlot], &result.error)) return result;
  EvalBudget budget(cost_limit);
  const Value v = Evaluate(*expr.root, &slots, &budget);
  result.cost = budget.cost();
  if (budget.exceeded()) {
    result.error = budget.cancellation();
  } else if (v.IsError()) {
    result.error = v.ErrorMessage();
  } else if (!v.Is<bool>()) {
    // cel-go's conversion refusal, which upstream appends.
    const std::string type = v.TypeName();
    result.error = "CEL result of type " + type + " could not be converted to bool: " +
                   (v.Is<StringValue>() ? "unsupported native conversion from string to 'bool'"
                                        : "type conversion error from " + type + " to 'bool'");
  } else {
    result.matches = v.As<bool>();
  }
  return result;
}

Cache::Cache(size_t max_entries) : max_entries_(max_entries) {}

CompileResult Cache::GetOrCompile(std::string_view expression) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = index_.find(expression);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return CompileResult{it->second->second, ""};
    }
  }
  // Compiled outside the lock: two threads may compile one text at once; both results are
  // equal and the second insert is dropped.
  CompileResult result = Compile(expression);
  if (!result.program || max_entries_ == 0) return result;
  std::lock_guard<std::mutex> lock(mu_);
  if (index_.count(expression) != 0) return result;
  lru_.emplace_front(std::string(expression), *result.program);
  index_.emplace(lru_.front().first, lru_.begin());
  if (lru_.size() > max_entries_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return result;
}

}  // namespace berth::cel
