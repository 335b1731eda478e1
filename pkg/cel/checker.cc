#include "pkg/cel/checker.h"

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
    std::vector<TypePtr> args;
    for (auto& a : e->args) args.push_back(Visit(a.get()));
    TypePtr kBool = Type::Of(TypeKind::kBool);
    if (e->name == "_&&_" || e->name == "_||_") {
      Bindings b;
      if (!Unify(kBool, args[0], &b) || !Unify(kBool, args[1], &b)) {
        Fail(e, "found no matching overload for '" + e->name + "' applied to '" +
                    Signature(args, false) + "'");
      }
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
    if (overloads == nullptr) {
      if (IsUnsupportedFunction(e->name)) {
        Fail(e, "function '" + e->name + "' is not supported by Berth's CEL evaluator");
      }
      Fail(e, "undeclared reference to '" + e->name + "' (in container '')");
    }
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
      bool declared = false;
      for (const Overload* o : *overloads) declared = declared || o->member == e->member;
      if (!declared) Fail(e, "undeclared reference to '" + e->name + "' (in container '')");
      Fail(e, "found no matching overload for '" + e->name + "' applied to '" +
                  Signature(args, e->member) + "'");
    }
    return mixed ? Type::Of(TypeKind::kDyn) : result;
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
    return Type::ListOf(Homogeneous(items));
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
    auto require_bool = [&](size_t i, const char* op) {
      Bindings b;
      if (!Unify(kBool, bodies[i], &b)) {
        Fail(e->args[i + 1].get(), std::string("found no matching overload for '") + op +
                                       "' applied to '(bool, " + TypeString(bodies[i]) + ")'");
      }
    };
    switch (e->macro) {
      case Macro::kAll:
        require_bool(0, "_&&_");
        return kBool;
      case Macro::kExists:
        require_bool(0, "_||_");
        return kBool;
      case Macro::kExistsOne:
        require_bool(0, "_?_:_");
        return kBool;
      case Macro::kFilter:
        require_bool(0, "_?_:_");
        return Type::ListOf(first);
      case Macro::kMap:  // the transform is last, after an optional filter
      case Macro::kTransformList:
        if (e->has_filter) require_bool(0, "_?_:_");
        return Type::ListOf(bodies.back());
      case Macro::kTransformMap:
        if (e->has_filter) require_bool(0, "_?_:_");
        return Type::MapOf(range->kind == TypeKind::kList ? Type::Of(TypeKind::kInt) : first,
                           bodies.back());
      default:
        return kDyn;
    }
  }

  std::vector<Var> scope_;
  int next_slot_ = kDeviceSlot + 1;
};

}  // namespace

bool Check(Expr* root, int* slots, ParseError* error) {
  Checker checker;
  try {
    checker.Visit(root);
  } catch (const Failure& f) {
    error->offset = f.offset;
    error->message = f.message;
    return false;
  }
  *slots = checker.slots();
  return true;
}

}  // namespace berth::cel
