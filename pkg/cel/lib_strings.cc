// String functions: CEL's own (contains, startsWith, endsWith, matches), the strings
// extension at version 2, and Kubernetes' regex library (find, findAll). Regular expressions are
// RE2, the syntax and linear-time matching of Go's regexp.

#include <re2/re2.h>

#include <algorithm>
#include <string>

#include "pkg/cel/library.h"

namespace berth::cel::lib {
namespace {

// Substring search in linear time (Knuth-Morris-Pratt): std::string::find is quadratic on
// periodic inputs ("aaa...a".contains("aa...ab")), which an expression controls.
class Searcher {
 public:
  explicit Searcher(const std::string& needle) : needle_(needle), fail_(needle.size() + 1, 0) {
    size_t k = 0;
    for (size_t i = 1; i < needle.size(); ++i) {
      while (k > 0 && needle[i] != needle[k]) k = fail_[k];
      if (needle[i] == needle[k]) ++k;
      fail_[i + 1] = k;
    }
  }
  // The first occurrence at or after `from`, or npos.
  size_t Find(const std::string& hay, size_t from) const {
    if (needle_.empty()) return from <= hay.size() ? from : std::string::npos;
    size_t k = 0;
    for (size_t i = from; i < hay.size(); ++i) {
      while (k > 0 && hay[i] != needle_[k]) k = fail_[k];
      if (hay[i] == needle_[k]) ++k;
      if (k == needle_.size()) return i + 1 - k;
    }
    return std::string::npos;
  }

 private:
  const std::string& needle_;
  std::vector<size_t> fail_;
};

// ---- strings
Value Contains(const Args& a, EvalBudget&) {
  return Value::Bool(Searcher(S(a[1])).Find(S(a[0]), 0) != std::string::npos);
}
Value StartsWith(const Args& a, EvalBudget&) {
  return Value::Bool(S(a[0]).compare(0, S(a[1]).size(), S(a[1])) == 0 &&
                     S(a[0]).size() >= S(a[1]).size());
}
Value EndsWith(const Args& a, EvalBudget&) {
  const std::string& s = S(a[0]);
  const std::string& x = S(a[1]);
  return Value::Bool(s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0);
}

Value MatchesWith(const RE2& re, const Args& a) {
  return Value::Bool(RE2::PartialMatch(S(a[0]), re));
}
Value FindWith(const RE2& re, const Args& a) {
  re2::StringPiece match;
  if (!re.Match(S(a[0]), 0, S(a[0]).size(), RE2::UNANCHORED, &match, 1)) {
    return Value::String("");
  }
  return Value::String(std::string(match.data(), match.size()));
}
Value FindAllWith(const RE2& re, const Args& a, EvalBudget& b) {
  const std::string& s = S(a[0]);
  const int64_t n = a.size() > 2 ? I(a[2]) : -1;
  std::vector<Value> out;
  if (n == 0) return Value::List({});
  size_t pos = 0;
  size_t last_end = std::string::npos;
  while ((n < 0 || static_cast<int64_t>(out.size()) < n) && pos <= s.size()) {
    re2::StringPiece match;
    if (!re.Match(s, pos, s.size(), RE2::UNANCHORED, &match, 1)) break;
    const auto start = static_cast<size_t>(match.data() - s.data());
    const size_t end = start + match.size();
    // As Go's FindAllString: an empty match right after the previous match is skipped.
    if (!(match.empty() && start == last_end)) {
      out.push_back(Value::String(std::string(match.data(), match.size())));
      if (!b.Allocate(match.size() + sizeof(Value))) return Err(kMemoryLimitMessage);
    }
    last_end = end;
    if (end > pos) {
      pos = end;
    } else {
      // Step over one code point.
      ++pos;
      while (pos < s.size() && (static_cast<unsigned char>(s[pos]) & 0xC0) == 0x80) ++pos;
    }
  }
  return Value::List(std::move(out));
}
template <int kFn>
Value RegexFn(const Args& a, EvalBudget& b) {
  std::string error;
  const auto re = CompileRegex(S(a[1]), &error);
  if (!re) return Err(error);
  switch (kFn) {
    case 0:
      return MatchesWith(*re, a);
    case 1:
      return FindWith(*re, a);
    default:
      return FindAllWith(*re, a, b);
  }
}
Value Matches(const Args& a, EvalBudget& b) { return RegexFn<0>(a, b); }
Value Find(const Args& a, EvalBudget& b) { return RegexFn<1>(a, b); }
Value FindAll(const Args& a, EvalBudget& b) { return RegexFn<2>(a, b); }
Value FindAllLimit(const Args& a, EvalBudget& b) { return RegexFn<2>(a, b); }

Value CharAt(const Args& a, EvalBudget&) {
  // An ASCII string (as many code points as bytes) is indexed directly; charAt() costs one unit
  // in CEL whatever the length.
  if (a[0].As<StringValue>().code_points == static_cast<int64_t>(S(a[0]).size())) {
    const int64_t i = I(a[1]);
    const auto n = static_cast<int64_t>(S(a[0]).size());
    if (i < 0 || i > n) return Err("index out of range: " + std::to_string(i));
    if (i == n) return Value::String("");
    return Value::String(S(a[0]).substr(static_cast<size_t>(i), 1));
  }
  const auto offs = CodePointOffsets(S(a[0]));
  const int64_t i = I(a[1]);
  const auto n = static_cast<int64_t>(offs.size() - 1);
  if (i < 0 || i > n) return Err("index out of range: " + std::to_string(i));
  if (i == n) return Value::String("");
  return Value::String(
      S(a[0]).substr(offs[static_cast<size_t>(i)],
                     offs[static_cast<size_t>(i) + 1] - offs[static_cast<size_t>(i)]));
}
// Code-point index of a byte offset.
int64_t CpIndex(const std::vector<size_t>& offs, size_t byte) {
  return static_cast<int64_t>(std::lower_bound(offs.begin(), offs.end(), byte) - offs.begin());
}
// The strings extension's indexOf/lastIndexOf over code points: a negative offset is an error,
// an offset past the end finds nothing (the empty string is found at the clamped offset).
Value IndexOfImpl(const std::string& s, const std::string& sub, int64_t off) {
  if (off < 0) return Err("index out of range: " + std::to_string(off));
  const auto offs = CodePointOffsets(s);
  const auto n = static_cast<int64_t>(offs.size() - 1);
  if (sub.empty()) return Value::Int(std::min(off, n));
  if (off >= n) return Value::Int(-1);
  const size_t at = Searcher(sub).Find(s, offs[static_cast<size_t>(off)]);
  if (at == std::string::npos) return Value::Int(-1);
  return Value::Int(CpIndex(offs, at));
}
Value IndexOf(const Args& a, EvalBudget&) { return IndexOfImpl(S(a[0]), S(a[1]), 0); }
Value IndexOfFrom(const Args& a, EvalBudget&) { return IndexOfImpl(S(a[0]), S(a[1]), I(a[2])); }
Value LastIndexOfImpl(const std::string& s, const std::string& sub, int64_t off) {
  if (off < 0) return Err("index out of range: " + std::to_string(off));
  const auto offs = CodePointOffsets(s);
  const auto n = static_cast<int64_t>(offs.size() - 1);
  if (sub.empty()) return Value::Int(std::min(off, n));
  if (off >= n) return Value::Int(-1);
  const int64_t m = CodePoints(sub);
  if (m > n) return Value::Int(-1);
  off = std::min(off, n - m);
  // The last occurrence starting at or before `off`: the first one in the reversed string
  // starting at or after the mirrored position.
  const size_t limit = offs[static_cast<size_t>(off)];
  const std::string reversed(s.rbegin(), s.rend());
  const std::string reversed_sub(sub.rbegin(), sub.rend());
  const size_t start = limit + sub.size() >= s.size() ? 0 : s.size() - limit - sub.size();
  const size_t found = Searcher(reversed_sub).Find(reversed, start);
  if (found == std::string::npos) return Value::Int(-1);
  return Value::Int(CpIndex(offs, s.size() - found - sub.size()));
}
Value LastIndexOf(const Args& a, EvalBudget&) {
  if (S(a[1]).empty()) return Value::Int(CodePoints(S(a[0])));
  if (S(a[0]).size() < S(a[1]).size()) return Value::Int(-1);
  return LastIndexOfImpl(S(a[0]), S(a[1]), CodePoints(S(a[0])) - 1);
}
Value LastIndexOfFrom(const Args& a, EvalBudget&) {
  return LastIndexOfImpl(S(a[0]), S(a[1]), I(a[2]));
}
Value LowerAscii(const Args& a, EvalBudget& b) {
  std::string s = S(a[0]);
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return MakeString(std::move(s), b);
}
Value UpperAscii(const Args& a, EvalBudget& b) {
  std::string s = S(a[0]);
  for (char& c : s) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  }
  return MakeString(std::move(s), b);
}
Value ReplaceN(const std::string& s, const std::string& from, const std::string& to, int64_t n,
               EvalBudget& b) {
  if (n == 0) return Value::String(s);
  // The result's size is known before it is built; refuse what the budget would not hold.
  std::vector<size_t> at;
  if (from.empty()) {
    const auto offs = CodePointOffsets(s);
    for (size_t i = 0; i < offs.size() && (n < 0 || static_cast<int64_t>(at.size()) < n); ++i) {
      at.push_back(offs[i]);
    }
  } else {
    const Searcher searcher(from);
    for (size_t p = searcher.Find(s, 0);
         p != std::string::npos && (n < 0 || static_cast<int64_t>(at.size()) < n);
         p = searcher.Find(s, p + from.size())) {
      at.push_back(p);
    }
  }
  const uint64_t size = s.size() + at.size() * to.size();
  if (!b.Allocate(size)) return Err(kMemoryLimitMessage);
  std::string out;
  out.reserve(size);
  size_t prev = 0;
  for (size_t p : at) {
    out.append(s, prev, p - prev);
    out += to;
    prev = p + from.size();
  }
  if (prev <= s.size()) out.append(s, prev, std::string::npos);
  return Value::String(std::move(out));
}
Value Replace(const Args& a, EvalBudget& b) { return ReplaceN(S(a[0]), S(a[1]), S(a[2]), -1, b); }
Value ReplaceLimit(const Args& a, EvalBudget& b) {
  return ReplaceN(S(a[0]), S(a[1]), S(a[2]), I(a[3]), b);
}
Value SplitN(const std::string& s, const std::string& sep, int64_t n, EvalBudget& b) {
  std::vector<Value> out;
  if (n == 0) return Value::List({});
  if (sep.empty()) {
    const auto offs = CodePointOffsets(s);
    for (size_t i = 0; i + 1 < offs.size(); ++i) {
      if (n > 0 && static_cast<int64_t>(out.size()) == n - 1) {
        out.push_back(Value::String(s.substr(offs[i])));
        break;
      }
      out.push_back(Value::String(s.substr(offs[i], offs[i + 1] - offs[i])));
    }
  } else {
    size_t prev = 0;
    const Searcher searcher(sep);
    while (n < 0 || static_cast<int64_t>(out.size()) < n - 1) {
      const size_t p = searcher.Find(s, prev);
      if (p == std::string::npos) break;
      out.push_back(Value::String(s.substr(prev, p - prev)));
      prev = p + sep.size();
    }
    out.push_back(Value::String(s.substr(prev)));
  }
  if (!b.Allocate(s.size() + out.size() * sizeof(Value))) return Err(kMemoryLimitMessage);
  return Value::List(std::move(out));
}
Value Split(const Args& a, EvalBudget& b) { return SplitN(S(a[0]), S(a[1]), -1, b); }
Value SplitLimit(const Args& a, EvalBudget& b) { return SplitN(S(a[0]), S(a[1]), I(a[2]), b); }
Value Substring(const std::string& s, int64_t from, int64_t to) {
  const auto offs = CodePointOffsets(s);
  const auto n = static_cast<int64_t>(offs.size() - 1);
  if (from > to) {
    return Err("invalid substring range. start: " + std::to_string(from) +
               ", end: " + std::to_string(to));
  }
  if (from < 0 || from > n) return Err("index out of range: " + std::to_string(from));
  if (to < 0 || to > n) return Err("index out of range: " + std::to_string(to));
  return Value::String(s.substr(offs[static_cast<size_t>(from)],
                                offs[static_cast<size_t>(to)] - offs[static_cast<size_t>(from)]));
}
Value Substring1(const Args& a, EvalBudget&) {
  const int64_t n = CodePoints(S(a[0]));
  if (I(a[1]) < 0 || I(a[1]) > n) return Err("index out of range: " + std::to_string(I(a[1])));
  return Substring(S(a[0]), I(a[1]), n);
}
Value Substring2(const Args& a, EvalBudget&) { return Substring(S(a[0]), I(a[1]), I(a[2])); }
Value Trim(const Args& a, EvalBudget&) {
  // Unicode White_Space in ASCII and the common non-ASCII spaces.
  static const std::vector<std::string> kSpaces = {" ",
                                                   "\t",
                                                   "\n",
                                                   "\v",
                                                   "\f",
                                                   "\r",
                                                   "\xc2\x85",
                                                   "\xc2\xa0",
                                                   "\xe1\x9a\x80",
                                                   "\xe2\x80\x80",
                                                   "\xe2\x80\x81",
                                                   "\xe2\x80\x82",
                                                   "\xe2\x80\x83",
                                                   "\xe2\x80\x84",
                                                   "\xe2\x80\x85",
                                                   "\xe2\x80\x86",
                                                   "\xe2\x80\x87",
                                                   "\xe2\x80\x88",
                                                   "\xe2\x80\x89",
                                                   "\xe2\x80\x8a",
                                                   "\xe2\x80\xa8",
                                                   "\xe2\x80\xa9",
                                                   "\xe2\x80\xaf",
                                                   "\xe2\x81\x9f",
                                                   "\xe3\x80\x80"};
  std::string_view s = S(a[0]);
  bool changed = true;
  while (changed) {
    changed = false;
    for (const auto& sp : kSpaces) {
      if (s.size() >= sp.size() && s.substr(0, sp.size()) == sp) {
        s.remove_prefix(sp.size());
        changed = true;
      }
      if (s.size() >= sp.size() && s.substr(s.size() - sp.size()) == sp) {
        s.remove_suffix(sp.size());
        changed = true;
      }
    }
  }
  return Value::String(std::string(s));
}
Value JoinImpl(const Value& list, const std::string& sep, EvalBudget& b) {
  uint64_t size = 0;
  for (const Value& v : list.Items()) {
    if (!v.Is<StringValue>()) return Err("no such overload");
    size += v.Str().size() + sep.size();
  }
  if (!b.Allocate(size)) return Err(kMemoryLimitMessage);
  std::string out;
  for (size_t i = 0; i < list.Items().size(); ++i) {
    if (i > 0) out += sep;
    out += list.Items()[i].Str();
  }
  return Value::String(std::move(out));
}
Value Join(const Args& a, EvalBudget& b) { return JoinImpl(a[0], "", b); }
Value JoinSep(const Args& a, EvalBudget& b) { return JoinImpl(a[0], S(a[1]), b); }
Value Quote(const Args& a, EvalBudget& b) {
  const std::string& s = S(a[0]);
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
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
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        out.push_back(c);
    }
  }
  out += "\"";
  if (!ValidUtf8(s)) {
    // Invalid sequences become U+FFFD, as Go's strings.ToValidUTF8 does before quoting.
    std::string fixed;
    size_t i = 0;
    while (i < out.size()) {
      const auto c = static_cast<unsigned char>(out[i]);
      size_t n = c < 0x80             ? 1
                 : (c & 0xE0) == 0xC0 ? 2
                 : (c & 0xF0) == 0xE0 ? 3
                 : (c & 0xF8) == 0xF0 ? 4
                                      : 0;
      if (n != 0 && i + n <= out.size() && ValidUtf8(out.substr(i, n))) {
        fixed.append(out, i, n);
        i += n;
      } else {
        fixed += "\xef\xbf\xbd";
        ++i;
        while (i < out.size() && (static_cast<unsigned char>(out[i]) & 0xC0) == 0x80) ++i;
      }
    }
    out = std::move(fixed);
  }
  return MakeString(std::move(out), b);
}

}  // namespace

void RegisterStrings(Registry& r) {
  r.Member("contains_string", "contains", {kString, kString}, kBool, Contains);
  r.Member("starts_with_string", "startsWith", {kString, kString}, kBool, StartsWith);
  r.Member("ends_with_string", "endsWith", {kString, kString}, kBool, EndsWith);
  r.Global("matches", "matches", {kString, kString}, kBool, Matches);
  r.Member("matches_string", "matches", {kString, kString}, kBool, Matches);
  r.Member("string_find_string", "find", {kString, kString}, kString, Find);
  r.Member("string_find_all_string", "findAll", {kString, kString}, kListString, FindAll);
  r.Member("string_find_all_string_int", "findAll", {kString, kString, kInt}, kListString,
           FindAllLimit);

  r.Member("string_char_at_int", "charAt", {kString, kInt}, kString, CharAt);
  r.Member("string_index_of_string", "indexOf", {kString, kString}, kInt, IndexOf);
  r.Member("string_index_of_string_int", "indexOf", {kString, kString, kInt}, kInt, IndexOfFrom);
  r.Member("string_last_index_of_string", "lastIndexOf", {kString, kString}, kInt, LastIndexOf);
  r.Member("string_last_index_of_string_int", "lastIndexOf", {kString, kString, kInt}, kInt,
           LastIndexOfFrom);
  r.Member("string_lower_ascii", "lowerAscii", {kString}, kString, LowerAscii);
  r.Member("string_upper_ascii", "upperAscii", {kString}, kString, UpperAscii);
  r.Member("string_replace_string_string", "replace", {kString, kString, kString}, kString,
           Replace);
  r.Member("string_replace_string_string_int", "replace", {kString, kString, kString, kInt},
           kString, ReplaceLimit);
  r.Member("string_split_string", "split", {kString, kString}, kListString, Split);
  r.Member("string_split_string_int", "split", {kString, kString, kInt}, kListString, SplitLimit);
  r.Member("string_substring_int", "substring", {kString, kInt}, kString, Substring1);
  r.Member("string_substring_int_int", "substring", {kString, kInt, kInt}, kString, Substring2);
  r.Member("string_trim", "trim", {kString}, kString, Trim);
  r.Member("list_join", "join", {kListString}, kString, Join);
  r.Member("list_join_string", "join", {kListString, kString}, kString, JoinSep);
  r.Global("strings_quote", "strings.quote", {kString}, kString, Quote);
}

}  // namespace berth::cel::lib

namespace berth::cel {

Value RegexCall(std::string_view function, const RE2& re, const std::vector<Value>& args,
                EvalBudget& budget) {
  if (function == "matches") return lib::MatchesWith(re, args);
  if (function == "find") return lib::FindWith(re, args);
  return lib::FindAllWith(re, args, budget);
}

}  // namespace berth::cel
