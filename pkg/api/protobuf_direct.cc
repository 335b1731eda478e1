// TryDecodeProtobufPod and TryDecodeProtobufNode: a v1.Pod or v1.Node message straight into
// api::Pod or api::Node.
//
// Invariant: for every input, either these return std::nullopt or they return exactly the object
// that DecodePod or DecodeNode over DecodeProtobufObject(...) gives for the same message. To keep
// that true without a second copy of codec.cc's validation, they read the same schema fields with
// the same wire primitives (protobuf_internal.h), hand the selector-heavy messages (affinity,
// topology spread) to codec.cc as the JSON the general path would build of them, finish a pod
// with the same FinishDecodedPod, and decline (NeedsGeneralPath) wherever the general path could
// differ: a value it would reject, a singular message sent twice (merged field by field there), a
// volume with more than one source.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/errors.h"
#include "pkg/api/field_path.h"
#include "pkg/api/protobuf.h"
#include "pkg/api/protobuf_internal.h"
#include "pkg/api/quantity.h"
#include "pkg/api/types.h"

namespace berth::api {
namespace {

// Thrown to hand a message to the general path; never escapes TryDecodeProtobufPod.
struct NeedsGeneralPath {};

// Errors found here are never reported (the general path reports them), so no path is built.
const FieldPath kUnreported("");

// A message's fields, read as the general path reads them.
class Fields : public MessageFields {
 public:
  explicit Fields(std::string_view message) : MessageFields(message, kUnreported) {}

  // For a singular message field: declines its second occurrence, which the general path merges.
  std::string_view Message(uint64_t* seen) const {
    const uint64_t bit = uint64_t{1} << (number() & 63);
    if ((*seen & bit) != 0) throw NeedsGeneralPath{};
    *seen |= bit;
    return Bytes();
  }
};

StringMap::Entry StringEntry(std::string_view entry) {
  return ReadMapEntry(entry, /*quantity_value=*/false, kUnreported);
}

// Sets one map<string, Quantity> entry; returns its resource name.
std::string SetQuantity(std::string_view entry, ResourceList* list) {
  auto [name, text] = ReadMapEntry(entry, /*quantity_value=*/true, kUnreported);
  Quantity quantity;
  std::string why;
  if (!Quantity::TryParse(text, &quantity, &why)) throw NeedsGeneralPath{};
  list->Set(name, ResourceAmount(name, quantity));
  return std::move(name);
}

void ReadRequirements(std::string_view message, ResourceRequirements* out) {
  Fields f(message);
  while (f.Next()) {
    if (f.number() == 1) {
      SetQuantity(f.Bytes(), &out->limits);
    } else if (f.number() == 2) {
      const std::string name = SetQuantity(f.Bytes(), &out->requests);
      out->has_cpu_request |= name == kResourceCPU;
      out->has_memory_request |= name == kResourceMemory;
    }
  }
}

void ReadOwnerReference(std::string_view message, OwnerReference* out) {
  Fields f(message);
  while (f.Next()) {
    switch (f.number()) {
      case 1:
        out->kind = f.String();
        break;
      case 3:
        out->name = f.String();
        break;
      case 4:
        out->uid = f.String();
        break;
      case 5:
        out->api_version = f.String();
        break;
      case 6:
        out->controller = f.Bool();
        break;
      default:
        break;
    }
  }
}

void ReadMeta(std::string_view message, ObjectMeta* meta) {
  std::vector<StringMap::Entry> labels;
  std::vector<StringMap::Entry> annotations;
  Fields f(message);
  while (f.Next()) {
    switch (f.number()) {
      case 1:
        meta->name = f.String();
        break;
      case 3:
        meta->namespace_ = f.String();
        break;
      case 5:
        meta->uid = f.String();
        break;
      case 6:
        meta->resource_version = f.String();
        break;
      case 7:
        meta->generation = f.Int64();
        break;
      case 8:
        if (auto text = TimeText(f.Bytes(), kUnreported)) meta->creation_timestamp = *text;
        break;
      case 9:
        if (auto text = TimeText(f.Bytes(), kUnreported)) meta->deletion_timestamp = *text;
        break;
      case 11:
        labels.push_back(StringEntry(f.Bytes()));
        break;
      case 12:
        if (auto entry = StringEntry(f.Bytes()); entry.first != kLastAppliedAnnotation) {
          annotations.push_back(std::move(entry));
        }
        break;
      case 13:
        ReadOwnerReference(f.Bytes(), &meta->owner_references.emplace_back());
        break;
      default:
        break;
    }
  }
  // Required; the general path names the field.
  if (meta->name.empty()) throw NeedsGeneralPath{};
  meta->labels = StringMap(std::move(labels));
  meta->annotations = StringMap(std::move(annotations));
}

void ReadPort(std::string_view message, ContainerPort* out) {
  Fields f(message);
  while (f.Next()) {
    switch (f.number()) {
      case 2:
        out->host_port = f.Int32();
        break;
      case 3:
        out->container_port = f.Int32();
        break;
      case 4:
        out->protocol = f.String();
        break;
      case 5:
        out->host_ip = f.String();
        break;
      default:
        break;
    }
  }
}

// Whether a VolumeMount message sets bindMountOptions (field 8).
bool SetsBindMountOptions(std::string_view volume_mount) {
  Fields m(volume_mount);
  bool sets = false;
  while (m.Next()) {
    if (m.number() == 8) {
      m.String();  // Read, and so checked, like every string on the general path.
      sets = true;
    }
  }
  return sets;
}

void ReadContainer(std::string_view message, bool init, Container* out) {
  uint64_t seen = 0;
  Fields f(message);
  while (f.Next()) {
    switch (f.number()) {
      case 1:
        out->name = f.String();
        break;
      case 2:
        out->image = f.String();
        break;
      case 6:
        ReadPort(f.Bytes(), &out->ports.emplace_back());
        break;
      case 8:
        ReadRequirements(f.Message(&seen), &out->resources);
        break;
      case 9:
        if (SetsBindMountOptions(f.Bytes())) out->bind_mount_options = true;
        break;
      case 24: {
        // Read (and so checked) for every container, as the general path does.
        const bool always = f.String() == "Always";
        out->restartable = init && always;
        break;
      }
      case 25: {
        // A repeated scalar field keeps its last value, as on the general path.
        std::string action;
        Fields rule(f.Bytes());
        while (rule.Next()) {
          if (rule.number() == 1) action = rule.String();
        }
        if (action == "RestartAllContainers") out->restarts_all_containers = true;
        break;
      }
      default:
        break;
    }
  }
}

// The members of one volume source that the volume plugins read, by the field numbers of
// protobuf.cc's source schemas (each source's own message in k8s.io/api).
void ReadSourceMembers(std::string_view source, std::string_view message, Volume* out) {
  // Field number -> where it goes; 0 for fields not read.
  struct Members {
    uint32_t claim_name = 0, read_only = 0, disk = 0, monitors = 0, pool = 0, driver = 0;
  };
  Members m;
  if (source == "persistentVolumeClaim") {
    m = {.claim_name = 1, .read_only = 2};
  } else if (source == "gcePersistentDisk") {
    m = {.read_only = 4, .disk = 1};
  } else if (source == "awsElasticBlockStore" || source == "cinder" || source == "portworxVolume") {
    m = {.disk = 1};
  } else if (source == "iscsi") {
    m = {.read_only = 6, .disk = 2};
  } else if (source == "rbd") {
    m = {.read_only = 8, .disk = 2, .monitors = 1, .pool = 4};
  } else if (source == "azureDisk") {
    m = {.disk = 2};
  } else if (source == "csi") {
    m = {.driver = 1};
  }
  Fields f(message);
  while (f.Next()) {
    const uint32_t n = f.number();
    if (n == 0) continue;
    if (n == m.claim_name) {
      out->claim_name = f.String();
    } else if (n == m.read_only) {
      out->read_only = f.Bool();
    } else if (n == m.disk) {
      out->disk = f.String();
    } else if (n == m.monitors) {
      out->rbd_monitors.push_back(f.String());
    } else if (n == m.pool) {
      out->rbd_pool = f.String();
    } else if (n == m.driver) {
      out->csi_driver = f.String();
    }
  }
}

// Every source is read through, as the general path reads each as a message; a volume naming
// more than one is left to it.
void ReadVolumeSource(std::string_view message, Volume* out) {
  Fields f(message);
  while (f.Next()) {
    const std::string_view source = VolumeSourceName(f.number());
    if (source.empty()) continue;
    if (!out->source.empty()) throw NeedsGeneralPath{};
    out->source = source;
    ReadSourceMembers(source, f.Bytes(), out);
  }
}

void ReadVolume(std::string_view message, Volume* out) {
  uint64_t seen = 0;
  Fields f(message);
  while (f.Next()) {
    if (f.number() == 1) {
      out->name = f.String();
    } else if (f.number() == 2) {
      ReadVolumeSource(f.Message(&seen), out);
    }
  }
}

void ReadToleration(std::string_view message, Toleration* out) {
  Fields f(message);
  while (f.Next()) {
    switch (f.number()) {
      case 1:
        out->key = f.String();
        break;
      case 2:
        if (!ParseTolerationOperator(f.String(), &out->op)) throw NeedsGeneralPath{};
        break;
      case 3:
        out->value = f.String();
        break;
      case 4:
        if (!ParseTolerationEffect(f.String(), &out->effect)) throw NeedsGeneralPath{};
        break;
      case 5:
        out->toleration_seconds = f.Int64();
        break;
      default:
        break;
    }
  }
}

void ReadSpec(std::string_view message, PodSpec* out) {
  uint64_t seen = 0;
  std::vector<StringMap::Entry> node_selector;
  Fields f(message);
  while (f.Next()) {
    switch (f.number()) {
      case 1:
        ReadVolume(f.Bytes(), &out->volumes.emplace_back());
        break;
      case 2:
        ReadContainer(f.Bytes(), /*init=*/false, &out->containers.emplace_back());
        break;
      case 7:
        node_selector.push_back(StringEntry(f.Bytes()));
        break;
      case 10:
        out->node_name = f.String();
        break;
      case 11:
        out->host_network = f.Bool();
        break;
      case 18:
        out->affinity = DecodeAffinity(ProtobufAffinityToJson(f.Message(&seen), kUnreported), "");
        break;
      case 19:
        out->scheduler_name = f.String();
        break;
      case 20:
        ReadContainer(f.Bytes(), /*init=*/true, &out->init_containers.emplace_back());
        break;
      case 22:
        ReadToleration(f.Bytes(), &out->tolerations.emplace_back());
        break;
      case 24:
        out->priority_class_name = f.String();
        break;
      case 25:
        out->priority = f.Int32();
        break;
      case 31:
        if (!ParsePreemptionPolicy(f.String(), &out->preemption_policy)) throw NeedsGeneralPath{};
        break;
      case 32:
        SetQuantity(f.Bytes(), &out->overhead);
        break;
      case 33:
        out->topology_spread_constraints.push_back(DecodeTopologySpreadConstraint(
            ProtobufSpreadConstraintToJson(f.Bytes(), kUnreported), ""));
        break;
      case 34: {
        // EphemeralContainer: field 1 is its common part, whose field 9 is volumeMounts.
        Fields ephemeral(f.Bytes());
        while (ephemeral.Next()) {
          if (ephemeral.number() != 1) continue;
          Fields common(ephemeral.Bytes());
          while (common.Next()) {
            if (common.number() == 9 && SetsBindMountOptions(common.Bytes())) {
              out->ephemeral_bind_mount_options = true;
            }
          }
        }
        break;
      }
      case 37:
        out->host_users = f.Bool();
        break;
      case 38: {
        std::string& gate = out->scheduling_gates.emplace_back();
        Fields g(f.Bytes());
        while (g.Next()) {
          if (g.number() == 1) gate = g.String();
        }
        break;
      }
      case 39: {
        PodResourceClaim& claim = out->resource_claims.emplace_back();
        Fields c(f.Bytes());
        while (c.Next()) {
          switch (c.number()) {
            case 1:
              claim.name = c.String();
              break;
            case 3:
              claim.resource_claim_name = c.String();
              break;
            case 4:
              claim.resource_claim_template_name = c.String();
              break;
            default:
              break;
          }
        }
        break;
      }
      case 40:
        ReadRequirements(f.Message(&seen), &out->resources.emplace());
        break;
      case 43: {
        std::string& group = out->scheduling_group.emplace();
        Fields g(f.Message(&seen));
        while (g.Next()) {
          if (g.number() == 1) group = g.String();
        }
        break;
      }
      default:
        break;
    }
  }
  out->node_selector = StringMap(std::move(node_selector));
}

void ReadCondition(std::string_view message, Condition* out) {
  Fields f(message);
  while (f.Next()) {
    switch (f.number()) {
      case 1:
        out->type = f.String();
        break;
      case 2:
        out->status = f.String();
        break;
      case 5:
        out->reason = f.String();
        break;
      case 6:
        out->message = f.String();
        break;
      default:
        break;
    }
  }
}

void ReadExtendedResourceClaimStatus(std::string_view message,
                                     PodExtendedResourceClaimStatus* out) {
  Fields f(message);
  while (f.Next()) {
    switch (f.number()) {
      case 1: {
        ContainerExtendedResourceRequest& mapping = out->request_mappings.emplace_back();
        Fields m(f.Bytes());
        while (m.Next()) {
          switch (m.number()) {
            case 1:
              mapping.container_name = m.String();
              break;
            case 2:
              mapping.resource_name = m.String();
              break;
            case 3:
              mapping.request_name = m.String();
              break;
            default:
              break;
          }
        }
        break;
      }
      case 2:
        out->resource_claim_name = f.String();
        break;
      default:
        break;
    }
  }
}

void ReadStatus(std::string_view message, PodStatus* out) {
  uint64_t seen = 0;
  Fields f(message);
  while (f.Next()) {
    switch (f.number()) {
      case 1:
        out->phase = f.String();
        break;
      case 2:
        ReadCondition(f.Bytes(), &out->conditions.emplace_back());
        break;
      case 7:
        if (auto text = TimeText(f.Bytes(), kUnreported)) out->start_time = *text;
        break;
      case 11:
        out->nominated_node_name = f.String();
        break;
      case 15: {
        PodResourceClaimStatus& claim = out->resource_claim_statuses.emplace_back();
        Fields c(f.Bytes());
        while (c.Next()) {
          switch (c.number()) {
            case 1:
              claim.name = c.String();
              break;
            case 2:
              claim.resource_claim_name = c.String();
              break;
            default:
              break;
          }
        }
        break;
      }
      case 18:
        ReadExtendedResourceClaimStatus(f.Message(&seen),
                                        &out->extended_resource_claim_status.emplace());
        break;
      default:
        break;
    }
  }
}

// ---- Node ----

void ReadTaint(std::string_view message, Taint* out) {
  bool has_effect = false;
  Fields f(message);
  while (f.Next()) {
    switch (f.number()) {
      case 1:
        out->key = f.String();
        break;
      case 2:
        out->value = f.String();
        break;
      case 3:
        if (!ParseTaintEffect(f.String(), &out->effect)) throw NeedsGeneralPath{};
        has_effect = true;
        break;
      default:
        break;
    }
  }
  // Both required; the general path names the field.
  if (out->key.empty() || !has_effect) throw NeedsGeneralPath{};
}

void ReadNodeSpec(std::string_view message, NodeSpec* out) {
  Fields f(message);
  while (f.Next()) {
    if (f.number() == 4) {
      out->unschedulable = f.Bool();
    } else if (f.number() == 5) {
      ReadTaint(f.Bytes(), &out->taints.emplace_back());
    }
  }
}

void ReadImage(std::string_view message, ContainerImage* out) {
  Fields f(message);
  while (f.Next()) {
    if (f.number() == 1) {
      out->names.push_back(f.String());
    } else if (f.number() == 2) {
      out->size_bytes = f.Int64();
    }
  }
}

void ReadNodeStatus(std::string_view message, NodeStatus* out) {
  Fields f(message);
  while (f.Next()) {
    switch (f.number()) {
      case 1:
        SetQuantity(f.Bytes(), &out->capacity);
        break;
      case 2:
        SetQuantity(f.Bytes(), &out->allocatable);
        break;
      case 4:
        ReadCondition(f.Bytes(), &out->conditions.emplace_back());
        break;
      case 8:
        ReadImage(f.Bytes(), &out->images.emplace_back());
        break;
      case 14:
        out->declared_features.push_back(f.String());
        break;
      default:
        break;
    }
  }
}

// The frame a Pod and a Node share: metadata (required), spec and status, each a singular message
// read by `read_spec` and `read_status`; then `finish`. Nullopt wherever the general path decides.
template <typename T, typename Spec, typename Status, typename Finish>
std::optional<T> TryDecodeObject(std::string_view message,
                                 void (*read_spec)(std::string_view, Spec*),
                                 void (*read_status)(std::string_view, Status*), Finish finish) {
  try {
    T object;
    uint64_t seen = 0;
    bool has_meta = false;
    Fields f(message);
    while (f.Next()) {
      switch (f.number()) {
        case 1:
          ReadMeta(f.Message(&seen), &object.meta);
          has_meta = true;
          break;
        case 2:
          read_spec(f.Message(&seen), &object.spec);
          break;
        case 3:
          read_status(f.Message(&seen), &object.status);
          break;
        default:
          break;
      }
    }
    if (!has_meta) return std::nullopt;
    finish(object);
    return object;
  } catch (const NeedsGeneralPath&) {
    return std::nullopt;
  } catch (const DecodeError&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<Node> TryDecodeProtobufNode(std::string_view message) {
  return TryDecodeObject<Node>(message, ReadNodeSpec, ReadNodeStatus, [](Node&) {});
}

std::optional<Pod> TryDecodeProtobufPod(std::string_view message) {
  return TryDecodeObject<Pod>(message, ReadSpec, ReadStatus, FinishDecodedPod);
}

}  // namespace berth::api
