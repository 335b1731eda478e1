#include "e2e/quantity_sum.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <string_view>
#include <utility>

namespace berth::e2e {
namespace {

constexpr Nanos kLimit = Nanos(1) << 120;

// value * 10^exp, or nullopt past kLimit; a negative exp divides, rounding up.
std::optional<Nanos> Scale(Nanos value, int exp) {
  for (; exp > 0; exp--) {
    if (value > kLimit / 10) return std::nullopt;
    value *= 10;
  }
  for (; exp < 0; exp++) value = value / 10 + (value % 10 != 0 ? 1 : 0);
  return value;
}

}  // namespace

std::optional<Nanos> ParseNanos(const std::string& text) {
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  // The digits, without the point, and how many of them follow it.
  Nanos digits = 0;
  int fraction = 0;
  bool seen_point = false;
  bool any = false;
  int dropped = 0;  // Integer digits past the limit, as a power of ten.
  bool dropped_nonzero_fraction = false;
  size_t i = 0;
  for (; i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.'); i++) {
    if (s[i] == '.') {
      if (seen_point) return std::nullopt;
      seen_point = true;
      continue;
    }
    any = true;
    const int d = s[i] - '0';
    if (digits > kLimit / 10) {
      // Too many digits to hold: past the limit unless they are fraction.
      if (seen_point) {
        dropped_nonzero_fraction = dropped_nonzero_fraction || d != 0;
      } else {
        dropped++;
      }
      continue;
    }
    digits = digits * 10 + d;
    if (seen_point) fraction++;
  }
  if (!any) return std::nullopt;
  if (dropped > 0) return std::nullopt;
  std::string_view suffix = s.substr(i);
  int exp10 = 0;
  int exp2 = 0;
  // The decimal suffixes (and none) with the power of ten each stands for.
  constexpr std::pair<std::string_view, int> kDecimal[] = {
      {"", 0},  {"n", -9}, {"u", -6}, {"m", -3}, {"k", 3},
      {"M", 6}, {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
  const auto* decimal = std::find_if(std::begin(kDecimal), std::end(kDecimal),
                                     [&](const auto& d) { return d.first == suffix; });
  if (decimal != std::end(kDecimal)) {
    exp10 = decimal->second;
  } else if (suffix.size() == 2 && suffix[1] == 'i') {
    const std::string_view binary = "KMGTPE";
    const size_t at = binary.find(suffix[0]);
    if (at == std::string_view::npos) return std::nullopt;
    exp2 = 10 * static_cast<int>(at + 1);
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::string_view e = suffix.substr(1);
    bool e_negative = false;
    if (!e.empty() && (e[0] == '+' || e[0] == '-')) {
      e_negative = e[0] == '-';
      e.remove_prefix(1);
    }
    if (e.empty() || e.size() > 4) return std::nullopt;
    for (char c : e) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
      exp10 = exp10 * 10 + (c - '0');
    }
    if (e_negative) exp10 = -exp10;
  } else {
    return std::nullopt;
  }
  // Apply the binary factor first (exact), then the decimal one (rounding up once, at the end).
  for (; exp2 > 0; exp2--) {
    if (digits > kLimit / 2) return std::nullopt;
    digits *= 2;
  }
  // Fraction digits too many to hold round the kept ones up, so the result is never below the
  // quantity (the apiserver's own forms never have them).
  if (dropped_nonzero_fraction) digits += 1;
  auto value = Scale(digits, exp10 + 9 - fraction);
  if (!value) return std::nullopt;
  return negative ? -*value : *value;
}

bool ParseResourceList(const nlohmann::json& list, ResourceSum* sum, std::string* error) {
  if (!list.is_object()) return true;
  for (const auto& [name, value] : list.items()) {
    const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    const auto n = ParseNanos(text);
    if (!n) {
      *error = name + ": cannot hold " + text + " exactly";
      return false;
    }
    (*sum)[name] += *n;
  }
  return true;
}

bool AddPodRequests(const nlohmann::json& spec, ResourceSum* sum, std::string* error) {
  ResourceSum containers;
  for (const auto& c : spec.value("containers", nlohmann::json::array())) {
    if (!ParseResourceList(c["resources"].value("requests", nlohmann::json::object()), &containers,
                           error)) {
      return false;
    }
  }
  for (const auto& c : spec.value("initContainers", nlohmann::json::array())) {
    ResourceSum init;
    if (!ParseResourceList(c["resources"].value("requests", nlohmann::json::object()), &init,
                           error)) {
      return false;
    }
    for (const auto& [name, n] : init) containers[name] = std::max(containers[name], n);
  }
  if (!ParseResourceList(spec.value("overhead", nlohmann::json::object()), &containers, error)) {
    return false;
  }
  for (const auto& [name, n] : containers) (*sum)[name] += n;
  return true;
}

std::string FormatNanos(Nanos n) {
  const bool negative = n < 0;
  unsigned __int128 u =
      negative ? static_cast<unsigned __int128>(-(n + 1)) + 1 : static_cast<unsigned __int128>(n);
  auto digits = [](unsigned __int128 v) {
    std::string s;
    do {
      s.push_back(static_cast<char>('0' + static_cast<int>(v % 10)));
      v /= 10;
    } while (v != 0);
    std::reverse(s.begin(), s.end());
    return s;
  };
  std::string out = digits(u / 1000000000);
  if (const auto frac = u % 1000000000; frac != 0) {
    std::string f = digits(frac);
    f.insert(0, 9 - f.size(), '0');
    while (f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return negative ? "-" + out : out;
}

}  // namespace berth::e2e
