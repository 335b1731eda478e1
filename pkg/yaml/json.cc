#include <yaml-cpp/yaml.h>

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/api/utf8.h"
#include "pkg/yaml/yaml.h"

namespace berth::yaml {

std::string Child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

// One step of the path from the conversion's root to the value at hand, on the stack of the
// recursion. Building the path string for every value would copy it once per value, which a long
// key above many values makes quadratic; links are spelled out only for a problem.
struct JsonConverter::PathLink {
  const PathLink* parent = nullptr;
  const std::string* root = nullptr;  // The caller's path; set on the root link only.
  std::string_view key;               // A mapping key, when not an index.
  size_t index = 0;
  bool is_index = false;
};

namespace {

// A key in a problem's path is cut to this many bytes (at a character boundary), as Quote cuts a
// value, so that every problem's message stays small however long the keys above it are.
constexpr size_t kMaxPathKeyBytes = 100;

std::string CutKey(std::string_view key) {
  if (key.size() <= kMaxPathKeyBytes) return std::string(key);
  size_t n = kMaxPathKeyBytes;
  // Keys in a path are valid UTF-8; back up to the first byte of a character.
  while (n > 0 && (static_cast<unsigned char>(key[n]) & 0xC0) == 0x80) n--;
  return std::string(key.substr(0, n)) + "...";
}

}  // namespace

void JsonConverter::Report(const PathLink& path, const std::string& message) {
  std::vector<const PathLink*> links;
  for (const PathLink* link = &path; link != nullptr; link = link->parent) links.push_back(link);
  std::string out;
  for (auto it = links.rbegin(); it != links.rend(); ++it) {
    const PathLink& link = **it;
    if (link.root != nullptr) {
      out = *link.root;
    } else if (link.is_index) {
      out = Index(out, link.index);
    } else {
      out = Child(out, CutKey(link.key));
    }
  }
  fail_(out, message);
}

bool JsonConverter::Spend(size_t bytes, const PathLink& path) {
  if (bytes <= budget_->max_bytes_ - budget_->bytes_) {
    budget_->bytes_ += bytes;
    return true;
  }
  budget_->spent_ = true;
  Report(path, "keys and values add up to more than " + std::to_string(budget_->max_bytes_) +
                   " bytes (an alias counts the whole anchored value each time it is used)");
  return false;
}

nlohmann::json JsonConverter::Convert(const YAML::Node& node, const std::string& path) {
  PathLink root;
  root.root = &path;
  return Convert(node, root, 0);
}

nlohmann::json JsonConverter::Convert(const YAML::Node& node, const PathLink& path, int depth) {
  if (budget_->spent_) {
    return nullptr;
  }
  if (budget_->values_ == budget_->max_values_) {
    budget_->spent_ = true;
    Report(path, too_many_);
    return nullptr;
  }
  budget_->values_++;
  if (depth > kMaxDepth) {
    Report(path, "nested more than " + std::to_string(kMaxDepth) + " levels deep");
    return nullptr;
  }
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Scalar: {
      // Counted before anything reads or copies the scalar: it may be an alias's.
      if (!Spend(node.Scalar().size(), path)) {
        return nullptr;
      }
      Scalar s = Resolve(node);
      switch (s.kind) {
        case Scalar::Kind::kNull:
          return nullptr;
        case Scalar::Kind::kBool:
          return s.b;
        case Scalar::Kind::kInt:
          return s.i;
        case Scalar::Kind::kUint:
          return s.u;
        case Scalar::Kind::kFloat:
          if (!std::isfinite(s.f)) {
            Report(path, "number " + node.Scalar() + " cannot be represented in JSON");
            return nullptr;
          }
          return s.f;
        case Scalar::Kind::kString:
          if (!api::IsValidUtf8(node.Scalar())) {
            Report(path, kNotUtf8);
            return nullptr;
          }
          return node.Scalar();
      }
      return nullptr;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      PathLink item_path;
      item_path.parent = &path;
      item_path.is_index = true;
      for (const auto& item : node) {
        out.push_back(Convert(item, item_path, depth + 1));
        if (budget_->spent_) {
          return nullptr;
        }
        item_path.index++;
      }
      return out;
    }
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) {
          Report(path, "mapping keys must be strings, got " + Describe(entry.first));
          continue;
        }
        const std::string& key = entry.first.Scalar();
        if (!Spend(key.size(), path)) {
          return nullptr;
        }
        if (!api::IsValidUtf8(key)) {
          Report(path, "a mapping key is not valid UTF-8");
          continue;
        }
        PathLink child;
        child.parent = &path;
        child.key = key;
        if (out.contains(key)) {
          Report(child, "duplicate key");
          continue;
        }
        out[key] = Convert(entry.second, child, depth + 1);
        if (budget_->spent_) {
          return nullptr;
        }
      }
      return out;
    }
  }
  return nullptr;
}

}  // namespace berth::yaml
