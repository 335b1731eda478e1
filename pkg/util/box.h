#ifndef BERTH_PKG_UTIL_BOX_H_
#define BERTH_PKG_UTIL_BOX_H_

// An optional value kept on the heap: std::optional's interface (and value semantics: copies are
// deep) in one pointer's room. For fields most objects leave unset, where std::optional would
// reserve the whole value in every object: a pod's affinity is 184 bytes in an optional and 8
// here, and the scheduler holds every pod of the cluster. Not thread-safe, as std::optional.

#include <memory>
#include <optional>
#include <utility>

namespace berth::util {

template <typename T>
class Box {
 public:
  using value_type = T;

  Box() = default;
  Box(std::nullopt_t) {}  // NOLINT(google-explicit-constructor): as std::optional.
  Box(const T& value)
      : value_(std::make_unique<T>(value)) {}  // NOLINT(google-explicit-constructor)
  Box(T&& value)  // NOLINT(google-explicit-constructor): as std::optional.
      : value_(std::make_unique<T>(std::move(value))) {}
  Box(const Box& other) : value_(other.value_ ? std::make_unique<T>(*other.value_) : nullptr) {}
  Box(Box&& other) noexcept = default;
  ~Box() = default;

  Box& operator=(const Box& other) {
    if (this != &other) value_ = other.value_ ? std::make_unique<T>(*other.value_) : nullptr;
    return *this;
  }
  Box& operator=(Box&& other) noexcept = default;
  Box& operator=(std::nullopt_t) {
    value_.reset();
    return *this;
  }
  Box& operator=(const T& value) {
    value_ = std::make_unique<T>(value);
    return *this;
  }
  Box& operator=(T&& value) {
    value_ = std::make_unique<T>(std::move(value));
    return *this;
  }

  template <typename... Args>
  T& emplace(Args&&... args) {
    value_ = std::make_unique<T>(std::forward<Args>(args)...);
    return *value_;
  }
  void reset() { value_.reset(); }

  bool has_value() const { return value_ != nullptr; }
  explicit operator bool() const { return value_ != nullptr; }

  // As std::optional: undefined when empty.
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return value_.get(); }
  const T* operator->() const { return value_.get(); }
  // Throws std::bad_optional_access when empty.
  T& value() {
    if (!value_) throw std::bad_optional_access();
    return *value_;
  }
  const T& value() const {
    if (!value_) throw std::bad_optional_access();
    return *value_;
  }

  friend bool operator==(const Box& a, const Box& b) {
    return a.has_value() == b.has_value() && (!a.has_value() || *a == *b);
  }
  friend bool operator==(const Box& a, std::nullopt_t) { return !a.has_value(); }

 private:
  std::unique_ptr<T> value_;
};

}  // namespace berth::util

#endif  // BERTH_PKG_UTIL_BOX_H_
