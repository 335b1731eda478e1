#ifndef BERTH_PKG_UTIL_BASE64_H_
#define BERTH_PKG_UTIL_BASE64_H_

// Standard base64 (RFC 4648 section 4, with '=' padding) as Kubernetes' []byte JSON fields and
// kubeconfig's *-data fields carry it, over OpenSSL. Pure and thread-safe.

#include <optional>
#include <string>
#include <string_view>

namespace berth::util {

// Standard alphabet, padded to a multiple of four characters, no line breaks.
std::string Base64Encode(std::string_view bytes);

// What Go's base64.StdEncoding (encoding/json's []byte decoding) accepts: '\r' and '\n' are
// skipped wherever they are, and anything else outside the alphabet, a space or tab included, is
// refused; the padding must be there ("aGk=", not "aGk") and only at the end. As Go's non-strict
// decoder, the unused bits of the last character need not be zero ("YR==" is "a"). Nullopt when
// the text is not base64.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace berth::util

#endif  // BERTH_PKG_UTIL_BASE64_H_
