#include "pkg/cel/lexer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

namespace berth::cel {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool IsIdentStart(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
int HexVal(char c) {
  if (IsDigit(c)) return c - '0';
  return (c | 0x20) - 'a' + 10;
}

void AppendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

class Lexer {
 public:
  explicit Lexer(std::string_view in) : in_(in) {}

  bool Run(std::vector<Token>* tokens, int32_t* error_offset, std::string* error) {
    while (true) {
      SkipSpace();
      Token t;
      t.offset = static_cast<int32_t>(pos_);
      if (pos_ >= in_.size()) {
        tokens->push_back(t);
        return true;
      }
      if (!Next(&t)) {
        *error_offset = err_at_;
        *error = err_;
        return false;
      }
      t.text = in_.substr(static_cast<size_t>(t.offset), pos_ - static_cast<size_t>(t.offset));
      tokens->push_back(std::move(t));
    }
  }

 private:
  char Peek(size_t ahead = 0) const { return pos_ + ahead < in_.size() ? in_[pos_ + ahead] : '\0'; }

  bool Fail(size_t at, std::string msg) {
    err_at_ = static_cast<int32_t>(at);
    err_ = std::move(msg);
    return false;
  }

  void SkipSpace() {
    while (pos_ < in_.size()) {
      const char c = in_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
        ++pos_;
      } else if (c == '/' && Peek(1) == '/') {
        while (pos_ < in_.size() && in_[pos_] != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  bool Next(Token* t) {
    const char c = Peek();
    const size_t start = pos_;
    if (IsIdentStart(c)) {
      // A string prefix: r, b, or both in either order, directly before a quote.
      size_t p = pos_;
      bool raw = false;
      bool bytes = false;
      for (int i = 0; i < 2 && p < in_.size(); ++i) {
        const char l = static_cast<char>(in_[p] | 0x20);
        if (l == 'r' && !raw) {
          raw = true;
        } else if (l == 'b' && !bytes) {
          bytes = true;
        } else {
          break;
        }
        ++p;
      }
      if ((raw || bytes) && p < in_.size() && (in_[p] == '"' || in_[p] == '\'')) {
        pos_ = p;
        return String(t, raw, bytes);
      }
      while (IsIdentStart(Peek()) || IsDigit(Peek())) ++pos_;
      const std::string_view word = in_.substr(start, pos_ - start);
      if (word == "true") {
        t->kind = Tok::kTrue;
      } else if (word == "false") {
        t->kind = Tok::kFalse;
      } else if (word == "null") {
        t->kind = Tok::kNull;
      } else if (word == "in") {
        t->kind = Tok::kIn;
      } else {
        t->kind = Tok::kIdent;
        t->value = std::string(word);
      }
      return true;
    }
    if (IsDigit(c) || (c == '.' && IsDigit(Peek(1)))) return Number(t);
    if (c == '"' || c == '\'') return String(t, false, false);
    ++pos_;
    switch (c) {
      case '(':
        t->kind = Tok::kLParen;
        return true;
      case ')':
        t->kind = Tok::kRParen;
        return true;
      case '[':
        t->kind = Tok::kLBracket;
        return true;
      case ']':
        t->kind = Tok::kRBracket;
        return true;
      case '{':
        t->kind = Tok::kLBrace;
        return true;
      case '}':
        t->kind = Tok::kRBrace;
        return true;
      case '.':
        t->kind = Tok::kDot;
        return true;
      case ',':
        t->kind = Tok::kComma;
        return true;
      case ':':
        t->kind = Tok::kColon;
        return true;
      case '?':
        t->kind = Tok::kQuestion;
        return true;
      case '+':
        t->kind = Tok::kPlus;
        return true;
      case '-':
        t->kind = Tok::kMinus;
        return true;
      case '*':
        t->kind = Tok::kStar;
        return true;
      case '/':
        t->kind = Tok::kSlash;
        return true;
      case '%':
        t->kind = Tok::kPercent;
        return true;
      case '|':
        if (Peek() == '|') {
          ++pos_;
          t->kind = Tok::kOr;
          return true;
        }
        break;
      case '&':
        if (Peek() == '&') {
          ++pos_;
          t->kind = Tok::kAnd;
          return true;
        }
        break;
      case '=':
        if (Peek() == '=') {
          ++pos_;
          t->kind = Tok::kEq;
          return true;
        }
        break;
      case '!':
        if (Peek() == '=') {
          ++pos_;
          t->kind = Tok::kNe;
        } else {
          t->kind = Tok::kNot;
        }
        return true;
      case '<':
        if (Peek() == '=') {
          ++pos_;
          t->kind = Tok::kLe;
        } else {
          t->kind = Tok::kLt;
        }
        return true;
      case '>':
        if (Peek() == '=') {
          ++pos_;
          t->kind = Tok::kGe;
        } else {
          t->kind = Tok::kGt;
        }
        return true;
      default:
        break;
    }
    std::string shown(1, c);
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      shown = "\\x" + std::string(1, "0123456789abcdef"[(c >> 4) & 0xF]) +
              std::string(1, "0123456789abcdef"[c & 0xF]);
    }
    return Fail(start, "Syntax error: token recognition error at: '" + shown + "'");
  }

  bool Number(Token* t) {
    const size_t start = pos_;
    if (Peek() == '0' && (Peek(1) == 'x' || Peek(1) == 'X') && IsHex(Peek(2))) {
      pos_ += 2;
      uint64_t v = 0;
      bool overflow = false;
      while (IsHex(Peek())) {
        if (v > (UINT64_MAX >> 4)) overflow = true;
        v = (v << 4) | static_cast<uint64_t>(HexVal(Peek()));
        ++pos_;
      }
      if (Peek() == 'u' || Peek() == 'U') {
        ++pos_;
        t->kind = Tok::kUint;
      } else {
        t->kind = Tok::kInt;
      }
      if (overflow) return Fail(start, "invalid int literal");
      t->u = v;
      return true;
    }
    while (IsDigit(Peek())) ++pos_;
    bool is_double = false;
    if (Peek() == '.' && IsDigit(Peek(1))) {
      is_double = true;
      ++pos_;
      while (IsDigit(Peek())) ++pos_;
    }
    if ((Peek() == 'e' || Peek() == 'E') &&
        (IsDigit(Peek(1)) || ((Peek(1) == '+' || Peek(1) == '-') && IsDigit(Peek(2))))) {
      is_double = true;
      pos_ += 2;
      while (IsDigit(Peek())) ++pos_;
    }
    const std::string text(in_.substr(start, pos_ - start));
    if (is_double) {
      t->kind = Tok::kDouble;
      t->d = std::strtod(text.c_str(), nullptr);
      return true;
    }
    uint64_t v = 0;
    bool overflow = false;
    for (char c : text) {
      const auto digit = static_cast<uint64_t>(c - '0');
      if (v > (UINT64_MAX - digit) / 10) overflow = true;
      v = v * 10 + digit;
    }
    if (Peek() == 'u' || Peek() == 'U') {
      ++pos_;
      t->kind = Tok::kUint;
    } else {
      t->kind = Tok::kInt;
    }
    if (overflow)
      return Fail(start, t->kind == Tok::kUint ? "invalid uint literal" : "invalid int literal");
    t->u = v;
    return true;
  }

  // A malformed string is reported as ANTLR's lexer reports it: the text from the token's
  // start through the character it could not take.
  bool BadString(size_t start, size_t end) {
    end = std::min(end, in_.size());
    return Fail(start, "Syntax error: token recognition error at: '" +
                           std::string(in_.substr(start, end - start)) + "'");
  }

  bool String(Token* t, bool raw, bool bytes) {
    const auto start = static_cast<size_t>(t->offset);
    const char quote = Peek();
    const bool triple = Peek(1) == quote && Peek(2) == quote;
    pos_ += triple ? 3 : 1;
    std::string out;
    while (true) {
      if (pos_ >= in_.size()) return BadString(start, pos_);
      const char c = in_[pos_];
      if (c == quote && (!triple || (Peek(1) == quote && Peek(2) == quote))) {
        pos_ += triple ? 3 : 1;
        break;
      }
      if (!triple && (c == '\n' || c == '\r')) return BadString(start, pos_ + 1);
      if (c != '\\' || raw) {
        out.push_back(c);
        ++pos_;
        continue;
      }
      if (!Escape(&out, bytes)) return BadString(start, pos_);
    }
    t->kind = bytes ? Tok::kBytes : Tok::kString;
    if (!bytes && !ValidUtf8(out)) return BadString(start, pos_);
    t->value = std::move(out);
    return true;
  }

  bool Escape(std::string* out, bool bytes) {
    const size_t at = pos_;
    ++pos_;  // the backslash
    const char c = Peek();
    ++pos_;
    switch (c) {
      case 'a':
        out->push_back('\a');
        return true;
      case 'b':
        out->push_back('\b');
        return true;
      case 'f':
        out->push_back('\f');
        return true;
      case 'n':
        out->push_back('\n');
        return true;
      case 'r':
        out->push_back('\r');
        return true;
      case 't':
        out->push_back('\t');
        return true;
      case 'v':
        out->push_back('\v');
        return true;
      case '\\':
      case '\'':
      case '"':
      case '`':
      case '?':
        out->push_back(c);
        return true;
      case 'x':
      case 'X':
      case 'u':
      case 'U': {
        const int n = (c == 'x' || c == 'X') ? 2 : (c == 'u' ? 4 : 8);
        uint32_t v = 0;
        for (int i = 0; i < n; ++i) {
          if (!IsHex(Peek())) {
            ++pos_;
            return Fail(at, "invalid escape sequence");
          }
          v = (v << 4) | static_cast<uint32_t>(HexVal(Peek()));
          ++pos_;
        }
        if (n == 2) {
          if (bytes) {
            out->push_back(static_cast<char>(v));
          } else {
            AppendUtf8(out, v);
          }
          return true;
        }
        if (bytes) return Fail(at, "unicode escape in bytes literal");
        if (v > 0x10FFFF || (v >= 0xD800 && v < 0xE000)) {
          return Fail(at, "invalid unicode code point in escape sequence");
        }
        AppendUtf8(out, v);
        return true;
      }
      default:
        break;
    }
    if (c >= '0' && c <= '3' && Peek() >= '0' && Peek() <= '7' && Peek(1) >= '0' &&
        Peek(1) <= '7') {
      const uint32_t v = static_cast<uint32_t>(c - '0') * 64 +
                         static_cast<uint32_t>(Peek() - '0') * 8 +
                         static_cast<uint32_t>(Peek(1) - '0');
      pos_ += 2;
      if (bytes) {
        out->push_back(static_cast<char>(v));
      } else {
        AppendUtf8(out, v);
      }
      return true;
    }
    return Fail(at, "invalid escape sequence in string literal");
  }

  static bool ValidUtf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
      const auto c = static_cast<unsigned char>(s[i]);
      size_t n = 0;
      uint32_t cp = 0;
      if (c < 0x80) {
        ++i;
        continue;
      }
      if ((c & 0xE0) == 0xC0) {
        n = 1;
        cp = c & 0x1F;
      } else if ((c & 0xF0) == 0xE0) {
        n = 2;
        cp = c & 0x0F;
      } else if ((c & 0xF8) == 0xF0) {
        n = 3;
        cp = c & 0x07;
      } else {
        return false;
      }
      for (size_t k = 1; k <= n; ++k) {
        if (i + k >= s.size()) return false;
        const auto cc = static_cast<unsigned char>(s[i + k]);
        if ((cc & 0xC0) != 0x80) return false;
        cp = (cp << 6) | (cc & 0x3F);
      }
      if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
          cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) {
        return false;
      }
      i += n + 1;
    }
    return true;
  }

  std::string_view in_;
  size_t pos_ = 0;
  int32_t err_at_ = 0;
  std::string err_;
};

}  // namespace

bool Lex(std::string_view input, std::vector<Token>* tokens, int32_t* error_offset,
         std::string* error) {
  return Lexer(input).Run(tokens, error_offset, error);
}

}  // namespace berth::cel
