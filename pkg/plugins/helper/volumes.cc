#include "pkg/plugins/helper/volumes.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace berth::plugins::helper {
namespace {

constexpr InTreePlugin kInTreePlugins[] = {
    {"awsElasticBlockStore", "kubernetes.io/aws-ebs", "ebs.csi.aws.com",
     "topology.ebs.csi.aws.com/zone", "", true},
    {"gcePersistentDisk", "kubernetes.io/gce-pd", "pd.csi.storage.gke.io", "topology.gke.io/zone",
     "", true},
    {"azureDisk", "kubernetes.io/azure-disk", "disk.csi.azure.com", "", "", true},
    {"cinder", "kubernetes.io/cinder", "cinder.csi.openstack.org",
     "topology.cinder.csi.openstack.org/zone", "", true},
    {"portworxVolume", "kubernetes.io/portworx-volume", "pxd.portworx.com", "", "", true},
    {"azureFile", "kubernetes.io/azure-file", "file.csi.azure.com", "", "", false},
    {"vsphereVolume", "kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com",
     "topology.csi.vmware.com/zone", "topology.csi.vmware.com/region", false},
};

constexpr std::string_view kUnspecified = "UNSPECIFIED";

std::vector<std::string> Split(std::string_view text, std::string_view delimiter) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(delimiter, start);
    if (at == std::string_view::npos) {
      out.emplace_back(text.substr(start));
      return out;
    }
    out.emplace_back(text.substr(start, at - start));
    start = at + delimiter.size();
  }
}

std::string_view TrimSpace(std::string_view text) {
  const auto space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

// An EBS volume id as its CSI driver names it: "vol-..." from "aws://<zone>/vol-..." or as given.
bool EBSVolumeID(const std::string& id, std::string* out, std::string* error) {
  constexpr std::string_view kScheme = "aws://";
  if (id.rfind(kScheme, 0) != 0) {
    *out = id;
    return true;
  }
  const std::string_view rest = std::string_view(id).substr(kScheme.size());
  const size_t slash = rest.find('/');
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.rfind("vol-", 0) != 0 || path.find('/') != std::string_view::npos) {
    *error = "failed to translate Kubernetes ID to EBS Volume ID Invalid format for AWS volume (" +
             id + ")";
    return false;
  }
  *out = std::string(path);
  return true;
}

bool HasKey(const std::optional<api::NodeSelector>& affinity, std::string_view key) {
  if (!affinity) return false;
  for (const auto& term : affinity->terms) {
    for (const auto& r : term.match_expressions) {
      if (r.key == key) return true;
    }
  }
  return false;
}

std::set<std::string> ValuesOf(const std::optional<api::NodeSelector>& affinity,
                               std::string_view key) {
  std::set<std::string> out;
  if (!affinity) return out;
  for (const auto& term : affinity->terms) {
    for (const auto& r : term.match_expressions) {
      if (r.key == key) out.insert(r.values.begin(), r.values.end());
    }
  }
  return out;
}

void RenameKey(std::optional<api::NodeSelector>& affinity, std::string_view from,
               std::string_view to) {
  if (!affinity) return;
  for (auto& term : affinity->terms) {
    for (auto& r : term.match_expressions) {
      if (r.key == from) r.key = std::string(to);
    }
  }
}

void AddRequirement(std::optional<api::NodeSelector>& affinity, std::string_view key,
                    const std::set<std::string>& values) {
  if (values.empty()) return;
  if (!affinity) affinity.emplace();
  if (affinity->terms.empty()) affinity->terms.emplace_back();
  api::Requirement requirement;
  requirement.key = std::string(key);
  requirement.op = api::SelectorOperator::kIn;
  requirement.values.assign(values.begin(), values.end());
  for (auto& term : affinity->terms) term.match_expressions.push_back(requirement);
}

// A label's value as one topology value, or as the zones it lists when `split`.
std::set<std::string> LabelValues(const std::string& label, bool split) {
  std::set<std::string> out;
  for (const std::string& value :
       split ? Split(label, kZoneDelimiter) : std::vector<std::string>{label}) {
    const std::string_view trimmed = TrimSpace(value);
    if (!trimmed.empty()) out.emplace(trimmed);
  }
  return out;
}

// Replaces the in-tree zone key with the driver's, or derives the zone from the volume's zone
// label. The region key becomes the driver's when it has one (taken from the region label when
// the affinity has none); otherwise the beta region key becomes the GA one.
void TranslateTopology(const api::PersistentVolume& pv, const InTreePlugin& plugin,
                       std::optional<api::NodeSelector>& affinity) {
  // The key family in use: the node affinity's first, then the labels', else GA.
  const bool beta =
      !HasKey(affinity, kLabelTopologyZone) &&
      (HasKey(affinity, kLabelBetaZone) ||
       (!pv.meta.labels.Contains(kLabelTopologyZone) && pv.meta.labels.Contains(kLabelBetaZone)));
  const std::string_view zone_key = beta ? kLabelBetaZone : kLabelTopologyZone;
  const std::string_view region_key = beta ? kLabelBetaRegion : kLabelTopologyRegion;
  // vSphere's translation takes a zone label as one value; the others split multi-zone labels.
  const bool own_region = !plugin.region_key.empty();
  if (!ValuesOf(affinity, zone_key).empty()) {
    RenameKey(affinity, zone_key, plugin.topology_key);
  } else if (const std::string* label = pv.meta.labels.Find(zone_key)) {
    AddRequirement(affinity, plugin.topology_key, LabelValues(*label, !own_region));
  }
  if (own_region) {
    if (!ValuesOf(affinity, region_key).empty()) {
      RenameKey(affinity, region_key, plugin.region_key);
    } else if (const std::string* label = pv.meta.labels.Find(region_key)) {
      AddRequirement(affinity, plugin.region_key, LabelValues(*label, false));
    }
  } else if (region_key == kLabelBetaRegion && !ValuesOf(affinity, region_key).empty()) {
    RenameKey(affinity, region_key, kLabelTopologyRegion);
  }
}

// The GCE handle of a disk in the zones a volume's labels name.
bool GCEVolumeHandle(const api::PersistentVolume& pv, std::string* out, std::string* error) {
  const std::string* label = pv.meta.labels.Find(kLabelBetaZone);
  if (label == nullptr || label->empty()) label = pv.meta.labels.Find(kLabelTopologyZone);
  const std::vector<std::string> zones = Split(label ? *label : "", kZoneDelimiter);
  const std::string& disk = pv.spec.in_tree_volume_id;
  if (zones.size() == 1 && !zones[0].empty()) {
    *out = "projects/" + std::string(kUnspecified) + "/zones/" + zones[0] + "/disks/" + disk;
    return true;
  }
  if (zones.size() > 1) {
    std::set<std::string> regions;
    for (const std::string& zone : zones) {
      const std::vector<std::string> parts = Split(zone, "-");
      if (parts.size() != 3) {
        *error =
            "failed to get region from zones: zone in unexpected format, expected: "
            "{locale}-{region}-{zone}, got: " +
            zone;
        return false;
      }
      regions.insert(parts[0] + "-" + parts[1]);
    }
    if (regions.size() != 1) {
      *error = "failed to get region from zones: multiple or no regions gotten from zones";
      return false;
    }
    *out =
        "projects/" + std::string(kUnspecified) + "/regions/" + *regions.begin() + "/disks/" + disk;
    return true;
  }
  *out = "projects/" + std::string(kUnspecified) + "/zones/" + std::string(kUnspecified) +
         "/disks/" + disk;
  return true;
}

}  // namespace

std::optional<VolumeClaim> ClaimOf(const api::Pod& pod, const api::Volume& volume) {
  if (volume.source == "persistentVolumeClaim") return VolumeClaim{volume.claim_name, false};
  if (volume.source == "ephemeral") return VolumeClaim{pod.meta.name + "-" + volume.name, true};
  return std::nullopt;
}

std::string EphemeralClaimOwnerError(const api::Pod& pod, const api::PersistentVolumeClaim& claim) {
  const api::OwnerReference* controller = nullptr;
  for (const auto& ref : claim.meta.owner_references) {
    if (ref.controller) {
      controller = &ref;
      break;
    }
  }
  if (claim.meta.namespace_ == pod.meta.namespace_ && controller != nullptr &&
      controller->uid == pod.meta.uid) {
    return "";
  }
  return "PVC " + claim.meta.namespace_ + "/" + claim.meta.name + " was not created for pod " +
         pod.meta.namespace_ + "/" + pod.meta.name + " (pod is not owner)";
}

std::string NotFoundMessage(std::string_view resource, std::string_view name) {
  return std::string(resource) + " \"" + std::string(name) + "\" not found";
}

bool ClaimFullyBound(const api::PersistentVolumeClaim& claim) {
  return !claim.spec.volume_name.empty() &&
         claim.meta.annotations.Contains(api::kBindCompletedAnnotation);
}

bool VolumeAffinityMatches(const std::optional<api::NodeSelector>& affinity,
                           const api::Labels& node_labels) {
  return !affinity || affinity->Matches(node_labels, "");
}

const InTreePlugin* InTreePluginForSource(std::string_view source) {
  for (const InTreePlugin& plugin : kInTreePlugins) {
    if (plugin.source == source) return &plugin;
  }
  return nullptr;
}

const InTreePlugin* InTreePluginByName(std::string_view plugin_name) {
  for (const InTreePlugin& plugin : kInTreePlugins) {
    if (plugin.plugin_name == plugin_name) return &plugin;
  }
  return nullptr;
}

bool MigratedOnNode(const InTreePlugin& plugin, const api::CSINode* csi_node) {
  if (csi_node == nullptr) return false;
  const std::string* migrated = csi_node->meta.annotations.Find(api::kMigratedPluginsAnnotation);
  if (migrated == nullptr) return false;
  // Read for every node a migrated volume's pod is filtered on: no copies.
  std::string_view rest = *migrated;
  while (true) {
    const size_t comma = rest.find(',');
    if (rest.substr(0, comma) == plugin.plugin_name) return true;
    if (comma == std::string_view::npos) return false;
    rest.remove_prefix(comma + 1);
  }
}

TranslatedVolume TranslateInTreeVolume(const api::PersistentVolume& pv,
                                       const InTreePlugin& plugin) {
  TranslatedVolume out;
  out.driver = std::string(plugin.csi_driver);
  out.node_affinity = pv.spec.node_affinity;
  if (plugin.source == "awsElasticBlockStore") {
    if (!EBSVolumeID(pv.spec.in_tree_volume_id, &out.volume_handle, &out.error)) return out;
  } else if (plugin.source == "gcePersistentDisk") {
    if (!GCEVolumeHandle(pv, &out.volume_handle, &out.error)) return out;
  } else if (plugin.source == "azureFile") {
    std::string_view secret_namespace;
    if (pv.spec.azure_file_secret_namespace) {
      secret_namespace = *pv.spec.azure_file_secret_namespace;
    } else if (pv.spec.claim_ref) {
      secret_namespace = pv.spec.claim_ref->namespace_;
    }
    if (secret_namespace.empty()) {
      out.error = "could not find a secret namespace in PersistentVolumeSource or ClaimRef";
      return out;
    }
  } else {
    out.volume_handle = pv.spec.in_tree_volume_id;
  }
  if (!plugin.topology_key.empty()) TranslateTopology(pv, plugin, out.node_affinity);
  return out;
}

TranslatedVolume TranslateInlineVolume(const api::Volume& volume, const InTreePlugin& plugin) {
  TranslatedVolume out;
  out.driver = std::string(plugin.csi_driver);
  if (plugin.source == "awsElasticBlockStore") {
    EBSVolumeID(volume.disk, &out.volume_handle, &out.error);
  } else if (plugin.source == "gcePersistentDisk") {
    out.volume_handle = "projects/" + std::string(kUnspecified) + "/zones/" +
                        std::string(kUnspecified) + "/disks/" + volume.disk;
  } else {
    out.volume_handle = volume.disk;
  }
  return out;
}

}  // namespace berth::plugins::helper
