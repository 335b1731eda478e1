// String functions: CEL's own (contains, startsWith, endsWith, matches), the strings
// extension at version 2, and Kubernetes' regex library (find, findAll). Regular expressions are
// RE2, the syntax and linear-time matching of Go's regexp.

#include <re2/re2.h>

#include <algorithm>
#include <limits>
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
  // The last occurrence starting at or before `limit`, or npos; the needle is not empty. One
  // forward pass that keeps its state across matches, so overlapping ones cost nothing extra.
  size_t FindLast(const std::string& hay, size_t limit) const {
    size_t last = std::string::npos;
    const size_t end = std::min(hay.size(), limit + needle_.size());
    size_t k = 0;
    for (size_t i = 0; i < end; ++i) {
      while (k > 0 && hay[i] != needle_[k]) k = fail_[k];
      if (hay[i] == needle_[k]) ++k;
      if (k == needle_.size()) {
        last = i + 1 - k;
        k = fail_[k];
      }
    }
    return last;
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

const StringValue& Sv(const Value& v) { return v.As<StringValue>(); }

// Code points are located through the string's checkpoints: no call allocates or walks more
// than one stride to find an index (charAt() costs one unit whatever the length).
Value CharAt(const Args& a, EvalBudget&) {
  const StringValue& s = Sv(a[0]);
  const int64_t i = I(a[1]);
  if (i < 0 || i > s.code_points) return Err("index out of range: " + std::to_string(i));
  if (i == s.code_points) return Value::String("");
  const size_t from = s.ByteOffset(i);
  size_t to = from + 1;
  while (to < s.s->size() && (static_cast<unsigned char>((*s.s)[to]) & 0xC0) == 0x80) ++to;
  return Value::String(s.s->substr(from, to - from));
}
// The strings extension's indexOf/lastIndexOf over code points: a negative offset is an error,
// an offset past the end finds nothing (the empty string is found at the clamped offset).
Value IndexOfImpl(const StringValue& s, const std::string& sub, int64_t off) {
  if (off < 0) return Err("index out of range: " + std::to_string(off));
  const int64_t n = s.code_points;
  if (sub.empty()) return Value::Int(std::min(off, n));
  if (off >= n) return Value::Int(-1);
  const size_t at = Searcher(sub).Find(*s.s, s.ByteOffset(off));
  if (at == std::string::npos) return Value::Int(-1);
  return Value::Int(s.CodePointAt(at));
}
Value IndexOf(const Args& a, EvalBudget&) { return IndexOfImpl(Sv(a[0]), S(a[1]), 0); }
Value IndexOfFrom(const Args& a, EvalBudget&) { return IndexOfImpl(Sv(a[0]), S(a[1]), I(a[2])); }
Value LastIndexOfImpl(const StringValue& s, const Value& sub, int64_t off) {
  if (off < 0) return Err("index out of range: " + std::to_string(off));
  const int64_t n = s.code_points;
  if (S(sub).empty()) return Value::Int(std::min(off, n));
  if (off >= n) return Value::Int(-1);
  const int64_t m = Sv(sub).code_points;
  if (m > n) return Value::Int(-1);
  off = std::min(off, n - m);
  const size_t found = Searcher(S(sub)).FindLast(*s.s, s.ByteOffset(off));
  if (found == std::string::npos) return Value::Int(-1);
  return Value::Int(s.CodePointAt(found));
}
Value LastIndexOf(const Args& a, EvalBudget&) {
  if (S(a[1]).empty()) return Value::Int(Sv(a[0]).code_points);
  if (S(a[0]).size() < S(a[1]).size()) return Value::Int(-1);
  return LastIndexOfImpl(Sv(a[0]), a[1], Sv(a[0]).code_points - 1);
}
Value LastIndexOfFrom(const Args& a, EvalBudget&) {
  return LastIndexOfImpl(Sv(a[0]), a[1], I(a[2]));
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
// The byte offset where the code point after the one at `at` starts.
size_t NextCodePoint(const std::string& s, size_t at) {
  ++at;
  while (at < s.size() && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80) ++at;
  return at;
}

// The memory a list of `pieces` strings holding `bytes` in all takes: each piece is a Value and
// a shared string of its own.
uint64_t PiecesFootprint(uint64_t pieces, uint64_t bytes) {
  constexpr uint64_t kPerString = sizeof(Value) + sizeof(std::string) + 2 * sizeof(void*);
  return bytes + pieces * kPerString;
}

// As Go's strings.Replace: an empty `from` matches before each code point and at the end.
// The replacements are counted first, so the result's size is charged to the memory bound
// before any of it is built, and no table of positions is kept.
Value ReplaceN(const StringValue& sv, const std::string& from, const std::string& to, int64_t n,
               EvalBudget& b) {
  const std::string& s = *sv.s;
  if (n == 0) return Value::String(s);
  const auto within = [n](uint64_t count) { return n < 0 || count < static_cast<uint64_t>(n); };
  const Searcher searcher(from);
  uint64_t count = 0;
  if (from.empty()) {
    count = static_cast<uint64_t>(sv.code_points) + 1;
    if (n > 0) count = std::min(count, static_cast<uint64_t>(n));
  } else {
    for (size_t p = searcher.Find(s, 0); p != std::string::npos && within(count);
         p = searcher.Find(s, p + from.size())) {
      ++count;
    }
  }
  const uint64_t removed = count * from.size();
  const unsigned __int128 size =
      static_cast<unsigned __int128>(count) * to.size() + (s.size() - removed);
  // A size past the bound is charged as just past it: the sum must not wrap.
  const uint64_t charged = size > EvalBudget::kMaxAllocatedBytes
                               ? EvalBudget::kMaxAllocatedBytes + 1
                               : static_cast<uint64_t>(size);
  if (!b.Allocate(charged)) return Err(kMemoryLimitMessage);
  std::string out;
  out.reserve(static_cast<size_t>(size));
  size_t prev = 0;
  for (uint64_t done = 0; done < count; ++done) {
    size_t p = 0;
    if (from.empty()) {
      p = done == 0 ? 0 : NextCodePoint(s, prev);
    } else {
      p = searcher.Find(s, prev);
    }
    out.append(s, prev, p - prev);
    out += to;
    prev = p + from.size();
  }
  out.append(s, prev, std::string::npos);
  return Value::String(std::move(out));
}
Value Replace(const Args& a, EvalBudget& b) { return ReplaceN(Sv(a[0]), S(a[1]), S(a[2]), -1, b); }
Value ReplaceLimit(const Args& a, EvalBudget& b) {
  return ReplaceN(Sv(a[0]), S(a[1]), S(a[2]), I(a[3]), b);
}
// As Go's strings.SplitN. The pieces are counted and charged to the memory bound before any
// is built.
Value SplitN(const StringValue& sv, const std::string& sep, int64_t n, EvalBudget& b) {
  const std::string& s = *sv.s;
  if (n == 0) return Value::List({});
  const auto limit = n < 0 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(n);
  const Searcher searcher(sep);
  uint64_t pieces = 0;
  if (sep.empty()) {
    pieces = std::min(static_cast<uint64_t>(sv.code_points), limit);
  } else {
    pieces = 1;
    for (size_t p = searcher.Find(s, 0); p != std::string::npos && pieces < limit;
         p = searcher.Find(s, p + sep.size())) {
      ++pieces;
    }
  }
  if (!b.Allocate(PiecesFootprint(pieces, s.size()))) return Err(kMemoryLimitMessage);
  std::vector<Value> out;
  out.reserve(static_cast<size_t>(pieces));
  size_t prev = 0;
  for (uint64_t i = 0; i < pieces; ++i) {
    if (i + 1 == pieces && (!sep.empty() || pieces == limit)) {
      out.push_back(Value::String(s.substr(prev)));
      break;
    }
    const size_t p = sep.empty() ? NextCodePoint(s, prev) : searcher.Find(s, prev);
    out.push_back(Value::String(s.substr(prev, p - prev)));
    prev = p + sep.size();
  }
  return Value::List(std::move(out));
}
Value Split(const Args& a, EvalBudget& b) { return SplitN(Sv(a[0]), S(a[1]), -1, b); }
Value SplitLimit(const Args& a, EvalBudget& b) { return SplitN(Sv(a[0]), S(a[1]), I(a[2]), b); }
Value Substring(const StringValue& s, int64_t from, int64_t to, EvalBudget& b) {
  const int64_t n = s.code_points;
  if (from > to) {
    return Err("invalid substring range. start: " + std::to_string(from) +
               ", end: " + std::to_string(to));
  }
  if (from < 0 || from > n) return Err("index out of range: " + std::to_string(from));
  if (to < 0 || to > n) return Err("index out of range: " + std::to_string(to));
  const size_t begin = s.ByteOffset(from);
  return MakeString(s.s->substr(begin, s.ByteOffset(to) - begin), b);
}
Value Substring1(const Args& a, EvalBudget& b) {
  const int64_t n = Sv(a[0]).code_points;
  if (I(a[1]) < 0 || I(a[1]) > n) return Err("index out of range: " + std::to_string(I(a[1])));
  return Substring(Sv(a[0]), I(a[1]), n, b);
}
Value Substring2(const Args& a, EvalBudget& b) { return Substring(Sv(a[0]), I(a[1]), I(a[2]), b); }
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
