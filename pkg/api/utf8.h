#ifndef BERTH_PKG_API_UTF8_H_
#define BERTH_PKG_API_UTF8_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace berth::api {

// Length of the well-formed UTF-8 sequence starting at text[pos] (a byte >= 0x80), or 0 when the
// bytes there are not one (overlong forms, surrogates and code points above U+10FFFF included).
inline size_t Utf8SequenceLength(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) -> unsigned {
    return pos + i < text.size() ? static_cast<unsigned char>(text[pos + i]) : 0u;
  };
  const auto cont = [&](size_t i) { return (byte(i) & 0xC0) == 0x80; };
  const unsigned b0 = byte(0);
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    const unsigned b1 = byte(1);
    if (b0 == 0xE0 && b1 < 0xA0) return 0;  // Overlong.
    if (b0 == 0xED && b1 > 0x9F) return 0;  // Surrogates.
    return cont(1) && cont(2) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    const unsigned b1 = byte(1);
    if (b0 == 0xF0 && b1 < 0x90) return 0;  // Overlong.
    if (b0 == 0xF4 && b1 > 0x8F) return 0;  // Above U+10FFFF.
    return cont(1) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

// Whether all of `text` is well-formed UTF-8.
inline bool IsValidUtf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      pos++;
      continue;
    }
    const size_t n = Utf8SequenceLength(text, pos);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

// `text` with each byte that does not start a well-formed sequence replaced by U+FFFD, as Go's
// encoding/json writes a string: what the apiserver receives for any bytes Berth sends it.
inline std::string ValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      out += text[pos++];
      continue;
    }
    const size_t n = Utf8SequenceLength(text, pos);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      pos++;
    } else {
      out.append(text.substr(pos, n));
      pos += n;
    }
  }
  return out;
}

}  // namespace berth::api

#endif  // BERTH_PKG_API_UTF8_H_
