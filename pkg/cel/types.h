#ifndef BERTH_PKG_CEL_TYPES_H_
#define BERTH_PKG_CEL_TYPES_H_

// The checker's static types. `dyn` is any value (the type of every device attribute, since
// attributes are scalars or lists decided only by the device); a type parameter stands for
// one type throughout an overload's signature.

#include <memory>
#include <string>

namespace berth::cel {

enum class TypeKind {
  kDyn,
  kNull,
  kBool,
  kInt,
  kUint,
  kDouble,
  kString,
  kBytes,
  kList,
  kMap,
  kQuantity,
  kSemver,
  kType,
  kDevice,  // the `device` variable's object type
  kParam,   // a type parameter of an overload signature
};

struct Type;
using TypePtr = std::shared_ptr<const Type>;

struct Type {
  TypeKind kind = TypeKind::kDyn;
  TypePtr a;       // list element or map key
  TypePtr b;       // map value
  char param = 0;  // kParam: 'A', 'B', ...

  static TypePtr Of(TypeKind kind);
  static TypePtr ListOf(TypePtr elem);
  static TypePtr MapOf(TypePtr key, TypePtr value);
  static TypePtr Param(char name);
};

// CEL's spelling of the type: "int", "list(string)", "map(string, dyn)", ...
std::string TypeString(const TypePtr& t);

}  // namespace berth::cel

#endif  // BERTH_PKG_CEL_TYPES_H_
