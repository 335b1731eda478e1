#ifndef BERTH_PKG_CONFIG_QUOTE_H_
#define BERTH_PKG_CONFIG_QUOTE_H_

#include <string>
#include <string_view>

namespace berth::config::internal {

// A value from the file, double-quoted and escaped for an error message. Long values are cut so
// an error never carries more of the file than the start of the offending scalar.
std::string Quote(std::string_view value);

}  // namespace berth::config::internal

#endif  // BERTH_PKG_CONFIG_QUOTE_H_
