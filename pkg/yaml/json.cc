#include <yaml-cpp/yaml.h>

#include "pkg/api/utf8.h"
#include "pkg/yaml/yaml.h"

namespace berth::yaml {

std::string Child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

nlohmann::json JsonConverter::Convert(const YAML::Node& node, const std::string& path, int depth) {
  if (*values_left_ == 0) {
    return nullptr;
  }
  if (--*values_left_ == 0) {
    fail_(path, too_many_);
    return nullptr;
  }
  if (depth > kMaxDepth) {
    fail_(path, "nested more than " + std::to_string(kMaxDepth) + " levels deep");
    return nullptr;
  }
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Scalar: {
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
            fail_(path, "number " + node.Scalar() + " cannot be represented in JSON");
            return nullptr;
          }
          return s.f;
        case Scalar::Kind::kString:
          if (!api::IsValidUtf8(node.Scalar())) {
            fail_(path, kNotUtf8);
            return nullptr;
          }
          return node.Scalar();
      }
      return nullptr;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      size_t i = 0;
      for (const auto& item : node) {
        out.push_back(Convert(item, Index(path, i++), depth + 1));
      }
      return out;
    }
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) {
          fail_(path, "mapping keys must be strings, got " + Describe(entry.first));
          continue;
        }
        const std::string& key = entry.first.Scalar();
        if (!api::IsValidUtf8(key)) {
          fail_(path, "a mapping key is not valid UTF-8");
          continue;
        }
        std::string child = Child(path, key);
        if (out.contains(key)) {
          fail_(child, "duplicate key");
          continue;
        }
        out[key] = Convert(entry.second, child, depth + 1);
      }
      return out;
    }
  }
  return nullptr;
}

}  // namespace berth::yaml
