#include "pkg/cel/eval.h"

#include <re2/re2.h>

#include <algorithm>
#include <utility>

#include "pkg/cel/checker.h"

namespace berth::cel {
namespace {

constexpr uint64_t kListCreateCost = 10;
constexpr uint64_t kMapCreateCost = 30;

// cel-go's wording when no overload takes the runtime arguments (the function is not named).
Value NoOverload(const std::string&) { return Value::Error("no such overload"); }

bool IsQualifier(const Expr& e) {
  return e.kind == ExprKind::kSelect || (e.kind == ExprKind::kCall && e.name == "_[_]");
}

// CEL charges a field selection or index as one step of an attribute path; a path that starts
// at an expression other than a variable costs one more for the path itself.
uint64_t QualifierCost(const Expr& e) {
  const Expr& operand = *e.args[0];
  return operand.kind == ExprKind::kIdent || IsQualifier(operand) ? 1 : 2;
}

// The lists extension declares sort() once per comparable element type, and its cost tracker
// is keyed by those overloads: it applies only where the checker typed the target as a list of
// one concrete type (a dyn target is dispatched at run time and costs one).
bool TypedAsConcreteList(const Expr& target) {
  const TypePtr& t = target.type;
  return t && t->kind == TypeKind::kList && t->a && t->a->kind != TypeKind::kDyn &&
         t->a->kind != TypeKind::kParam;
}

class Evaluator {
 public:
  Evaluator(std::vector<Value>* slots, EvalBudget* budget) : slots_(*slots), budget_(*budget) {}

  Value Eval(const Expr& e) {
    if (budget_.exceeded()) return Value::Error(budget_.cancellation());
    switch (e.kind) {
      case ExprKind::kLiteral:
        return e.literal;
      case ExprKind::kIdent:
        budget_.Charge(1);
        return slots_[static_cast<size_t>(e.slot)];
      case ExprKind::kSelect:
      case ExprKind::kPresence:
        return Select(e);
      case ExprKind::kCall:
        return Call(e);
      case ExprKind::kList:
        return List(e);
      case ExprKind::kMap:
        return Map(e);
      case ExprKind::kComprehension:
        return Comprehension(e);
    }
    return Value::Error("unknown expression");
  }

 private:
  Value Select(const Expr& e) {
    Value operand = Eval(*e.args[0]);
    if (operand.IsError()) return operand;
    // A presence test costs nothing, as the Kubernetes environment configures CEL.
    // A presence test costs nothing itself, as the Kubernetes environment configures CEL (a
    // path rooted at an expression still costs its one).
    budget_.Charge(QualifierCost(e) - (e.kind == ExprKind::kPresence ? 1 : 0));
    // A field of a list is a string index into it, an error even in a presence test; a field
    // of a scalar is absent.
    if (operand.Is<ListValue>()) return Value::Error("unsupported index type 'string' in list");
    if (!operand.Is<MapValue>()) {
      if (e.kind == ExprKind::kPresence) return Value::Bool(false);
      return Value::Error("no such key: " + e.name);
    }
    const Value key = Value::String(e.name);
    const Value* found = MapFind(operand, key);
    const bool defaults = operand.As<MapValue>().absent_is_empty;
    if (e.kind == ExprKind::kPresence) return Value::Bool(found != nullptr || defaults);
    if (found != nullptr) return *found;
    if (defaults) return Value::Map({});
    return Value::Error("no such key: " + e.name);
  }

  // Logical operators absorb an error when the other side decides the result, in either
  // order, as CEL's commutative && and || do.
  Value Logical(const Expr& e, bool is_and) {
    Value l = Eval(*e.args[0]);
    if (l.Is<bool>() && l.As<bool>() != is_and) return l;
    Value r = Eval(*e.args[1]);
    if (r.Is<bool>() && r.As<bool>() != is_and) return r;
    if (l.Is<bool>() && r.Is<bool>()) return r;
    if (l.IsError()) return l;
    if (r.IsError()) return r;
    return NoOverload(e.name);
  }

  Value Call(const Expr& e) {
    if (e.name == "_&&_") return Logical(e, true);
    if (e.name == "_||_") return Logical(e, false);
    if (e.name == "_?_:_") {
      Value c = Eval(*e.args[0]);
      if (c.IsError()) return c;
      if (!c.Is<bool>()) return NoOverload(e.name);
      return Eval(*e.args[c.As<bool>() ? 1 : 2]);
    }
    // Every argument is evaluated, even after one fails, as cel-go's strict calls do (their
    // costs count); the first error is the result.
    std::vector<Value> args;
    args.reserve(e.args.size());
    const Value* error = nullptr;
    for (const auto& a : e.args) {
      args.push_back(Eval(*a));
      if (budget_.exceeded()) return Value::Error(budget_.cancellation());
    }
    for (const Value& a : args) {
      if (a.IsError()) {
        error = &a;
        break;
      }
    }
    if (e.name == "_[_]") {
      // A path stops at its first failing step; later steps cost nothing.
      if (!args[0].IsError()) budget_.Charge(QualifierCost(e));
      if (error != nullptr) return *error;
      if (!args[0].Is<MapValue>() && !args[0].Is<ListValue>()) {
        return Value::Error("no such key: " + Describe(args[1]));
      }
      // device.attributes["domain"] of an absent domain is an empty map.
      if (args[0].Is<MapValue>() && args[0].As<MapValue>().absent_is_empty &&
          MapFind(args[0], args[1]) == nullptr) {
        return Value::Map({});
      }
    }
    const bool resolved =
        e.overloads.size() == 1 && (e.name != "sort" || TypedAsConcreteList(*e.args[0]));
    if (error != nullptr) {
      // A failed argument still costs the call, except where cel-go planned a literal pattern.
      if (!e.free_call && !e.regex && e.name != "_[_]") {
        budget_.Charge(CallCost(e.name, resolved, args, *error));
      }
      return *error;
    }
    for (const Overload* o : e.overloads) {
      bool match = true;
      for (size_t i = 0; i < args.size() && match; ++i) {
        match = RuntimeMatches(o->params[i], args[i]);
      }
      if (!match) continue;
      if (const uint64_t work = WorkBound(e.name, args); work > 0 && !budget_.Fits(work)) {
        budget_.Charge(work);
        return Value::Error(kCostLimitMessage);
      }
      Value result = e.regex ? RegexCall(e.name, *e.regex, args, budget_) : o->impl(args, budget_);
      if (!e.free_call && e.name != "_[_]") {
        budget_.Charge(CallCost(e.name, resolved, args, result));
      }
      return result;
    }
    if (e.name != "_[_]") budget_.Charge(1);
    return NoOverload(e.name);
  }

  Value List(const Expr& e) {
    std::vector<Value> items;
    items.reserve(e.args.size());
    for (const auto& a : e.args) {
      items.push_back(Eval(*a));
      if (items.back().IsError()) return items.back();
    }
    budget_.Charge(kListCreateCost);
    if (!budget_.Allocate(items.size() * sizeof(Value))) return Value::Error(kMemoryLimitMessage);
    return Value::List(std::move(items));
  }

  Value Map(const Expr& e) {
    MapEntries entries;
    for (size_t i = 0; i < e.args.size(); i += 2) {
      Value k = Eval(*e.args[i]);
      if (k.IsError()) return k;
      Value v = Eval(*e.args[i + 1]);
      if (v.IsError()) return v;
      MapKey key;
      if (!ToMapKey(k, &key)) return Value::Error("unsupported key type");
      // A repeated key keeps its last value, as cel-go's map literals do.
      entries[key] = std::make_pair(std::move(k), std::move(v));
    }
    budget_.Charge(kMapCreateCost);
    if (!budget_.Allocate(entries.size() * 2 * sizeof(Value))) {
      return Value::Error(kMemoryLimitMessage);
    }
    return Value::Map(std::move(entries));
  }

  // The (first, second) variable values of each iteration.
  static std::vector<std::pair<Value, Value>> Iterations(const Value& range, bool two) {
    std::vector<std::pair<Value, Value>> out;
    if (range.Is<ListValue>()) {
      const auto& items = range.Items();
      for (size_t i = 0; i < items.size(); ++i) {
        out.emplace_back(two ? Value::Int(static_cast<int64_t>(i)) : items[i], items[i]);
      }
    } else {
      for (const auto& [key, kv] : range.Entries()) out.emplace_back(kv.first, kv.second);
    }
    return out;
  }

  // sortBy(): the keys are computed as map() would compute them, then the list is ordered by
  // them (keys of one comparable type), as the lists extension's @sortByAssociatedKeys does.
  Value SortBy(const Expr& e, const Value& range) {
    budget_.Charge(2);  // the bound input, read as the map's range and as the call's target
    if (!range.Is<ListValue>()) return NoOverload("@sortByAssociatedKeys");
    const auto& items = range.Items();
    std::vector<Value> keys;
    keys.reserve(items.size());
    Value error;
    bool have_error = false;
    for (const Value& item : items) {
      if (budget_.exceeded()) return Value::Error(budget_.cancellation());
      slots_[static_cast<size_t>(e.slot)] = item;
      Value key = Eval(*e.args[1]);
      budget_.Charge(kListCreateCost + 2);
      if (key.IsError()) Record(key, &error, &have_error);
      keys.push_back(std::move(key));
    }
    budget_.Charge(1);  // the map's result
    if (have_error) return error;
    if (!budget_.Allocate(2 * keys.size() * sizeof(Value))) {
      return Value::Error(kMemoryLimitMessage);
    }
    const Value key_list = Value::List(keys);
    // The lists extension's charge applies when the checker knew the target to be a list.
    const bool resolved = e.args[0]->type && e.args[0]->type->kind == TypeKind::kList;
    budget_.Charge(CallCost("sort", resolved, {key_list}, Value()));
    if (keys.empty()) return range;
    const Value& first = keys[0];
    if (!first.Is<bool>() && !first.Is<int64_t>() && !first.Is<uint64_t>() && !first.Is<double>() &&
        !first.Is<StringValue>() && !first.Is<BytesValue>()) {
      return Value::Error("list elements must be comparable");
    }
    for (const Value& k : keys) {
      if (k.data().index() != first.data().index()) {
        return Value::Error("list elements must have the same type");
      }
    }
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&keys](size_t a, size_t b) {
      bool ordered = false;
      return Compare(keys[a], keys[b], &ordered) < 0 && ordered;
    });
    std::vector<Value> out;
    out.reserve(order.size());
    for (size_t i : order) out.push_back(items[i]);
    return Value::List(std::move(out));
  }

  static void Record(const Value& v, Value* error, bool* have_error) {
    if (*have_error) return;
    *error = v;
    *have_error = true;
  }

  Value Comprehension(const Expr& e) {
    if (e.macro == Macro::kBind) {
      slots_[static_cast<size_t>(e.slot)] = Eval(*e.args[0]);
      return Eval(*e.args[1]);
    }
    Value range = Eval(*e.args[0]);
    if (range.IsError()) return range;
    if (!range.Is<ListValue>() && !range.Is<MapValue>()) {
      return Value::Error("got '" + GoTypeName(range) + "', expected iterable type");
    }
    if (e.macro == Macro::kSortBy) return SortBy(e, range);
    const bool two = !e.var2.empty();
    const auto slot = static_cast<size_t>(e.slot);
    Value error;
    bool have_error = false;
    int64_t count = 0;
    std::vector<Value> list_out;
    MapEntries map_out;
    const auto iterations = Iterations(range, two);
    for (size_t index = 0; index < iterations.size(); ++index) {
      const auto& [first, second] = iterations[index];
      if (budget_.exceeded()) return Value::Error(budget_.cancellation());
      slots_[slot] = first;
      if (two) slots_[slot + 1] = second;
      switch (e.macro) {
        case Macro::kAll:
        case Macro::kExists: {
          // cel-go's fold checks its loop condition (2 for all, 3 for exists: accumulator,
          // `!`, not_strictly_false) and steps with the accumulator (1) and the predicate.
          const uint64_t condition = e.macro == Macro::kAll ? 2 : 3;
          budget_.Charge(condition + 1);
          const Value p = Eval(*e.args[1]);
          const bool decisive = e.macro == Macro::kExists;
          if (p.Is<bool>()) {
            if (p.As<bool>() == decisive) {
              // The next condition check ends the loop, if there is a next element.
              if (index + 1 < iterations.size()) budget_.Charge(condition);
              budget_.Charge(1);
              return Value::Bool(decisive);
            }
          } else if (!have_error) {
            have_error = true;
            error = p.IsError() ? p : NoOverload(e.macro == Macro::kAll ? "_&&_" : "_||_");
          }
          break;
        }
        case Macro::kExistsOne: {
          const Value p = Eval(*e.args[1]);
          if (!p.Is<bool>()) {
            Record(p.IsError() ? p : NoOverload("_?_:_"), &error, &have_error);
            break;
          }
          if (p.As<bool>()) {
            budget_.Charge(2);  // accumulator + 1
            ++count;
          }
          break;
        }
        case Macro::kFilter:
        case Macro::kMap:
        case Macro::kTransformList:
        case Macro::kTransformMap: {
          // An error becomes the accumulator and the fold goes on (its steps still cost), as
          // cel-go's folds do; the first error is the result.
          const bool filtered = e.macro == Macro::kFilter || e.has_filter;
          if (filtered) {
            const Value p = Eval(*e.args[1]);
            if (!p.Is<bool>()) {
              Record(p.IsError() ? p : NoOverload("_?_:_"), &error, &have_error);
              break;
            }
            if (!p.As<bool>()) break;
          }
          Value out = e.macro == Macro::kFilter ? second : Eval(*e.args.back());
          if (out.IsError()) Record(out, &error, &have_error);
          // accumulator + [out] + the concatenation; a filter also reads its variable.
          // A map transform inserts (accumulator, key, insertion).
          budget_.Charge(e.macro == Macro::kTransformMap
                             ? 3
                             : kListCreateCost + 2 + (e.macro == Macro::kFilter ? 1 : 0));
          if (!budget_.Allocate(sizeof(Value) * 2)) return Value::Error(kMemoryLimitMessage);
          if (have_error) break;
          if (e.macro == Macro::kTransformMap) {
            MapKey key;
            ToMapKey(first, &key);
            map_out.emplace(std::move(key), std::make_pair(first, std::move(out)));
          } else {
            list_out.push_back(std::move(out));
          }
          break;
        }
        default:
          return Value::Error("unknown macro");
      }
    }
    // The result reads the accumulator (exists_one also compares it with 1).
    budget_.Charge(e.macro == Macro::kExistsOne ? 2 : 1);
    switch (e.macro) {
      case Macro::kAll:
      case Macro::kExists:
        if (have_error) return error;
        return Value::Bool(e.macro == Macro::kAll);
      case Macro::kExistsOne:
        if (have_error) return error;
        return Value::Bool(count == 1);
      case Macro::kTransformMap:
        if (have_error) return error;
        return Value::Map(std::move(map_out));
      default:
        if (have_error) return error;
        return Value::List(std::move(list_out));
    }
  }

  std::vector<Value>& slots_;
  EvalBudget& budget_;
};

}  // namespace

Value Evaluate(const Expr& expr, std::vector<Value>* slots, EvalBudget* budget) {
  return Evaluator(slots, budget).Eval(expr);
}

}  // namespace berth::cel
