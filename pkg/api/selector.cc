#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string_view>

#include "pkg/api/types.h"

namespace berth::api {

bool ParseInt64(std::string_view text, int64_t* out) {
  // std::from_chars takes '-' but not '+', and must not see a second sign after a '+'.
  if (!text.empty() && text[0] == '+') {
    text.remove_prefix(1);
    if (!text.empty() && text[0] == '-') {
      return false;
    }
  }
  if (text.empty()) {
    return false;
  }
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 10);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return false;
  }
  *out = value;
  return true;
}

bool Requirement::MatchesValue(std::string_view value) const {
  switch (op) {
    case SelectorOperator::kIn:
      return std::binary_search(values.begin(), values.end(), value);
    case SelectorOperator::kNotIn:
      return !std::binary_search(values.begin(), values.end(), value);
    case SelectorOperator::kExists:
      return true;
    case SelectorOperator::kDoesNotExist:
      return false;
    case SelectorOperator::kGt:
    case SelectorOperator::kLt: {
      int64_t n = 0;
      if (!ParseInt64(value, &n)) {
        return false;
      }
      return op == SelectorOperator::kGt ? n > number : n < number;
    }
  }
  return false;
}

bool Requirement::Matches(const Labels& labels) const {
  const std::string* value = labels.Find(key);
  if (value == nullptr) {
    return op == SelectorOperator::kNotIn || op == SelectorOperator::kDoesNotExist;
  }
  return MatchesValue(*value);
}

bool LabelSelector::Matches(const Labels& labels) const {
  return std::all_of(requirements.begin(), requirements.end(),
                     [&](const Requirement& r) { return r.Matches(labels); });
}

bool NodeSelectorTerm::Matches(const Labels& node_labels, std::string_view node_name) const {
  if (match_expressions.empty() && match_fields.empty()) {
    return false;
  }
  for (const Requirement& r : match_expressions) {
    if (!r.Matches(node_labels)) {
      return false;
    }
  }
  // Decoding admits only the metadata.name field, so every field requirement is about the name.
  for (const Requirement& r : match_fields) {
    if (!r.MatchesValue(node_name)) {
      return false;
    }
  }
  return true;
}

bool NodeSelector::Matches(const Labels& node_labels, std::string_view node_name) const {
  return std::any_of(terms.begin(), terms.end(),
                     [&](const NodeSelectorTerm& t) { return t.Matches(node_labels, node_name); });
}

}  // namespace berth::api
