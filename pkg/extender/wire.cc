#include "pkg/extender/wire.h"

#include <exception>
#include <nlohmann/json.hpp>

#include "pkg/api/errors.h"
#include "pkg/api/json_sax.h"
#include "pkg/api/object_encode.h"
#include "pkg/extender/go_json.h"

namespace berth::extender::wire {
namespace {

using json = nlohmann::json;

// A JSON string literal for `text`, written directly: a node name per node makes this the
// request's hot loop, where building and dumping an nlohmann::json per name cost several times
// the whole encoding.
void AppendString(std::string_view text, std::string* out) { api::AppendJsonString(text, out); }

void AppendPod(const api::Pod& pod, std::string* out) { api::AppendPodJson(pod, out); }

// What each response keeps.
const Shape kValue = Shape::Value();
const Shape kValues = Shape::Array(&kValue);
const Shape kValueMap = Shape::Map(&kValue);
const Shape kMetadata = Shape::Struct({{"name", &kValue}});
const Shape kNodeItem = Shape::Struct({{"metadata", &kMetadata}});
const Shape kNodeItems = Shape::Array(&kNodeItem);
const Shape kNodeList = Shape::Struct({{"items", &kNodeItems}});
const Shape kFilterResult = Shape::Struct({{"nodes", &kNodeList},
                                           {"nodenames", &kValues},
                                           {"failednodes", &kValueMap},
                                           {"failedandunresolvablenodes", &kValueMap},
                                           {"error", &kValue}});
const Shape kMetaPod = Shape::Struct({{"uid", &kValue}});
const Shape kMetaPods = Shape::Array(&kMetaPod);
const Shape kMetaVictims = Shape::Struct({{"pods", &kMetaPods}, {"numpdbviolations", &kValue}});
const Shape kMetaVictimsMap = Shape::Map(&kMetaVictims);
const Shape kPreemptionResult = Shape::Struct({{"nodenametometavictims", &kMetaVictimsMap}});
const Shape kBindingResult = Shape::Struct({{"error", &kValue}});

const json kNull;

// A folded struct field of `object`, or null.
const json& Field(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

// A Go struct at the top of a response: null reads as the zero value.
bool TopStruct(const json& value, std::string_view go_type) {
  if (value.is_null()) return false;
  ExpectType(value, json::value_t::object, "", go_type);
  return true;
}

std::optional<std::vector<std::string>> Strings(const json& value, std::string_view where) {
  if (value.is_null()) return std::nullopt;
  ExpectType(value, json::value_t::array, where, "[]string");
  std::vector<std::string> out;
  out.reserve(value.size());
  for (const json& item : value) out.push_back(ReadString(item, where));
  return out;
}

std::map<std::string, std::string> StringMap(const json& value, std::string_view where) {
  std::map<std::string, std::string> out;
  if (value.is_null()) return out;
  ExpectType(value, json::value_t::object, where, "v1.FailedNodesMap");
  for (const auto& [key, item] : value.items()) out[key] = ReadString(item, where);
  return out;
}

// Reads a HostPriorityList straight into scores, with DecodePruned's rules (fields matched
// after Go's folding, later duplicates win, unknown fields skipped unread, null as unset): for 500
// hosts, building the pruned tree and walking it cost about twice the rest of a prioritize call.
// The first type mismatch is kept and thrown once the value has been read, so that a syntax
// error anywhere wins, as in DecodePruned.
class HostPriorityDecoder {
 public:
  std::vector<framework::ExtenderScore> Take() {
    if (mismatch_) std::rethrow_exception(mismatch_);
    return std::move(out_);
  }

  bool SkipNextValue() const { return depth_ == 2 && field_ == Field::kUnknown && ignore_ == 0; }

  bool null() { return Scalar(json(nullptr)); }
  bool boolean(bool v) { return Scalar(json(v)); }
  bool number_integer(int64_t v) { return Scalar(json(v)); }
  bool number_unsigned(uint64_t v) { return Scalar(json(v)); }
  bool number_float(double v, const std::string&) { return Scalar(json(v)); }
  bool string(std::string& v) {
    if (ignore_ == 0 && depth_ == 2 && field_ == Field::kHost) {
      out_.back().host = std::move(v);
      return true;
    }
    return Scalar(json(std::move(v)));
  }
  bool start_object(size_t) { return Container(json::object()); }
  bool start_array(size_t) { return Container(json::array()); }
  bool key(std::string& k) {
    if (ignore_ == 0 && depth_ == 2) {
      const std::string folded = FoldKey(k);
      field_ = folded == "host"    ? Field::kHost
               : folded == "score" ? Field::kScore
                                   : Field::kUnknown;
    }
    return true;
  }
  bool end_object() { return End(); }
  bool end_array() { return End(); }

 private:
  enum class Field { kUnknown, kHost, kScore };

  // A value that is not the one expected where it stands: the mismatch is noted and, for a
  // container, its contents ignored.
  void Mismatch(const json& value, std::string_view where, std::string_view go_type) {
    if (mismatch_) return;
    try {
      ThrowMismatch(value, where, go_type);
    } catch (const ResponseError&) {
      mismatch_ = std::current_exception();
    }
  }

  bool Scalar(const json& value) {
    if (ignore_ > 0) return true;
    if (depth_ == 0) {
      if (!value.is_null()) Mismatch(value, "", "v1.HostPriorityList");
    } else if (depth_ == 1) {
      out_.emplace_back();  // Null is a zero HostPriority; anything else is no object.
      if (!value.is_null()) Mismatch(value, "v1.HostPriorityList", "v1.HostPriority");
    } else if (depth_ == 2) {
      try {
        if (field_ == Field::kHost) {
          out_.back().host = ReadString(value, "HostPriority.Host");
        } else if (field_ == Field::kScore) {
          out_.back().score = ReadInt64(value, "HostPriority.Score");
        }
      } catch (const ResponseError&) {
        if (!mismatch_) mismatch_ = std::current_exception();
      }
    }
    return true;
  }

  bool Container(const json& empty) {
    if (ignore_ > 0) {
      ignore_++;
      return true;
    }
    if (depth_ == 0) {
      if (!empty.is_array()) {
        Mismatch(empty, "", "v1.HostPriorityList");
        ignore_ = 1;
        return true;
      }
    } else if (depth_ == 1) {
      out_.emplace_back();
      if (!empty.is_object()) {
        Mismatch(empty, "v1.HostPriorityList", "v1.HostPriority");
        ignore_ = 1;
        return true;
      }
      field_ = Field::kUnknown;
    } else {
      // A container as host or score.
      Scalar(empty);
      ignore_ = 1;
      return true;
    }
    depth_++;
    return true;
  }

  bool End() {
    if (ignore_ > 0) {
      ignore_--;
      return true;
    }
    depth_--;
    return true;
  }

  std::vector<framework::ExtenderScore> out_;
  int depth_ = 0;   // 1 inside the list, 2 inside a HostPriority.
  int ignore_ = 0;  // Open containers being ignored (a mismatch's contents).
  Field field_ = Field::kUnknown;
  std::exception_ptr mismatch_;
};

}  // namespace

std::string ExtenderArgs(const api::Pod& pod, std::span<const framework::NodeInfo* const> nodes,
                         bool node_cache_capable) {
  std::string out = "{\"Pod\":";
  AppendPod(pod, &out);
  if (node_cache_capable) {
    out += ",\"Nodes\":null,\"NodeNames\":[";
    for (size_t i = 0; i < nodes.size(); i++) {
      if (i > 0) out += ',';
      AppendString(nodes[i]->name(), &out);
    }
    out += "]}";
    return out;
  }
  out += ",\"Nodes\":{\"metadata\":{},\"items\":[";
  for (size_t i = 0; i < nodes.size(); i++) {
    if (i > 0) out += ',';
    if (const api::Node* node = nodes[i]->node()) {
      api::AppendNodeJson(*node, &out);
    } else {
      out += "{}";
    }
  }
  out += "]},\"NodeNames\":null}";
  return out;
}

std::string PreemptionArgs(const api::Pod& pod,
                           const std::map<std::string, framework::ExtenderVictims>& victims,
                           bool node_cache_capable) {
  std::string out = "{\"Pod\":";
  AppendPod(pod, &out);
  out += node_cache_capable ? ",\"NodeNameToVictims\":null,\"NodeNameToMetaVictims\":{"
                            : ",\"NodeNameToVictims\":{";
  bool first = true;
  for (const auto& [node, v] : victims) {
    if (!first) out += ',';
    first = false;
    AppendString(node, &out);
    out += ":{\"Pods\":[";
    for (size_t i = 0; i < v.pods.size(); i++) {
      if (i > 0) out += ',';
      if (node_cache_capable) {
        out += "{\"UID\":";
        AppendString(v.pods[i]->pod->meta.uid, &out);
        out += '}';
      } else {
        AppendPod(*v.pods[i]->pod, &out);
      }
    }
    out += "],\"NumPDBViolations\":" + std::to_string(v.num_pdb_violations) + "}";
  }
  out += node_cache_capable ? "}}" : "},\"NodeNameToMetaVictims\":null}";
  return out;
}

std::string BindingArgs(const api::Pod& pod, const std::string& node) {
  return json{{"PodName", pod.meta.name},
              {"PodNamespace", pod.meta.namespace_},
              {"PodUID", pod.meta.uid},
              {"Node", node}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

FilterResult DecodeFilterResult(std::string_view body) {
  const json value = DecodePruned(body, kFilterResult);
  FilterResult out;
  if (!TopStruct(value, "v1.ExtenderFilterResult")) return out;
  out.node_names = Strings(Field(value, "nodenames"), "ExtenderFilterResult.NodeNames");
  if (const json& nodes = Field(value, "nodes"); !nodes.is_null()) {
    ExpectType(nodes, json::value_t::object, "ExtenderFilterResult.Nodes", "v1.NodeList");
    out.nodes.emplace();
    if (const json& items = Field(nodes, "items"); !items.is_null()) {
      ExpectType(items, json::value_t::array, "NodeList.items", "[]v1.Node");
      for (const json& item : items) {
        std::string name;
        if (!item.is_null()) {
          ExpectType(item, json::value_t::object, "NodeList.items", "v1.Node");
          if (const json& meta = Field(item, "metadata"); !meta.is_null()) {
            ExpectType(meta, json::value_t::object, "Node.metadata", "v1.ObjectMeta");
            name = ReadString(Field(meta, "name"), "ObjectMeta.name");
          }
        }
        out.nodes->push_back(std::move(name));
      }
    }
  }
  out.failed_nodes = StringMap(Field(value, "failednodes"), "ExtenderFilterResult.FailedNodes");
  out.failed_and_unresolvable_nodes = StringMap(Field(value, "failedandunresolvablenodes"),
                                                "ExtenderFilterResult.FailedAndUnresolvableNodes");
  out.error = ReadString(Field(value, "error"), "ExtenderFilterResult.Error");
  return out;
}

std::vector<framework::ExtenderScore> DecodeHostPriorityList(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) throw ResponseError("EOF");
  HostPriorityDecoder decoder;
  try {
    api::JsonSaxParser(body, "response").ParseFirst(&decoder);
  } catch (const api::DecodeError& e) {
    throw ResponseError(e.what());
  }
  return decoder.Take();
}

std::map<std::string, std::optional<MetaVictims>> DecodePreemptionResult(std::string_view body) {
  const json value = DecodePruned(body, kPreemptionResult);
  std::map<std::string, std::optional<MetaVictims>> out;
  if (!TopStruct(value, "v1.ExtenderPreemptionResult")) return out;
  const json& map = Field(value, "nodenametometavictims");
  if (map.is_null()) return out;
  ExpectType(map, json::value_t::object, "ExtenderPreemptionResult.NodeNameToMetaVictims",
             "map[string]*v1.MetaVictims");
  for (const auto& [node, item] : map.items()) {
    std::optional<MetaVictims>& victims = out[node];
    victims.reset();
    if (item.is_null()) continue;
    ExpectType(item, json::value_t::object, "ExtenderPreemptionResult.NodeNameToMetaVictims",
               "v1.MetaVictims");
    victims.emplace();
    victims->num_pdb_violations =
        ReadInt64(Field(item, "numpdbviolations"), "MetaVictims.NumPDBViolations");
    const json& pods = Field(item, "pods");
    if (pods.is_null()) continue;
    ExpectType(pods, json::value_t::array, "MetaVictims.Pods", "[]*v1.MetaPod");
    for (const json& pod : pods) {
      // A null entry is a nil *MetaPod, which upstream dereferences; here it names no pod.
      if (pod.is_null()) {
        throw ResponseError("MetaVictims.Pods of node " + node + " has a null entry");
      }
      ExpectType(pod, json::value_t::object, "MetaVictims.Pods", "v1.MetaPod");
      victims->pod_uids.push_back(ReadString(Field(pod, "uid"), "MetaPod.UID"));
    }
  }
  return out;
}

std::string DecodeBindingResult(std::string_view body) {
  const json value = DecodePruned(body, kBindingResult);
  if (!TopStruct(value, "v1.ExtenderBindingResult")) return "";
  return ReadString(Field(value, "error"), "ExtenderBindingResult.Error");
}

}  // namespace berth::extender::wire
