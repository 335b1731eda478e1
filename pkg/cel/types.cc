#include "pkg/cel/types.h"

namespace berth::cel {

TypePtr Type::Of(TypeKind kind) {
  auto t = std::make_shared<Type>();
  t->kind = kind;
  return t;
}

TypePtr Type::ListOf(TypePtr elem) {
  auto t = std::make_shared<Type>();
  t->kind = TypeKind::kList;
  t->a = std::move(elem);
  return t;
}

TypePtr Type::MapOf(TypePtr key, TypePtr value) {
  auto t = std::make_shared<Type>();
  t->kind = TypeKind::kMap;
  t->a = std::move(key);
  t->b = std::move(value);
  return t;
}

TypePtr Type::Param(char name) {
  auto t = std::make_shared<Type>();
  t->kind = TypeKind::kParam;
  t->param = name;
  return t;
}

std::string TypeString(const TypePtr& t) {
  switch (t->kind) {
    case TypeKind::kDyn:
      return "dyn";
    case TypeKind::kNull:
      return "null";
    case TypeKind::kBool:
      return "bool";
    case TypeKind::kInt:
      return "int";
    case TypeKind::kUint:
      return "uint";
    case TypeKind::kDouble:
      return "double";
    case TypeKind::kString:
      return "string";
    case TypeKind::kBytes:
      return "bytes";
    case TypeKind::kList:
      return "list(" + TypeString(t->a) + ")";
    case TypeKind::kMap:
      return "map(" + TypeString(t->a) + ", " + TypeString(t->b) + ")";
    case TypeKind::kQuantity:
      return "kubernetes.Quantity";
    case TypeKind::kSemver:
      return "kubernetes.Semver";
    case TypeKind::kType:
      return "type";
    case TypeKind::kDevice:
      return "kubernetes.DRADevice";
    case TypeKind::kParam:
      return std::string(1, t->param);
  }
  return "dyn";
}

}  // namespace berth::cel
