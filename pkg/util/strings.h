#ifndef BERTH_PKG_UTIL_STRINGS_H_
#define BERTH_PKG_UTIL_STRINGS_H_

#include <string>
#include <string_view>
#include <vector>

namespace berth::util {

// `parts` with `sep` between each two of them; empty for no parts.
inline std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

}  // namespace berth::util

#endif  // BERTH_PKG_UTIL_STRINGS_H_
