#ifndef BERTH_PKG_API_OBJECT_ENCODE_H_
#define BERTH_PKG_API_OBJECT_ENCODE_H_

// Pods and nodes back to the apiserver's v1 JSON, for scheduler extenders (which receive the pod
// and, when not nodeCacheCapable, whole Node objects). The shape is what Go's encoding/json writes
// for k8s.io/api/core/v1: camelCase members in the Go types' order, omitempty members left out,
// quantities as canonical strings ("100m", "1Gi"), timestamps as served (RFC 3339).
//
// Only what pkg/api/types.h holds is written, so decoding the output with DecodePod / DecodeNode
// (pkg/api/codec.h) gives back an equal object. What an extender will NOT receive, because Berth
// does not decode it:
//   - metadata: generateName, finalizers, deletionGracePeriodSeconds, managedFields, the
//     kubectl.kubernetes.io/last-applied-configuration annotation, ownerReferences'
//     blockOwnerDeletion (and controller when false);
//   - containers: command, args, env, envFrom, workingDir, probes, lifecycle, securityContext,
//     volumeMounts, resizePolicy, restartPolicyRules, port names; resources.claims;
//     ephemeral containers;
//   - pod spec: restartPolicy, serviceAccountName, dnsPolicy, securityContext, imagePullSecrets,
//     hostname, subdomain, hostPID, hostIPC, runtimeClassName, readinessGates, os, and the other
//     spec fields scheduling does not read; of each volume source only the members listed on
//     api::Volume (e.g. {"persistentVolumeClaim": {"claimName": ..., "readOnly": ...}}, other
//     sources as an empty object);
//   - pod status: conditions other than PodScheduled and DisruptionTarget, every condition's
//     times, hostIP(s), podIP(s), qosClass, container statuses, message, reason;
//   - node: podCIDR(s), providerID, taints' timeAdded, addresses, nodeInfo, daemonEndpoints,
//     volumesInUse/volumesAttached, runtimeHandlers, features, conditions' times.
// Quantities come back in canonical form without their original suffix: cpu in millicores or
// cores, memory, ephemeral-storage and hugepages-* in the shorter of the binary and decimal forms,
// everything else in decimal. Bytes that are not UTF-8 (possible after a protobuf decode) are sent
// as U+FFFD, as Go's encoding/json does.
//
// Thread-safe: the functions read their argument only.

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "pkg/api/types.h"

namespace berth::api {

nlohmann::json EncodePod(const Pod& pod);
nlohmann::json EncodeNode(const Node& node);

// The same documents written straight to text (members in the Go types' order), appended to *out:
// what an extender request is built from, several times faster than EncodePod(...).dump().
void AppendPodJson(const Pod& pod, std::string* out);
void AppendNodeJson(const Node& node, std::string* out);

// Appends `text` as a JSON string, as the two above write strings: quotes, backslashes and control
// characters escaped (\n, \t, ... or \u00XX), bytes that are not UTF-8 replaced by U+FFFD,
// everything else copied.
void AppendJsonString(std::string_view text, std::string* out);

}  // namespace berth::api

#endif  // BERTH_PKG_API_OBJECT_ENCODE_H_
