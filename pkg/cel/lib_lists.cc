// Kubernetes' lists library (v1), the lists extension (v3) and the sets extension.

#include <algorithm>
#include <string>

#include "pkg/cel/library.h"

namespace berth::cel::lib {
namespace {

// ---- lists (Kubernetes and the lists extension)
// The kinds CEL can order (its Comparer values); anything else in isSorted(), min() or max()
// is an error.
bool Orderable(const Value& v) {
  return v.Is<bool>() || v.Is<int64_t>() || v.Is<uint64_t>() || v.Is<double>() ||
         v.Is<StringValue>() || v.Is<BytesValue>();
}
// Kubernetes' isSorted(): a pair out of order gives false; a pair with no order between them
// (NaN, a string after an int in a dyn list) is skipped, as upstream skips a failed comparison.
Value IsSorted(const Args& a, EvalBudget&) {
  const auto& items = a[0].Items();
  for (size_t i = 0; i < items.size(); ++i) {
    if (!Orderable(items[i])) return Err("no such overload");
    bool ordered = false;
    if (i > 0 && Compare(items[i - 1], items[i], &ordered) > 0 && ordered) {
      return Value::Bool(false);
    }
  }
  return Value::Bool(true);
}
Value Sum(const Args& a, EvalBudget&) {
  const auto& items = a[0].Items();
  if (items.empty()) return Value::Int(0);
  Value acc = items[0];
  for (size_t i = 1; i < items.size(); ++i) {
    const Value& v = items[i];
    if (acc.Is<int64_t>() && v.Is<int64_t>()) {
      int64_t sum = 0;
      if (__builtin_add_overflow(I(acc), I(v), &sum)) return IntOverflow();
      acc = Value::Int(sum);
    } else if (acc.Is<uint64_t>() && v.Is<uint64_t>()) {
      uint64_t sum = 0;
      if (__builtin_add_overflow(U(acc), U(v), &sum)) return UintOverflow();
      acc = Value::Uint(sum);
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
// Kubernetes' min() and max(): the running result is replaced only by an element it compares
// as greater (min) or less (max) than; a failed comparison keeps it.
Value MinMax(const Args& a, bool want_max) {
  const auto& items = a[0].Items();
  if (items.empty()) return Err(std::string(want_max ? "max" : "min") + " called on empty list");
  size_t best = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!Orderable(items[i])) return Err("no such overload");
    bool ordered = false;
    const int c = Compare(items[best], items[i], &ordered);
    if (ordered && c == (want_max ? -1 : 1)) best = i;
  }
  return items[best];
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
  if (n < 0) return Err("lists.range: size must be non-negative, got " + std::to_string(n));
  if (n > kMaxRange) {
    return Err("lists.range: size " + std::to_string(n) + " exceeds maximum allowed (" +
               std::to_string(kMaxRange) + ")");
  }
  if (n == 0) return Value::List({});
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

}  // namespace

void RegisterLists(Registry& r) {
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
}

}  // namespace berth::cel::lib
