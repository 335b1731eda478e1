#ifndef BERTH_PKG_CEL_SEMVER_H_
#define BERTH_PKG_CEL_SEMVER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace berth::cel {

// A semantic version (semver.org 2.0.0) as the Kubernetes semver CEL library reads it: strict
// MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD] without leading zeros, or with `normalize` a leading
// "v", leading zeros and missing minor/patch parts tolerated. Build metadata is kept for text
// only; it takes no part in ordering.
struct Semver {
  uint64_t major = 0;
  uint64_t minor = 0;
  uint64_t patch = 0;
  // Each identifier is numeric (no leading zero) or alphanumeric with hyphens.
  std::vector<std::string> pre;
  std::vector<std::string> build;

  // Returns false and the reason in `error` when `text` is no version.
  static bool Parse(std::string_view text, bool normalize, Semver* out, std::string* error);

  // -1, 0 or 1 by semver precedence.
  int Compare(const Semver& other) const;
  std::string ToString() const;
};

}  // namespace berth::cel

#endif  // BERTH_PKG_CEL_SEMVER_H_
