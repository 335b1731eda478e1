#include <cstdio>

#include "pkg/yaml/yaml.h"

namespace berth::yaml {

std::string Quote(std::string_view value) {
  constexpr size_t kMaxChars = 100;
  std::string out = "\"";
  size_t n = 0;
  for (char c : value) {
    if (n++ == kMaxChars) {
      out += "...";
      break;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

}  // namespace berth::yaml
