#ifndef BERTH_PKG_API_FIELD_PATH_H_
#define BERTH_PKG_API_FIELD_PATH_H_

// Internal to pkg/api: how the JSON and protobuf decoders name the field a DecodeError is about.

#include <cstddef>
#include <string>
#include <string_view>

#include "pkg/api/errors.h"

namespace berth::api {

// The JSON path of the field being decoded (in either encoding), kept as a chain of stack frames so
// the common (valid) case never builds a string; str() materializes it only for an error message.
//
// A FieldPath points at its parent, so a parent must outlive its children: Field()/Index() are
// disabled on temporaries, which rules out the dangling chain a.Field("b").Field("c").
class FieldPath {
 public:
  explicit FieldPath(std::string_view root) : key_(root) {}
  FieldPath(const FieldPath&) = delete;
  FieldPath& operator=(const FieldPath&) = delete;

  FieldPath Field(std::string_view key) const& { return FieldPath(this, key); }
  FieldPath Field(std::string_view key) const&& = delete;
  FieldPath Index(size_t index) const& { return FieldPath(this, index); }
  FieldPath Index(size_t index) const&& = delete;

  // The object member this path names (empty for array elements and an unnamed root).
  std::string_view key() const { return key_; }

  std::string str() const {
    if (parent_ == nullptr) {
      return std::string(key_);
    }
    std::string out = parent_->str();
    if (is_index_) {
      out += '[';
      out += std::to_string(index_);
      out += ']';
    } else {
      if (!out.empty()) {
        out += '.';
      }
      out += key_;
    }
    return out;
  }

 private:
  FieldPath(const FieldPath* parent, std::string_view key) : parent_(parent), key_(key) {}
  FieldPath(const FieldPath* parent, size_t index)
      : parent_(parent), index_(index), is_index_(true) {}

  const FieldPath* parent_ = nullptr;
  std::string_view key_;
  size_t index_ = 0;
  bool is_index_ = false;
};

// Throws DecodeError for the field at `path` ("(object)" for the unnamed root).
[[noreturn]] inline void FailAt(const FieldPath& path, const std::string& problem) {
  std::string field = path.str();
  if (field.empty()) {
    field = "(object)";
  }
  throw DecodeError(field, problem);
}

}  // namespace berth::api

#endif  // BERTH_PKG_API_FIELD_PATH_H_
