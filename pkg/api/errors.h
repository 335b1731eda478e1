#ifndef BERTH_PKG_API_ERRORS_H_
#define BERTH_PKG_API_ERRORS_H_

#include <stdexcept>
#include <string>

namespace berth::api {

// Raised when an object from the apiserver (or a config file) does not have the shape Berth
// needs. The message always names the JSON field path, e.g.
// "spec.containers[0].resources.requests.cpu: invalid quantity \"1x\"".
class DecodeError : public std::runtime_error {
 public:
  DecodeError(const std::string& field, const std::string& problem)
      : std::runtime_error(field + ": " + problem), field_(field) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

}  // namespace berth::api

#endif  // BERTH_PKG_API_ERRORS_H_
