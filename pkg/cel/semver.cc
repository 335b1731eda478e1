#include "pkg/cel/semver.h"

#include <algorithm>
#include <charconv>

namespace berth::cel {
namespace {

bool AllDigits(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool AlphaNum(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
  });
}

std::vector<std::string_view> SplitN(std::string_view s, char sep, size_t n) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < n) {
    const size_t at = s.find(sep);
    if (at == std::string_view::npos) break;
    parts.push_back(s.substr(0, at));
    s.remove_prefix(at + 1);
  }
  parts.push_back(s);
  return parts;
}

// Go's %q of a string, as blang/semver's messages quote the offending part.
std::string Quoted(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\v':
        out += "\\v";
        break;
      default:
        if (u < 0x20 || u == 0x7f) {
          static const char kHex[] = "0123456789abcdef";
          out += "\\x";
          out.push_back(kHex[u >> 4]);
          out.push_back(kHex[u & 0xF]);
        } else {
          out.push_back(c);
        }
    }
  }
  return out + "\"";
}

// blang/semver's messages start with the part's name capitalized ("Major number ...").
std::string Capitalized(const char* what) {
  std::string s(what);
  s[0] = static_cast<char>(s[0] - 'a' + 'A');
  return s;
}

bool ParseNumber(std::string_view s, const char* what, uint64_t* out, std::string* error) {
  if (!AllDigits(s)) {
    *error = std::string("Invalid character(s) found in ") + what + " number " + Quoted(s);
    return false;
  }
  if (s.size() > 1 && s[0] == '0') {
    *error = Capitalized(what) + " number must not contain leading zeroes " + Quoted(s);
    return false;
  }
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    // Go's strconv.ParseUint, which blang/semver reports as it is.
    *error = "strconv.ParseUint: parsing \"" + std::string(s) +
             "\": " + (s.empty() ? "invalid syntax" : "value out of range");
    return false;
  }
  return true;
}

bool ParseStrict(std::string_view s, Semver* v, std::string* error) {
  if (s.empty()) {
    *error = "Version string empty";
    return false;
  }
  const auto parts = SplitN(s, '.', 3);
  if (parts.size() != 3) {
    *error = "No Major.Minor.Patch elements found";
    return false;
  }
  if (!ParseNumber(parts[0], "major", &v->major, error) ||
      !ParseNumber(parts[1], "minor", &v->minor, error)) {
    return false;
  }
  std::string_view patch = parts[2];
  std::string_view build;
  std::string_view pre;
  bool has_build = false;
  bool has_pre = false;
  if (const size_t plus = patch.find('+'); plus != std::string_view::npos) {
    build = patch.substr(plus + 1);
    patch = patch.substr(0, plus);
    has_build = true;
  }
  if (const size_t dash = patch.find('-'); dash != std::string_view::npos) {
    pre = patch.substr(dash + 1);
    patch = patch.substr(0, dash);
    has_pre = true;
  }
  if (!ParseNumber(patch, "patch", &v->patch, error)) return false;
  if (has_pre) {
    for (std::string_view id : SplitN(pre, '.', std::string_view::npos)) {
      if (id.empty()) {
        *error = "Prerelease is empty";
        return false;
      }
      if (AllDigits(id)) {
        if (id.size() > 1 && id[0] == '0') {
          *error = "Numeric PreRelease version must not contain leading zeroes " + Quoted(id);
          return false;
        }
      } else if (!AlphaNum(id)) {
        *error = "Invalid character(s) found in prerelease " + Quoted(id);
        return false;
      }
      v->pre.emplace_back(id);
    }
  }
  if (has_build) {
    for (std::string_view id : SplitN(build, '.', std::string_view::npos)) {
      if (id.empty()) {
        *error = "Build meta data is empty";
        return false;
      }
      if (!AlphaNum(id)) {
        *error = "Invalid character(s) found in build meta data " + Quoted(id);
        return false;
      }
      v->build.emplace_back(id);
    }
  }
  return true;
}

int ComparePre(std::string_view a, std::string_view b) {
  const bool an = AllDigits(a);
  const bool bn = AllDigits(b);
  if (an && bn) {
    // Neither has a leading zero, so the longer number is the larger one.
    if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  } else if (an != bn) {
    return an ? -1 : 1;  // numeric identifiers have lower precedence
  }
  const int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

}  // namespace

bool Semver::Parse(std::string_view text, bool normalize, Semver* out, std::string* error) {
  Semver v;
  if (!normalize) {
    if (!ParseStrict(text, &v, error)) return false;
    *out = std::move(v);
    return true;
  }
  if (!text.empty() && text[0] == 'v') text.remove_prefix(1);
  std::vector<std::string> parts;
  for (std::string_view p : SplitN(text, '.', 3)) {
    std::string part(p);
    if (part.size() > 1) {
      const size_t first = part.find_first_not_of('0');
      part = first == std::string::npos ? std::string() : part.substr(first);
      if (part.empty() || part[0] < '0' || part[0] > '9') part.insert(0, 1, '0');
    }
    parts.push_back(std::move(part));
  }
  if (parts.size() < 3) {
    if (parts.back().find_first_of("+-") != std::string::npos) {
      *error = "short version cannot contain PreRelease/Build meta data";
      return false;
    }
    while (parts.size() < 3) parts.emplace_back("0");
  }
  const std::string joined = parts[0] + "." + parts[1] + "." + parts[2];
  if (!ParseStrict(joined, &v, error)) return false;
  *out = std::move(v);
  return true;
}

int Semver::Compare(const Semver& o) const {
  if (major != o.major) return major < o.major ? -1 : 1;
  if (minor != o.minor) return minor < o.minor ? -1 : 1;
  if (patch != o.patch) return patch < o.patch ? -1 : 1;
  // A version without prerelease ranks above any with one.
  if (pre.empty() && o.pre.empty()) return 0;
  if (pre.empty()) return 1;
  if (o.pre.empty()) return -1;
  const size_t n = std::min(pre.size(), o.pre.size());
  for (size_t i = 0; i < n; ++i) {
    if (const int c = ComparePre(pre[i], o.pre[i]); c != 0) return c;
  }
  if (pre.size() == o.pre.size()) return 0;
  return pre.size() < o.pre.size() ? -1 : 1;
}

std::string Semver::ToString() const {
  std::string s = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  for (size_t i = 0; i < pre.size(); ++i) {
    s += i == 0 ? "-" : ".";
    s += pre[i];
  }
  for (size_t i = 0; i < build.size(); ++i) {
    s += i == 0 ? "+" : ".";
    s += build[i];
  }
  return s;
}

}  // namespace berth::cel
