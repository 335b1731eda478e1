// Label selectors and node selector terms as objects carry them (pod affinity, topology spread,
// disruption budgets, node affinity), then matched against labels, as scheduling does with every
// node and pod. The input is a JSON object: "selector" (a metav1.LabelSelector), "term" (a
// v1.NodeSelectorTerm), "labels" and "node" (the labels and name matched against).
//
// Matching is checked against a reference that searches linearly, which needs neither the sorted
// values nor the sorted label map the real matcher relies on.

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/errors.h"
#include "pkg/api/types.h"
#include "test/fuzz/fuzz.h"

namespace berth::fuzz {
namespace {

using json = nlohmann::json;
using ReferenceLabels = std::map<std::string, std::string, std::less<>>;

// strconv.ParseInt(text, 10, 64) by way of strtoll, which also takes leading spaces.
bool ReferenceParseInt64(const std::string& text, int64_t* out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  if (text.find('\0') != std::string::npos) return false;
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) return false;
  *out = value;
  return true;
}

void CheckParseInt64(const std::string& text) {
  int64_t got = 0;
  int64_t want = 0;
  const bool ok = api::ParseInt64(text, &got);
  Require(ok == ReferenceParseInt64(text, &want), "ParseInt64 accepts what strtoll accepts");
  Require(!ok || got == want, "ParseInt64 reads the value strtoll reads");
}

bool ReferenceMatchesValue(const api::Requirement& r, const std::string& value) {
  switch (r.op) {
    case api::SelectorOperator::kIn:
      return std::find(r.values.begin(), r.values.end(), value) != r.values.end();
    case api::SelectorOperator::kNotIn:
      return std::find(r.values.begin(), r.values.end(), value) == r.values.end();
    case api::SelectorOperator::kExists:
      return true;
    case api::SelectorOperator::kDoesNotExist:
      return false;
    case api::SelectorOperator::kGt:
    case api::SelectorOperator::kLt: {
      int64_t n = 0;
      if (!ReferenceParseInt64(value, &n)) return false;
      return r.op == api::SelectorOperator::kGt ? n > r.number : n < r.number;
    }
  }
  return false;
}

bool ReferenceMatches(const api::Requirement& r, const ReferenceLabels& labels) {
  const auto it = labels.find(r.key);
  if (it == labels.end()) {
    return r.op == api::SelectorOperator::kNotIn || r.op == api::SelectorOperator::kDoesNotExist;
  }
  return ReferenceMatchesValue(r, it->second);
}

void CheckRequirement(const api::Requirement& r) {
  Require(std::is_sorted(r.values.begin(), r.values.end()), "requirement values are sorted");
  if (r.op == api::SelectorOperator::kGt || r.op == api::SelectorOperator::kLt) {
    int64_t n = 0;
    Require(r.values.size() == 1 && api::ParseInt64(r.values[0], &n) && n == r.number,
            "a Gt/Lt requirement holds its one value as its number");
  }
}

void CheckSelector(const json& selector, const api::Labels& labels,
                   const ReferenceLabels& reference) {
  api::LabelSelector decoded;
  try {
    decoded = api::DecodeLabelSelector(selector, "selector");
  } catch (const api::DecodeError&) {
    return;
  }
  bool want = true;
  for (const api::Requirement& r : decoded.requirements) {
    CheckRequirement(r);
    want = want && ReferenceMatches(r, reference);
  }
  Require(decoded.Matches(labels) == want, "a label selector matches as the reference does");
  Require(decoded.Empty() == decoded.requirements.empty(), "Empty() means no requirements");
}

void CheckTerm(const json& term, const api::Labels& labels, const ReferenceLabels& reference,
               const std::string& node) {
  api::NodeSelectorTerm decoded;
  try {
    decoded = api::DecodeNodeSelectorTerm(term, "term");
  } catch (const api::DecodeError&) {
    return;
  }
  bool want = !decoded.match_expressions.empty() || !decoded.match_fields.empty();
  for (const api::Requirement& r : decoded.match_expressions) {
    CheckRequirement(r);
    want = want && ReferenceMatches(r, reference);
  }
  for (const api::Requirement& r : decoded.match_fields) {
    CheckRequirement(r);
    want = want && ReferenceMatchesValue(r, node);
  }
  Require(decoded.Matches(labels, node) == want, "a node selector term matches as the reference");
}

void CheckFind(const api::Labels& labels, const ReferenceLabels& reference,
               const std::string& key) {
  const std::string* found = labels.Find(key);
  const auto want = reference.find(key);
  Require(want == reference.end() ? found == nullptr : found != nullptr && *found == want->second,
          "a label map finds exactly the keys it holds");
}

}  // namespace

void FuzzOneInput(std::string_view text) {
  const json input = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!input.is_object()) return;

  std::vector<api::Labels::Entry> entries;
  ReferenceLabels reference;
  if (const auto labels = input.find("labels"); labels != input.end() && labels->is_object()) {
    for (const auto& [key, value] : labels->items()) {
      if (!value.is_string()) continue;
      entries.emplace_back(key, value.get<std::string>());
      reference[key] = value.get<std::string>();
      CheckParseInt64(key);
      CheckParseInt64(value.get<std::string>());
    }
  }
  // Repeated keys (the last one wins) as a label map read from several sources would have.
  if (!entries.empty()) entries.push_back({entries.front().first, "again"});
  if (!entries.empty()) reference[entries.front().first] = "again";
  const api::Labels labels(entries);
  Require(labels.size() == reference.size(), "a label map keeps one entry per key");
  for (const auto& entry : reference) {
    CheckFind(labels, reference, entry.first);
    CheckFind(labels, reference, entry.first + "~");
  }
  CheckFind(labels, reference, "");

  std::string node;
  if (const auto name = input.find("node"); name != input.end() && name->is_string()) {
    node = name->get<std::string>();
  }
  if (const auto selector = input.find("selector"); selector != input.end()) {
    CheckSelector(*selector, labels, reference);
  }
  if (const auto term = input.find("term"); term != input.end()) {
    CheckTerm(*term, labels, reference, node);
  }
}

}  // namespace berth::fuzz
