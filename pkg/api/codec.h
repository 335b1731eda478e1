#ifndef BERTH_PKG_API_CODEC_H_
#define BERTH_PKG_API_CODEC_H_

// JSON <-> slim objects. Decoders read only the fields in pkg/api/types.h, validate what they
// read, and throw api::DecodeError naming the field path on anything malformed, so one bad
// object is reported and skipped by the caller instead of being half-read.

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "pkg/api/types.h"

namespace berth::api {

Pod DecodePod(const nlohmann::json& object);
Node DecodeNode(const nlohmann::json& object);

// Parses a ResourceList object ({"cpu": "100m", ...}); `field` prefixes error paths.
ResourceList DecodeResourceList(const nlohmann::json& object, const std::string& field);
// Parses a metav1.LabelSelector object.
LabelSelector DecodeLabelSelector(const nlohmann::json& object, const std::string& field);
// Parses a v1.NodeSelectorTerm object.
NodeSelectorTerm DecodeNodeSelectorTerm(const nlohmann::json& object, const std::string& field);
Toleration DecodeToleration(const nlohmann::json& object, const std::string& field);
Taint DecodeTaint(const nlohmann::json& object, const std::string& field);

// Fills pod.requests, pod.non_zero_* and pod.host_ports from pod.spec (called by DecodePod;
// exposed for tests and for pods built in memory by benchmarks).
void ComputePodRequests(Pod& pod);

// The body of POST /api/v1/namespaces/{ns}/pods/{name}/binding.
std::string EncodeBinding(const Pod& pod, const std::string& node_name);

}  // namespace berth::api

#endif  // BERTH_PKG_API_CODEC_H_
