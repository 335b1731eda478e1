#ifndef BERTH_PKG_CONFIG_LOAD_H_
#define BERTH_PKG_CONFIG_LOAD_H_

// Reads the file users give kube-scheduler's --config: a KubeSchedulerConfiguration
// (kubescheduler.config.k8s.io/v1) in YAML or JSON. Decoding is strict like upstream's: unknown
// or duplicate keys and mistyped values are errors. The result is defaulted (upstream's
// defaulting with Berth's scheduler and lock names) and validated (pkg/config/validate.h).
//
// Upstream fields accepted and ignored because they do not apply to Berth: enableProfiling,
// enableContentionProfiling, delayCacheUntilActive, clientConnection.acceptContentTypes. Plugin
// weights in `disabled` lists are accepted and dropped, as upstream does. kube-scheduler's gang
// plugins (GangScheduling, TopologyPlacementGenerator, PodGroupPodsCount), its pod-group
// extension points and percentageOfPlacementsToScore are read as Coscheduling and its args
// (pkg/config/gang_plugins.h); the loaded Configuration names none of them.

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/config/config.h"
#include "pkg/config/validate.h"

namespace berth::config {

// The default bound on the values of YamlDocumentsToJson's documents, all together.
inline constexpr size_t kMaxDocumentValues = 100'000;

// Throws ConfigError listing every problem found ("<path>: cannot read: <strerror>" when the file
// cannot be read). `known_plugins`: every plugin name the binary has, in-tree and out-of-tree.
// `validate_args`: checks each pluginConfig entry's args (see Validate); none when empty.
Configuration LoadFile(const std::string& path, const std::set<std::string>& known_plugins,
                       const ArgsValidator& validate_args = {});

// As LoadFile, for text already in memory; `source_name` prefixes every error.
Configuration LoadString(const std::string& text, const std::string& source_name,
                         const std::set<std::string>& known_plugins,
                         const ArgsValidator& validate_args = {});

// Whether a YAML text may use aliases (*name) of anchored values (&name). A file a person wrote
// and Berth reads at their request may; a request body from a network client may not, since an
// alias is the one way a small body makes a large object.
enum class Aliases { kAllow, kRefuse };

// YAML (or JSON, a subset) as JSON documents, for objects users hand Berth besides its
// configuration (pods to simulate). Plain scalars resolve as kubectl's and the configuration's
// do (YAML 1.1); mapping keys must be unique strings; at most `max_values` values, 64 levels of
// nesting and yaml::JsonBudget::kMaxBytes bytes of keys and scalars (an alias counting in full
// each time it is used) in all. Empty documents are dropped. Throws ConfigError naming
// `source_name` and the line and column, or the path, of the first problem; with
// Aliases::kRefuse, the first alias is one.
std::vector<nlohmann::json> YamlDocumentsToJson(const std::string& text,
                                                const std::string& source_name,
                                                size_t max_values = kMaxDocumentValues,
                                                Aliases aliases = Aliases::kAllow);

}  // namespace berth::config

#endif  // BERTH_PKG_CONFIG_LOAD_H_
