#ifndef BERTH_PKG_API_CODEC_H_
#define BERTH_PKG_API_CODEC_H_

// JSON <-> slim objects. Decoders read only the fields in pkg/api/types.h, validate what they
// read, and throw api::DecodeError naming the field path on anything malformed, so one bad
// object is reported and skipped by the caller instead of being half-read.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "pkg/api/quantity.h"
#include "pkg/api/types.h"

namespace berth::api {

Pod DecodePod(const nlohmann::json& object);
Node DecodeNode(const nlohmann::json& object);
// Reads an object's metadata as DecodePod and DecodeNode do (metadata.name required); the
// decoders of other kinds (pkg/api/resources_codec.h) share it.
ObjectMeta DecodeObjectMeta(const nlohmann::json& object);

// Parses a ResourceList object ({"cpu": "100m", ...}); `field` prefixes error paths.
ResourceList DecodeResourceList(const nlohmann::json& object, const std::string& field);
// Parses a metav1.LabelSelector object.
LabelSelector DecodeLabelSelector(const nlohmann::json& object, const std::string& field);
// Parses a v1.NodeSelectorTerm object.
NodeSelectorTerm DecodeNodeSelectorTerm(const nlohmann::json& object, const std::string& field);
// Parses a v1.NodeSelector object ({"nodeSelectorTerms": [...]}).
NodeSelector DecodeNodeSelector(const nlohmann::json& object, const std::string& field);
// The API's name of a selector operator ("In", "NotIn", ...), as DecodeNodeSelector reads it.
std::string_view SelectorOperatorName(SelectorOperator op);
// Parses a pod or node condition, or a metav1.Condition: type, status, reason and message.
Condition DecodeCondition(const nlohmann::json& object, const std::string& field);
Toleration DecodeToleration(const nlohmann::json& object, const std::string& field);
Taint DecodeTaint(const nlohmann::json& object, const std::string& field);

Affinity DecodeAffinity(const nlohmann::json& object, const std::string& field);
TopologySpreadConstraint DecodeTopologySpreadConstraint(const nlohmann::json& object,
                                                        const std::string& field);

// The string forms the apiserver serves; false for a value Berth does not know.
bool ParseTolerationOperator(std::string_view text, TolerationOperator* out);
bool ParseTolerationEffect(std::string_view text, TaintEffect* out);
// A node taint's effect: one of the three, never empty (a toleration's empty effect means all).
bool ParseTaintEffect(std::string_view text, TaintEffect* out);
bool ParsePreemptionPolicy(std::string_view text, PreemptionPolicy* out);
// The names the decoders read, for writing objects back (pkg/api/object_encode.h).
std::string_view TolerationOperatorName(TolerationOperator op);  // "Equal" or "Exists".
std::string_view PreemptionPolicyName(PreemptionPolicy policy);
std::string_view WhenUnsatisfiableName(WhenUnsatisfiable when);
std::string_view NodeInclusionPolicyName(NodeInclusionPolicy policy);

// An amount as ResourceList holds it: cpu in millicores, every other resource in whole units.
int64_t ResourceAmount(std::string_view resource, const Quantity& quantity);

// What DecodePod does once a pod's fields are read, shared with the protobuf decoder so both
// encodings give the same Pod: the apiserver's defaults for an empty scheduler name and port
// protocol, only the PodScheduled condition kept, then ComputePodRequests (pkg/api/requests.h).
void FinishDecodedPod(Pod& pod);

}  // namespace berth::api

#endif  // BERTH_PKG_API_CODEC_H_
