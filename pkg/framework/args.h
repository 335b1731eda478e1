#ifndef BERTH_PKG_FRAMEWORK_ARGS_H_
#define BERTH_PKG_FRAMEWORK_ARGS_H_

// The one way a plugin validates its pluginConfig args: every problem is collected (not just the
// first) and named by its field path inside the args, in kube-scheduler's field-error wording, so
// the configuration loader can report each one under its full path
// (profiles[0].pluginConfig[2].args.scoringStrategy.resources[1].weight: Invalid value: 0: ...).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/api/errors.h"

namespace berth::framework {

// One problem in a plugin's args. `field` is its path inside the args ("" for the args object
// itself); `detail` says what is wrong, starting with the error type as upstream's field errors
// do ("Invalid value: 0: must be positive", "Required value: ...", "unknown field").
struct ArgsFieldError {
  std::string field;
  std::string detail;

  // "<field>: <detail>", with "args" standing for the empty field.
  std::string ToString() const;
  bool operator==(const ArgsFieldError&) const = default;
};

// What a plugin's args parser throws for bad args. what() is upstream's aggregate text: the one
// error, or "[first, second, ...]". Invariant: errors() is not empty.
class InvalidArgs : public std::invalid_argument {
 public:
  explicit InvalidArgs(std::vector<ArgsFieldError> errors);
  const std::vector<ArgsFieldError>& errors() const { return errors_; }

 private:
  std::vector<ArgsFieldError> errors_;
};

// "parent.child" (just "child" under the args root).
std::string ChildField(std::string_view parent, std::string_view child);
// "parent[index]".
std::string IndexField(std::string_view parent, size_t index);

// Collects the problems found while reading one plugin's args; ThrowIfAny() then reports them all.
// Not thread-safe; one per parse.
class ArgsErrors {
 public:
  // "<field>: Invalid value: <value>: <detail>"; strings are shown quoted, numbers as written.
  void Invalid(const std::string& field, const nlohmann::json& value, std::string_view detail);
  // "<field>: Required value: <detail>".
  void Required(const std::string& field, std::string_view detail);
  // "<field>: Unsupported value: <value>: supported values: "A", "B"".
  void NotSupported(const std::string& field, const nlohmann::json& value,
                    const std::vector<std::string_view>& supported);
  // "<field>: Duplicate value: <value>".
  void Duplicate(const std::string& field, const nlohmann::json& value);
  // "<field>: Forbidden: <detail>".
  void Forbidden(const std::string& field, std::string_view detail);
  // "<field>: unknown field" (strict decoding: a misspelled field is an error, not ignored).
  void UnknownField(const std::string& field);
  // A problem worded by someone else (an embedded object's decoder).
  void Add(std::string field, std::string detail);
  // A problem an api decoder found in an object embedded in the args (a node selector term, a
  // topology spread constraint); its field is already a path inside the args.
  void Add(const api::DecodeError& error);

  // Checks that `value` at `field` is an object whose keys are all in `known`, recording an
  // error otherwise; "apiVersion" and "kind", which kube-scheduler files carry inside args, are
  // accepted at the root (`field` empty). Null counts as an absent (all-defaults) object. Returns
  // true when `value` is an object whose members may be read.
  bool CheckObject(const nlohmann::json& value, const std::vector<std::string_view>& known,
                   const std::string& field = "");

  // Reads the integer member `key` of `object` (whose path is `parent`) into `out` when present
  // and not null. Records an error and returns false when it is not an integer, or is outside
  // [min, max] (then `out_of_range` is the error's detail, e.g. "not in valid range [0, 100]").
  bool ReadInt(const nlohmann::json& object, std::string_view key, const std::string& parent,
               int64_t min, int64_t max, std::string_view out_of_range, int64_t* out);

  bool empty() const { return errors_.empty(); }
  const std::vector<ArgsFieldError>& errors() const { return errors_; }
  // Throws InvalidArgs with every error recorded, if any.
  void ThrowIfAny() const;

 private:
  std::vector<ArgsFieldError> errors_;
};

// For plugins that take no args: throws InvalidArgs unless `args` is null or an object holding at
// most apiVersion and kind.
void ExpectNoArgs(const nlohmann::json& args);

}  // namespace berth::framework

#endif  // BERTH_PKG_FRAMEWORK_ARGS_H_
