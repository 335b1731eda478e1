#ifndef BERTH_PKG_CONFIG_YAML_DOCUMENTS_H_
#define BERTH_PKG_CONFIG_YAML_DOCUMENTS_H_

// Parsing YAML text into yaml-cpp documents, for LoadString and YamlDocumentsToJson. Internal to
// pkg/config.

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "pkg/config/load.h"

namespace berth::config {

// The non-empty documents of `text`. Throws ConfigError naming `source_name` and the line and
// column of a syntax error: yaml-cpp's parse messages name the problem and at most an offending
// character, never the surrounding input. A stray "---" leaves empty documents around the real
// ones; those are harmless and dropped.
std::vector<YAML::Node> LoadDocuments(const std::string& text, const std::string& source_name,
                                      Aliases aliases = Aliases::kAllow);

}  // namespace berth::config

#endif  // BERTH_PKG_CONFIG_YAML_DOCUMENTS_H_
