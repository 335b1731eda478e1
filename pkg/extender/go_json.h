#ifndef BERTH_PKG_EXTENDER_GO_JSON_H_
#define BERTH_PKG_EXTENDER_GO_JSON_H_

// Reading JSON the way Go's encoding/json fills a struct, for responses from services written
// against kube-scheduler (extenders answer `nodenames`, `failedNodes`, `host` as often as
// `NodeNames`, `FailedNodes`, `Host`): a struct field matches its key whatever the case (with Go's
// folding, so "ſcore" is Score), a later duplicate wins, unknown fields are skipped without being
// decoded, null leaves a field unset, and the first JSON value is read with anything after it
// ignored. Only what a Shape names is kept, so an extender's echo of 5,000 nodes costs their names,
// not their objects. Pure; thread-safe.

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace berth::extender {

// A response that is not the JSON a field expects; the message reads as Go's ("json: cannot
// unmarshal string into Go struct field ExtenderFilterResult.NodeNames of type []string").
class ResponseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What of a JSON value to keep. Shapes are built once (static) and outlive every decode.
class Shape {
 public:
  enum class Kind { kSkip, kValue, kStruct, kArray, kMap };

  // Kept whole, as written (map keys and values, strings, numbers).
  static Shape Value() { return Shape(Kind::kValue); }
  // An object whose keys are Go struct fields: `fields` names them in lower case; others are
  // skipped.
  static Shape Struct(std::initializer_list<std::pair<std::string_view, const Shape*>> fields) {
    Shape s(Kind::kStruct);
    s.fields_.assign(fields.begin(), fields.end());
    return s;
  }
  // An array of `items`.
  static Shape Array(const Shape* items) {
    Shape s(Kind::kArray);
    s.items_ = items;
    return s;
  }
  // An object with keys kept as written (a Go map), each value of shape `items`.
  static Shape Map(const Shape* items) {
    Shape s(Kind::kMap);
    s.items_ = items;
    return s;
  }

  Kind kind() const { return kind_; }
  const Shape* items() const { return items_; }
  // The field's shape for a key as sent (folded here); null when the struct has no such field.
  const Shape* Field(std::string_view key) const;

 private:
  explicit Shape(Kind kind) : kind_(kind) {}
  Kind kind_;
  std::vector<std::pair<std::string_view, const Shape*>> fields_;
  const Shape* items_ = nullptr;
};

// Go's case folding of a struct key: ASCII lower case, plus the two non-ASCII letters that fold
// to ASCII ones (U+212A KELVIN SIGN is 'k', U+017F LONG S is 's').
std::string FoldKey(std::string_view key);

// The first JSON value of `body` with only what `shape` keeps; struct keys folded. Throws
// ResponseError for malformed JSON (naming the byte), an empty body ("EOF"), or nesting deeper
// than the parser allows.
nlohmann::json DecodePruned(std::string_view body, const Shape& shape);

// Typed reads of a pruned value, failing as Go does when the JSON type does not fit. `where` is
// the Go struct field ("ExtenderFilterResult.NodeNames") for messages, empty for the top-level
// value. Null reads as unset.
// Throws the ResponseError Go gives for `value` where `go_type` was wanted.
[[noreturn]] void ThrowMismatch(const nlohmann::json& value, std::string_view where,
                                std::string_view go_type);
void ExpectType(const nlohmann::json& value, nlohmann::json::value_t type, std::string_view where,
                std::string_view go_type);
std::string ReadString(const nlohmann::json& value, std::string_view where);
int64_t ReadInt64(const nlohmann::json& value, std::string_view where);

}  // namespace berth::extender

#endif  // BERTH_PKG_EXTENDER_GO_JSON_H_
