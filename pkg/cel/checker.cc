#include "pkg/cel/checker.h"

#include <limits>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "pkg/cel/functions.h"

namespace berth::cel {
namespace {

struct Failure {
  int32_t offset;
  std::string message;
  bool plain = false;
};

using Bindings = std::map<char, TypePtr>;

bool SameType(const TypePtr& a, const TypePtr& b) {
  if (a->kind != b->kind) return false;
  if (a->kind == TypeKind::kList) return SameType(a->a, b->a);
  if (a->kind == TypeKind::kMap) return SameType(a->a, b->a) && SameType(a->b, b->b);
  if (a->kind == TypeKind::kParam) return a->param == b->param;
  return true;
}

// Whether an argument of type `arg` may be passed as `param`, binding type parameters.
bool Unify(const TypePtr& param, const TypePtr& arg, Bindings* b) {
  if (param->kind == TypeKind::kDyn || arg->kind == TypeKind::kDyn) return true;
  if (param->kind == TypeKind::kParam) {
    const auto it = b->find(param->param);
    if (it == b->end()) {
      (*b)[param->param] = arg;
      return true;
    }
    if (it->second->kind == TypeKind::kDyn) return true;
    return Unify(it->second, arg, b);
  }
  if (param->kind != arg->kind) return false;
  if (param->kind == TypeKind::kList) return Unify(param->a, arg->a, b);
  if (param->kind == TypeKind::kMap)
    return Unify(param->a, arg->a, b) && Unify(param->b, arg->b, b);
  return true;
}

TypePtr Substitute(const TypePtr& t, const Bindings& b) {
  switch (t->kind) {
    case TypeKind::kParam: {
      const auto it = b.find(t->param);
      return it == b.end() ? Type::Of(TypeKind::kDyn) : it->second;
    }
    case TypeKind::kList:
      return Type::ListOf(Substitute(t->a, b));
    case TypeKind::kMap:
      return Type::MapOf(Substitute(t->a, b), Substitute(t->b, b));
    default:
      return t;
  }
}

const std::set<std::string>& TypeIdents() {
  static const std::set<std::string> names = {"int",       "uint",  "double", "bool",
                                              "string",    "bytes", "list",   "map",
                                              "null_type", "type",  "dyn"};
  return names;
}

class Checker {
 public:
  TypePtr Visit(Expr* e) {
    e->type = VisitInner(e);
    return e->type;
  }
  int slots() const { return next_slot_; }
  // The first failure of planning; reported only when the expression checks cleanly, since
  // cel-go plans the program after checking it.
  const std::string& deferred() const { return deferred_; }

 private:
  [[noreturn]] void Fail(const Expr* e, std::string msg) {
    throw Failure{e->offset, std::move(msg)};
  }

  TypePtr VisitInner(Expr* e) {
    switch (e->kind) {
      case ExprKind::kLiteral:
        return LiteralType(e->literal);
      case ExprKind::kIdent:
        return Ident(e);
      case ExprKind::kSelect:
      case ExprKind::kPresence:
        return Select(e);
      case ExprKind::kCall:
        return Call(e);
      case ExprKind::kList:
        return ListLiteral(e);
      case ExprKind::kMap:
        return MapLiteral(e);
      case ExprKind::kComprehension:
        return Comprehension(e);
    }
    return Type::Of(TypeKind::kDyn);
  }

  static TypePtr LiteralType(const Value& v) {
    switch (v.data().index()) {
      case 0:
        return Type::Of(TypeKind::kNull);
      case 1:
        return Type::Of(TypeKind::kBool);
      case 2:
        return Type::Of(TypeKind::kInt);
      case 3:
        return Type::Of(TypeKind::kUint);
      case 4:
        return Type::Of(TypeKind::kDouble);
      case 5:
        return Type::Of(TypeKind::kString);
      case 6:
        return Type::Of(TypeKind::kBytes);
      default:
        return Type::Of(TypeKind::kType);
    }
  }

  TypePtr Ident(Expr* e) {
    for (auto it = scope_.rbegin(); it != scope_.rend(); ++it) {
      if (it->name == e->name) {
        e->slot = it->slot;
        return it->type;
      }
    }
    if (e->name == "device") {
      e->slot = kDeviceSlot;
      return Type::Of(TypeKind::kDevice);
    }
    if (TypeIdents().count(e->name) != 0) {
      e->kind = ExprKind::kLiteral;
      e->literal = Value::Type(e->name);
      return Type::Of(TypeKind::kType);
    }
    Fail(e, "undeclared reference to '" + e->name + "' (in container '')");
  }

  TypePtr Select(Expr* e) {
    const TypePtr operand = Visit(e->args[0].get());
    const bool presence = e->kind == ExprKind::kPresence;
    TypePtr field;
    switch (operand->kind) {
      case TypeKind::kDevice: {
        static const std::map<std::string, TypePtr> fields = {
            {"driver", Type::Of(TypeKind::kString)},
            {"allowMultipleAllocations", Type::Of(TypeKind::kBool)},
            {"attributes",
             Type::MapOf(Type::Of(TypeKind::kString),
                         Type::MapOf(Type::Of(TypeKind::kString), Type::Of(TypeKind::kDyn)))},
            {"capacity",
             Type::MapOf(Type::Of(TypeKind::kString),
                         Type::MapOf(Type::Of(TypeKind::kString), Type::Of(TypeKind::kQuantity)))}};
        const auto it = fields.find(e->name);
        if (it == fields.end()) Fail(e, "undefined field '" + e->name + "'");
        field = it->second;
        break;
      }
      case TypeKind::kMap: {
        // A field selection on a map looks up a string key.
        Bindings b;
        if (!Unify(operand->a, Type::Of(TypeKind::kString), &b)) {
          Fail(e, "type '" + TypeString(operand) + "' does not support field selection");
        }
        field = operand->b;
        break;
      }
      case TypeKind::kDyn:
        field = operand;
        break;
      default:
        Fail(e, "type '" + TypeString(operand) + "' does not support field selection");
    }
    return presence ? Type::Of(TypeKind::kBool) : field;
  }

  static std::string Signature(const std::vector<TypePtr>& args, bool member) {
    std::string s;
    size_t first = 0;
    if (member) {
      s = TypeString(args[0]) + ".";
      first = 1;
    }
    s += "(";
    for (size_t i = first; i < args.size(); ++i) {
      if (i > first) s += ", ";
      s += TypeString(args[i]);
    }
    return s + ")";
  }

  TypePtr Call(Expr* e) {
    // A qualified global function written as a member call on an undeclared name
    // (strings.quote(x), lists.range(n), sets.contains(a, b)).
    if (e->member && e->args[0]->kind == ExprKind::kIdent && !InScope(e->args[0]->name) &&
        e->args[0]->name != "device") {
      const std::string qualified = e->args[0]->name + "." + e->name;
      if (FindOverloads(qualified) != nullptr || IsUnsupportedFunction(qualified)) {
        e->name = qualified;
        e->member = false;
        e->args.erase(e->args.begin());
      }
    }
    // An unknown function is reported at its '(' before anything in its arguments (cel-go
    // reports every issue, in source order; this one comes first).
    const bool builtin = e->name == "_&&_" || e->name == "_||_" || e->name == "_?_:_";
    if (!builtin && FindOverloads(e->name) == nullptr) {
      if (e->member) Visit(e->args[0].get());
      if (IsUnsupportedFunction(e->name)) {
        Fail(e, "function '" + e->name + "' is not supported by Berth's CEL evaluator");
      }
      Fail(e, "undeclared reference to '" + e->name + "' (in container '')");
    }
    std::vector<TypePtr> args;
    for (auto& a : e->args) args.push_back(Visit(a.get()));
    TypePtr kBool = Type::Of(TypeKind::kBool);
    if (e->name == "_&&_" || e->name == "_||_") {
      for (size_t i = 0; i < 2; ++i) RequireBool(e->args[i].get(), args[i]);
      return kBool;
    }
    if (e->name == "_?_:_") {
      Bindings b;
      const TypePtr param = Type::Param('A');
      if (!Unify(kBool, args[0], &b) || !Unify(param, args[1], &b) || !Unify(param, args[2], &b)) {
        Fail(e,
             "found no matching overload for '_?_:_' applied to '" + Signature(args, false) + "'");
      }
      if (args[1]->kind == TypeKind::kDyn || args[2]->kind == TypeKind::kDyn) {
        return Type::Of(TypeKind::kDyn);
      }
      return Substitute(param, b);
    }
    const auto* overloads = FindOverloads(e->name);
    TypePtr result;
    bool mixed = false;
    for (const Overload* o : *overloads) {
      if (o->member != e->member || o->params.size() != args.size()) continue;
      Bindings b;
      bool ok = true;
      for (size_t i = 0; i < args.size() && ok; ++i) ok = Unify(o->params[i], args[i], &b);
      if (!ok) continue;
      e->overloads.push_back(o);
      const TypePtr r = Substitute(o->result, b);
      if (result && !SameType(result, r)) mixed = true;
      if (!result) result = r;
    }
    if (e->overloads.empty()) {
      Fail(e, "found no matching overload for '" + e->name + "' applied to '" +
                  Signature(args, e->member) + "'");
    }
    Plan(e);
    return mixed ? Type::Of(TypeKind::kDyn) : result;
  }

  void RequireBool(const Expr* at, const TypePtr& t) {
    Bindings b;
    if (!Unify(Type::Of(TypeKind::kBool), t, &b)) {
      Fail(at, "expected type 'bool' but found '" + TypeString(t) + "'");
    }
  }

  // What cel-go does when it plans the program: literal conversions are computed once (an
  // error there fails the program), literal patterns are compiled once, and `in` over a
  // literal list of scalars becomes a free set lookup.
  void Plan(Expr* e) {
    static const std::set<std::string> kConversions = {"int",   "uint", "double", "string",
                                                       "bytes", "bool", "dyn",    "type"};
    if (kConversions.count(e->name) != 0 && !e->member && e->args.size() == 1 &&
        e->args[0]->kind == ExprKind::kLiteral) {
      EvalBudget budget(std::numeric_limits<uint64_t>::max());
      for (const Overload* o : e->overloads) {
        if (!RuntimeMatches(o->params[0], e->args[0]->literal)) continue;
        Value v = o->impl({e->args[0]->literal}, budget);
        if (v.IsError()) {
          Defer("program instantiation failed: " + v.ErrorMessage());
          return;
        }
        e->kind = ExprKind::kLiteral;
        e->literal = std::move(v);
        e->args.clear();
        e->overloads.clear();
        return;
      }
    }
    if ((e->name == "matches" || e->name == "find" || e->name == "findAll") &&
        e->args.size() >= 2 && e->args[1]->kind == ExprKind::kLiteral &&
        e->args[1]->literal.Is<StringValue>()) {
      std::string error;
      e->regex = CompileRegex(e->args[1]->literal.Str(), &error);
      if (!e->regex) {
        // CEL's literal pattern validator covers matches(); the others fail when planned.
        if (e->name == "matches") Fail(e->args[1].get(), "invalid matches argument");
        Defer("program instantiation failed: " + error);
        return;
      }
    }
    if (e->name == "@in" && e->args[1]->kind == ExprKind::kLiteral &&
        e->args[1]->literal.Is<ListValue>()) {
      bool scalars = true;
      for (const Value& v : e->args[1]->literal.Items()) {
        scalars = scalars && (v.Is<bool>() || v.Is<int64_t>() || v.Is<uint64_t>() ||
                              v.Is<double>() || v.Is<StringValue>());
      }
      e->free_call = scalars;
    }
  }

  // A list or map literal of literals is built once, as cel-go builds it when it plans.
  static void FoldAggregate(Expr* e) {
    for (const auto& a : e->args) {
      if (a->kind != ExprKind::kLiteral) return;
    }
    if (e->kind == ExprKind::kList) {
      std::vector<Value> items;
      for (const auto& a : e->args) items.push_back(a->literal);
      e->literal = Value::List(std::move(items));
    } else {
      MapEntries entries;
      for (size_t i = 0; i < e->args.size(); i += 2) {
        MapKey key;
        if (!ToMapKey(e->args[i]->literal, &key)) return;  // the evaluation reports it
        entries[key] = std::make_pair(e->args[i]->literal, e->args[i + 1]->literal);
      }
      e->literal = Value::Map(std::move(entries));
    }
    e->kind = ExprKind::kLiteral;
    e->args.clear();
  }

  bool InScope(const std::string& name) const {
    for (const auto& v : scope_) {
      if (v.name == name) return true;
    }
    return false;
  }

  // CEL's homogeneous aggregate literal rule: every element has the first element's type.
  TypePtr Homogeneous(const std::vector<Expr*>& items) {
    TypePtr first;
    for (Expr* item : items) {
      const TypePtr t = Visit(item);
      if (!first) {
        first = t;
      } else if (!SameType(first, t)) {
        Fail(item, "expected type '" + TypeString(first) + "' but found '" + TypeString(t) + "'");
      }
    }
    return first ? first : Type::Of(TypeKind::kDyn);
  }

  TypePtr ListLiteral(Expr* e) {
    std::vector<Expr*> items;
    for (auto& a : e->args) items.push_back(a.get());
    TypePtr t = Type::ListOf(Homogeneous(items));
    FoldAggregate(e);
    return t;
  }

  TypePtr MapLiteral(Expr* e) {
    std::vector<Expr*> keys;
    std::vector<Expr*> values;
    for (size_t i = 0; i < e->args.size(); i += 2) {
      keys.push_back(e->args[i].get());
      values.push_back(e->args[i + 1].get());
    }
    // Keys and values are checked in source order, as one walk over the entries.
    TypePtr key;
    TypePtr value;
    for (size_t i = 0; i < keys.size(); ++i) {
      const TypePtr k = Visit(keys[i]);
      const TypePtr v = Visit(values[i]);
      if (!key) {
        key = k;
        value = v;
        continue;
      }
      if (!SameType(key, k)) {
        Fail(keys[i], "expected type '" + TypeString(key) + "' but found '" + TypeString(k) + "'");
      }
      if (!SameType(value, v)) {
        Fail(values[i],
             "expected type '" + TypeString(value) + "' but found '" + TypeString(v) + "'");
      }
    }
    FoldAggregate(e);
    if (!key) return Type::MapOf(Type::Of(TypeKind::kDyn), Type::Of(TypeKind::kDyn));
    return Type::MapOf(key, value);
  }

  struct Var {
    std::string name;
    int slot;
    TypePtr type;
  };

  TypePtr Comprehension(Expr* e) {
    TypePtr kBool = Type::Of(TypeKind::kBool);
    TypePtr kDyn = Type::Of(TypeKind::kDyn);
    if (e->macro == Macro::kBind) {
      const TypePtr init = Visit(e->args[0].get());
      e->slot = next_slot_++;
      scope_.push_back({e->var, e->slot, init});
      TypePtr body = Visit(e->args[1].get());
      scope_.pop_back();
      return body;
    }
    const TypePtr range = Visit(e->args[0].get());
    TypePtr first;
    TypePtr second;
    const bool two = !e->var2.empty();
    switch (range->kind) {
      case TypeKind::kList:
        first = two ? Type::Of(TypeKind::kInt) : range->a;
        second = range->a;
        break;
      case TypeKind::kMap:
        first = range->a;
        second = range->b;
        break;
      case TypeKind::kDyn:
        first = kDyn;
        second = kDyn;
        break;
      default:
        Fail(e->args[0].get(), "expression of type '" + TypeString(range) +
                                   "' cannot be range of a comprehension (must be list, map, or "
                                   "dynamic)");
    }
    e->slot = next_slot_;
    next_slot_ += two ? 2 : 1;
    scope_.push_back({e->var, e->slot, first});
    if (two) scope_.push_back({e->var2, e->slot + 1, second});
    std::vector<TypePtr> bodies;
    for (size_t i = 1; i < e->args.size(); ++i) bodies.push_back(Visit(e->args[i].get()));
    scope_.pop_back();
    if (two) scope_.pop_back();
    // The macros expand to folds whose steps are `_&&_`/`_||_` (all, exists) or a
    // `_?_:_` over the accumulator (the others); a non-bool predicate fails there.
    auto ternary = [&](const TypePtr& accumulator) {
      Bindings b;
      if (!Unify(kBool, bodies[0], &b)) {
        Fail(e, "found no matching overload for '_?_:_' applied to '(" + TypeString(bodies[0]) +
                    ", " + TypeString(accumulator) + ", " + TypeString(accumulator) + ")'");
      }
      return accumulator;
    };
    switch (e->macro) {
      case Macro::kAll:
      case Macro::kExists:
        RequireBool(e->args[1].get(), bodies[0]);
        return kBool;
      case Macro::kExistsOne:
        ternary(Type::Of(TypeKind::kInt));
        return kBool;
      case Macro::kFilter:
        return ternary(Type::ListOf(first));
      case Macro::kSortBy: {
        const TypeKind k = bodies[0]->kind;
        if (range->kind == TypeKind::kMap ||
            (k != TypeKind::kDyn && k != TypeKind::kInt && k != TypeKind::kUint &&
             k != TypeKind::kDouble && k != TypeKind::kBool && k != TypeKind::kString &&
             k != TypeKind::kBytes)) {
          Fail(e, "found no matching overload for '@sortByAssociatedKeys' applied to '" +
                      TypeString(range) + ".(list(" + TypeString(bodies[0]) + "))'");
        }
        return range->kind == TypeKind::kList ? range : kDyn;
      }
      case Macro::kMap:  // the transform is last, after an optional filter
      case Macro::kTransformList: {
        TypePtr out = Type::ListOf(bodies.back());
        return e->has_filter ? ternary(out) : out;
      }
      case Macro::kTransformMap: {
        TypePtr out = Type::MapOf(range->kind == TypeKind::kList ? Type::Of(TypeKind::kInt) : first,
                                  bodies.back());
        return e->has_filter ? ternary(out) : out;
      }
      default:
        return kDyn;
    }
  }

  void Defer(std::string message) {
    if (deferred_.empty()) deferred_ = std::move(message);
  }

  std::vector<Var> scope_;
  int next_slot_ = kDeviceSlot + 1;
  std::string deferred_;
};

}  // namespace

bool Check(Expr* root, int* slots, ParseError* error) {
  Checker checker;
  try {
    checker.Visit(root);
  } catch (const Failure& f) {
    error->offset = f.offset;
    error->message = f.message;
    error->plain = f.plain;
    return false;
  }
  if (!checker.deferred().empty()) {
    error->offset = 0;
    error->message = checker.deferred();
    error->plain = true;
    return false;
  }
  *slots = checker.slots();
  return true;
}

}  // namespace berth::cel
