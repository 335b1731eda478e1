#ifndef BERTH_PKG_API_JSON_SAX_H_
#define BERTH_PKG_API_JSON_SAX_H_

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/api/errors.h"
#include "pkg/api/utf8.h"

namespace berth::api {

// A JSON (RFC 8259) parser that drives a handler with nlohmann/json's SAX interface: null(),
// boolean(bool), number_integer(int64_t), number_unsigned(uint64_t), number_float(double, const
// std::string&), string(std::string&), start_object(size_t), key(std::string&), end_object(),
// start_array(size_t), end_array(); a handler returning false stops the parse. Containers are
// announced with size -1, as nlohmann does.
//
// It exists because most of what the apiserver sends (managedFields, container statuses) is
// thrown away: before each value it asks the handler's SkipNextValue(), and a value the handler
// skips is scanned for its end without decoding a string or calling the handler. Inside a
// skipped value only the structure is checked (strings closed, brackets matched); everything the
// handler does see is validated as strictly as nlohmann does, UTF-8 included. Strings and keys
// are handed over in one reused buffer, which the handler may move from.
//
// Throws DecodeError(what, ...) naming the byte offset of the first error.
class JsonSaxParser {
 public:
  JsonSaxParser(std::string_view text, std::string what) : text_(text), what_(std::move(what)) {}

  template <typename Handler>
  void Parse(Handler* handler) {
    SkipWhitespace();
    if (!Value(handler, 0)) return;
    SkipWhitespace();
    if (pos_ != text_.size()) Fail("unexpected content after the JSON value");
  }

  // As Parse, but reads the first value only and ignores what follows it, as Go's json.Decoder
  // does for one Decode call (kube-scheduler decodes extender responses so).
  template <typename Handler>
  void ParseFirst(Handler* handler) {
    SkipWhitespace();
    Value(handler, 0);
  }

 private:
  static constexpr int kMaxDepth = 512;

  [[noreturn]] void Fail(const std::string& problem) const {
    throw DecodeError(what_, "malformed JSON at byte " + std::to_string(pos_) + ": " + problem);
  }

  void SkipWhitespace() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
      pos_++;
    }
  }

  char Peek() {
    if (pos_ >= text_.size()) Fail("unexpected end of input");
    return text_[pos_];
  }

  void Expect(char c) {
    if (Peek() != c) Fail(std::string("expected '") + c + "'");
    pos_++;
  }

  template <typename Handler>
  bool Value(Handler* handler, int depth) {
    if (depth > kMaxDepth) Fail("nested deeper than " + std::to_string(kMaxDepth));
    if (handler->SkipNextValue()) {
      SkipValue();
      return true;
    }
    switch (Peek()) {
      case '{':
        return Container(handler, depth, /*object=*/true);
      case '[':
        return Container(handler, depth, /*object=*/false);
      case '"':
        String();
        return handler->string(buffer_);
      case 't':
        Literal("true");
        return handler->boolean(true);
      case 'f':
        Literal("false");
        return handler->boolean(false);
      case 'n':
        Literal("null");
        return handler->null();
      default:
        return Number(handler);
    }
  }

  // An object or an array: elements separated by ',' up to the closing bracket, an object's
  // elements being key-value pairs.
  template <typename Handler>
  bool Container(Handler* handler, int depth, bool object) {
    constexpr auto kUnknownSize = static_cast<std::size_t>(-1);
    const char closer = object ? '}' : ']';
    pos_++;
    if (!(object ? handler->start_object(kUnknownSize) : handler->start_array(kUnknownSize))) {
      return false;
    }
    SkipWhitespace();
    if (Peek() != closer) {
      for (;;) {
        if (object) {
          if (Peek() != '"') Fail("expected a string key");
          String();
          if (!handler->key(buffer_)) return false;
          SkipWhitespace();
          Expect(':');
          SkipWhitespace();
        }
        if (!Value(handler, depth + 1)) return false;
        SkipWhitespace();
        if (Peek() == closer) break;
        if (Peek() != ',') Fail(std::string("expected ',' or '") + closer + "'");
        pos_++;
        SkipWhitespace();
      }
    }
    pos_++;
    return object ? handler->end_object() : handler->end_array();
  }

  void Literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) Fail("invalid literal");
    pos_ += word.size();
  }

  template <typename Handler>
  bool Number(Handler* handler) {
    const size_t start = pos_;
    bool negative = false;
    if (pos_ < text_.size() && text_[pos_] == '-') {
      negative = true;
      pos_++;
    }
    if (pos_ >= text_.size() || !IsDigit(text_[pos_])) Fail("invalid value");
    if (text_[pos_] == '0') {
      pos_++;
    } else {
      while (pos_ < text_.size() && IsDigit(text_[pos_])) pos_++;
    }
    bool integral = true;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      integral = false;
      pos_++;
      if (pos_ >= text_.size() || !IsDigit(text_[pos_])) Fail("expected a digit after '.'");
      while (pos_ < text_.size() && IsDigit(text_[pos_])) pos_++;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integral = false;
      pos_++;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) pos_++;
      if (pos_ >= text_.size() || !IsDigit(text_[pos_])) Fail("expected a digit in the exponent");
      while (pos_ < text_.size() && IsDigit(text_[pos_])) pos_++;
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    if (integral) {
      if (negative) {
        int64_t v = 0;
        if (std::from_chars(first, last, v).ec == std::errc()) return handler->number_integer(v);
      } else {
        uint64_t v = 0;
        if (std::from_chars(first, last, v).ec == std::errc()) return handler->number_unsigned(v);
      }
    }
    // Integers out of 64-bit range become floating point, as in nlohmann/json.
    buffer_.assign(first, last);
    double d = 0;
    const auto result = std::from_chars(first, last, d);
    if (result.ec == std::errc::result_out_of_range) {
      // from_chars leaves d alone. As in nlohmann/json, a value too small for a double rounds
      // to strtod's answer and one too large is an error. strtod reads '.' as the decimal point
      // because Berth never changes the C locale.
      d = std::strtod(buffer_.c_str(), nullptr);
      if (!std::isfinite(d)) Fail("number out of range");
    } else if (result.ec != std::errc()) {
      Fail("invalid number");
    }
    return handler->number_float(d, buffer_);
  }

  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  static int HexValue(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  unsigned Hex4() {
    if (text_.size() - pos_ < 4) Fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
      const int h = HexValue(text_[pos_ + i]);
      if (h < 0) Fail("invalid \\u escape");
      v = v * 16 + static_cast<unsigned>(h);
    }
    pos_ += 4;
    return v;
  }

  void AppendUtf8(unsigned cp) {
    if (cp < 0x80) {
      buffer_.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      buffer_.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      buffer_.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      buffer_.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      buffer_.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      buffer_.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      buffer_.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      buffer_.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      buffer_.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      buffer_.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  // Decodes the string starting at the opening quote into buffer_.
  void String() {
    pos_++;
    buffer_.clear();
    for (;;) {
      // Plain ASCII runs are copied in one go.
      size_t run = pos_;
      while (run < text_.size()) {
        const auto c = static_cast<unsigned char>(text_[run]);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        run++;
      }
      buffer_.append(text_.data() + pos_, run - pos_);
      pos_ = run;
      const auto c = static_cast<unsigned char>(Peek());
      if (c == '"') {
        pos_++;
        return;
      }
      if (c < 0x20) Fail("control character in a string");
      if (c >= 0x80) {
        const size_t n = Utf8SequenceLength(text_, pos_);
        if (n == 0) Fail("invalid UTF-8 in a string");
        buffer_.append(text_.data() + pos_, n);
        pos_ += n;
        continue;
      }
      pos_++;  // The backslash.
      const char e = Peek();
      pos_++;
      switch (e) {
        case '"':
        case '\\':
        case '/':
          buffer_.push_back(e);
          break;
        case 'b':
          buffer_.push_back('\b');
          break;
        case 'f':
          buffer_.push_back('\f');
          break;
        case 'n':
          buffer_.push_back('\n');
          break;
        case 'r':
          buffer_.push_back('\r');
          break;
        case 't':
          buffer_.push_back('\t');
          break;
        case 'u': {
          unsigned cp = Hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (text_.substr(pos_, 2) != "\\u") Fail("high surrogate without a low surrogate");
            pos_ += 2;
            const unsigned low = Hex4();
            if (low < 0xDC00 || low > 0xDFFF) Fail("high surrogate without a low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            Fail("low surrogate without a high surrogate");
          }
          AppendUtf8(cp);
          break;
        }
        default:
          pos_--;
          Fail("invalid escape in a string");
      }
    }
  }

  // Moves past one value without decoding it: strings are scanned for their closing quote and
  // brackets matched; scalars end at the next structural character or space, so a quote or a
  // bracket right after one is read as structure (and rejected by the caller), as a parser that
  // only tracks structure, such as ListStreamParser, reads it.
  void SkipValue() {
    const char first = Peek();
    if (first != '{' && first != '[') {
      if (first == '"') {
        SkipString();
        return;
      }
      const size_t start = pos_;
      while (pos_ < text_.size()) {
        const char c = text_[pos_];
        if (c == ',' || c == ':' || c == '{' || c == '}' || c == '[' || c == ']' || c == '"' ||
            c == ' ' || c == '\n' || c == '\r' || c == '\t') {
          break;
        }
        pos_++;
      }
      if (pos_ == start) Fail("expected a value");
      return;
    }
    closers_.clear();
    while (true) {
      const char c = Peek();
      if (c == '"') {
        SkipString();
        continue;
      }
      pos_++;
      if (c == '{') {
        closers_.push_back('}');
        if (closers_.size() > static_cast<size_t>(kMaxDepth)) Fail("nested too deep");
      } else if (c == '[') {
        closers_.push_back(']');
        if (closers_.size() > static_cast<size_t>(kMaxDepth)) Fail("nested too deep");
      } else if (c == '}' || c == ']') {
        if (c != closers_.back()) {
          pos_--;
          Fail("mismatched bracket");
        }
        closers_.pop_back();
        if (closers_.empty()) return;
      }
    }
  }

  void SkipString() {
    pos_++;
    for (;;) {
      const char c = Peek();
      pos_++;
      if (c == '"') return;
      if (c == '\\') {
        Peek();
        pos_++;
      }
    }
  }

  const std::string_view text_;
  const std::string what_;
  size_t pos_ = 0;
  std::string buffer_;
  std::vector<char> closers_;
};

}  // namespace berth::api

#endif  // BERTH_PKG_API_JSON_SAX_H_
