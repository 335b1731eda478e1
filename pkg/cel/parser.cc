#include "pkg/cel/parser.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "pkg/cel/lexer.h"

namespace berth::cel {
namespace {

const std::set<std::string_view>& ReservedWords() {
  static const std::set<std::string_view> words = {
      "as",  "break", "const",   "continue",  "else",   "for", "function", "if",   "import",
      "let", "loop",  "package", "namespace", "return", "var", "void",     "while"};
  return words;
}

// Thrown inside the parser only; Parse() turns it into a ParseError.
struct Failure {
  int32_t offset;
  std::string message;
};

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  ExprPtr ParseAll() {
    ExprPtr e = ParseExpr();
    if (Cur().kind != Tok::kEof) {
      Fail(Cur().offset,
           "Syntax error: extraneous input '" + std::string(Cur().text) + "' expecting <EOF>");
    }
    return e;
  }

 private:
  const Token& Cur() const { return toks_[pos_]; }
  const Token& Ahead(size_t n) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  bool Accept(Tok k) {
    if (Cur().kind != k) return false;
    ++pos_;
    return true;
  }
  [[noreturn]] void Fail(int32_t offset, std::string msg) { throw Failure{offset, std::move(msg)}; }
  [[noreturn]] void Unexpected(std::string_view expecting) {
    const std::string shown =
        "'" + (Cur().kind == Tok::kEof ? std::string("<EOF>") : std::string(Cur().text)) + "'";
    Fail(Cur().offset,
         "Syntax error: mismatched input " + shown + " expecting " + std::string(expecting));
  }
  // A missing closing token is reported as ANTLR's single-token insertion: "missing ')' at 'x'".
  void Expect(Tok k, std::string_view what) {
    if (Accept(k)) return;
    const std::string shown =
        Cur().kind == Tok::kEof ? std::string("<EOF>") : std::string(Cur().text);
    Fail(Cur().offset, "Syntax error: missing " + std::string(what) + " at '" + shown + "'");
  }

  ExprPtr Node(ExprKind kind, int32_t offset) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->offset = offset;
    return e;
  }
  ExprPtr Finish(ExprPtr e) {
    int h = 0;
    for (const auto& a : e->args) h = std::max(h, a->height);
    e->height = h + 1;
    if (e->height > kMaxHeight) {
      Fail(e->offset, "expression recursion limit exceeded: " + std::to_string(kMaxHeight));
    }
    return e;
  }
  ExprPtr Call(const std::string& name, int32_t offset, std::vector<ExprPtr> args,
               bool member = false) {
    ExprPtr e = Node(ExprKind::kCall, offset);
    e->name = name;
    e->member = member;
    e->args = std::move(args);
    return Finish(std::move(e));
  }
  ExprPtr Binary(const std::string& name, int32_t offset, ExprPtr l, ExprPtr r) {
    std::vector<ExprPtr> args;
    args.push_back(std::move(l));
    args.push_back(std::move(r));
    return Call(name, offset, std::move(args));
  }

  // Nesting of the recursive productions, bounded as CEL bounds it.
  struct Nest {
    explicit Nest(Parser* p) : p_(p) {
      if (++p_->depth_ > kMaxNesting) {
        p_->Fail(p_->Cur().offset,
                 "expression recursion limit exceeded: " + std::to_string(kMaxNesting));
      }
    }
    ~Nest() { --p_->depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;
    Parser* p_;
  };

  ExprPtr ParseExpr() {
    Nest nest(this);
    ExprPtr cond = ParseLogical(Tok::kOr);
    if (Cur().kind != Tok::kQuestion) return cond;
    const int32_t at = Cur().offset;
    ++pos_;
    ExprPtr yes = ParseLogical(Tok::kOr);
    Expect(Tok::kColon, "':'");
    ExprPtr no = ParseExpr();
    std::vector<ExprPtr> args;
    args.push_back(std::move(cond));
    args.push_back(std::move(yes));
    args.push_back(std::move(no));
    return Call("_?_:_", at, std::move(args));
  }

  // A chain of || (or of &&), built as a balanced tree as CEL does, so long conjunctions
  // stay shallow.
  ExprPtr ParseLogical(Tok op) {
    std::vector<ExprPtr> terms;
    std::vector<int32_t> ops;
    terms.push_back(op == Tok::kOr ? ParseLogical(Tok::kAnd) : ParseRelation());
    while (Cur().kind == op) {
      ops.push_back(Cur().offset);
      ++pos_;
      terms.push_back(op == Tok::kOr ? ParseLogical(Tok::kAnd) : ParseRelation());
    }
    if (terms.size() == 1) return std::move(terms[0]);
    return Balance(op == Tok::kOr ? "_||_" : "_&&_", &terms, ops, 0, terms.size());
  }
  ExprPtr Balance(const std::string& name, std::vector<ExprPtr>* terms,
                  const std::vector<int32_t>& ops, size_t lo, size_t hi) {
    if (hi - lo == 1) return std::move((*terms)[lo]);
    const size_t mid = lo + (hi - lo) / 2;
    ExprPtr l = Balance(name, terms, ops, lo, mid);
    ExprPtr r = Balance(name, terms, ops, mid, hi);
    return Binary(name, ops[mid - 1], std::move(l), std::move(r));
  }

  ExprPtr ParseRelation() {
    ExprPtr e = ParseAddition();
    while (true) {
      std::string name;
      switch (Cur().kind) {
        case Tok::kLt:
          name = "_<_";
          break;
        case Tok::kLe:
          name = "_<=_";
          break;
        case Tok::kGt:
          name = "_>_";
          break;
        case Tok::kGe:
          name = "_>=_";
          break;
        case Tok::kEq:
          name = "_==_";
          break;
        case Tok::kNe:
          name = "_!=_";
          break;
        case Tok::kIn:
          name = "@in";
          break;
        default:
          return e;
      }
      const int32_t at = Cur().offset;
      ++pos_;
      e = Binary(name, at, std::move(e), ParseAddition());
    }
  }

  ExprPtr ParseAddition() {
    ExprPtr e = ParseMultiplication();
    while (Cur().kind == Tok::kPlus || Cur().kind == Tok::kMinus) {
      const std::string name = Cur().kind == Tok::kPlus ? "_+_" : "_-_";
      const int32_t at = Cur().offset;
      ++pos_;
      e = Binary(name, at, std::move(e), ParseMultiplication());
    }
    return e;
  }

  ExprPtr ParseMultiplication() {
    ExprPtr e = ParseUnary();
    while (Cur().kind == Tok::kStar || Cur().kind == Tok::kSlash || Cur().kind == Tok::kPercent) {
      const std::string name =
          Cur().kind == Tok::kStar ? "_*_" : (Cur().kind == Tok::kSlash ? "_/_" : "_%_");
      const int32_t at = Cur().offset;
      ++pos_;
      e = Binary(name, at, std::move(e), ParseUnary());
    }
    return e;
  }

  ExprPtr ParseUnary() {
    const Tok op = Cur().kind;
    if (op != Tok::kNot && op != Tok::kMinus) return ParseMember();
    const int32_t at = Cur().offset;
    // One minus directly before a number is the number's sign (so -9223372036854775808 is an
    // int literal), as CEL's grammar reads it.
    if (op == Tok::kMinus && (Ahead(1).kind == Tok::kInt || Ahead(1).kind == Tok::kDouble)) {
      ++pos_;
      return ParseMember(/*negate_literal=*/true, at);
    }
    // A run of `!` or `-` is one operator when its length is odd and none when even, as
    // cel-go's parser folds it.
    size_t count = 0;
    while (Cur().kind == op) {
      ++count;
      ++pos_;
    }
    ExprPtr e = ParseMember();
    if (count % 2 == 0) return e;
    std::vector<ExprPtr> args;
    args.push_back(std::move(e));
    return Call(op == Tok::kNot ? "!_" : "-_", at, std::move(args));
  }

  ExprPtr ParseMember(bool negate_literal = false, int32_t sign_offset = 0) {
    ExprPtr e = ParsePrimary(negate_literal, sign_offset);
    while (true) {
      const int32_t at = Cur().offset;
      if (Accept(Tok::kDot)) {
        if (Cur().kind == Tok::kQuestion) {
          Fail(Cur().offset,
               "optional field selection ('.?') is not supported by Berth's CEL evaluator");
        }
        if (Cur().kind != Tok::kIdent) Unexpected("IDENTIFIER");
        std::string field = Cur().value;
        ++pos_;
        // A call's position is its '(' as in cel-go's messages; a selection's is its '.'.
        const int32_t paren_at = Cur().offset;
        if (Accept(Tok::kLParen)) {
          std::vector<ExprPtr> args;
          args.push_back(std::move(e));
          ParseArgs(&args, Tok::kRParen);
          e = MemberCall(field, paren_at, std::move(args));
        } else {
          ExprPtr s = Node(ExprKind::kSelect, at);
          s->name = std::move(field);
          s->args.push_back(std::move(e));
          e = Finish(std::move(s));
        }
      } else if (Accept(Tok::kLBracket)) {
        if (Cur().kind == Tok::kQuestion) {
          Fail(Cur().offset, "optional index ('[?') is not supported by Berth's CEL evaluator");
        }
        ExprPtr index = ParseExpr();
        Expect(Tok::kRBracket, "']'");
        e = Binary("_[_]", at, std::move(e), std::move(index));
      } else {
        return e;
      }
    }
  }

  void ParseArgs(std::vector<ExprPtr>* args, Tok close) {
    if (Accept(close)) return;
    while (true) {
      args->push_back(ParseExpr());
      if (Accept(close)) return;
      if (!Accept(Tok::kComma)) Unexpected(close == Tok::kRParen ? "{',', ')'}" : "{',', ']'}");
      if (Accept(close)) return;  // a trailing comma
    }
  }

  // Every nested production (parentheses, list and map elements, arguments, indexes) goes
  // through ParseExpr, which counts the level; the rest of the chain down to here does not
  // recurse, so one expression level is one count, as in CEL's parser.
  ExprPtr ParsePrimary(bool negate, int32_t sign_offset) {
    const Token& t = Cur();
    const int32_t at = negate ? sign_offset : t.offset;
    switch (t.kind) {
      case Tok::kInt: {
        ExprPtr e = Node(ExprKind::kLiteral, at);
        const uint64_t limit = negate ? (uint64_t{1} << 63) : (uint64_t{1} << 63) - 1;
        if (t.u > limit) Fail(at, "invalid int literal");
        e->literal = Value::Int(negate ? static_cast<int64_t>(0 - t.u) : static_cast<int64_t>(t.u));
        ++pos_;
        return e;
      }
      case Tok::kUint: {
        ExprPtr e = Node(ExprKind::kLiteral, at);
        e->literal = Value::Uint(t.u);
        ++pos_;
        return e;
      }
      case Tok::kDouble: {
        ExprPtr e = Node(ExprKind::kLiteral, at);
        e->literal = Value::Double(negate ? -t.d : t.d);
        ++pos_;
        return e;
      }
      case Tok::kString:
      case Tok::kBytes: {
        ExprPtr e = Node(ExprKind::kLiteral, at);
        e->literal = t.kind == Tok::kString ? Value::String(t.value) : Value::Bytes(t.value);
        ++pos_;
        return e;
      }
      case Tok::kTrue:
      case Tok::kFalse: {
        ExprPtr e = Node(ExprKind::kLiteral, at);
        e->literal = Value::Bool(t.kind == Tok::kTrue);
        ++pos_;
        return e;
      }
      case Tok::kNull: {
        ExprPtr e = Node(ExprKind::kLiteral, at);
        e->literal = Value::Null();
        ++pos_;
        return e;
      }
      case Tok::kLParen: {
        ++pos_;
        ExprPtr e = ParseExpr();
        Expect(Tok::kRParen, "')'");
        return e;
      }
      case Tok::kLBracket: {
        ++pos_;
        if (Cur().kind == Tok::kQuestion) {
          Fail(Cur().offset,
               "optional list elements ('[?') are not supported by Berth's CEL evaluator");
        }
        ExprPtr e = Node(ExprKind::kList, at);
        ParseArgs(&e->args, Tok::kRBracket);
        return Finish(std::move(e));
      }
      case Tok::kLBrace: {
        ++pos_;
        ExprPtr e = Node(ExprKind::kMap, at);
        if (!Accept(Tok::kRBrace)) {
          while (true) {
            if (Cur().kind == Tok::kQuestion) {
              Fail(Cur().offset,
                   "optional map entries ('{?') are not supported by Berth's CEL evaluator");
            }
            e->args.push_back(ParseExpr());
            Expect(Tok::kColon, "':'");
            e->args.push_back(ParseExpr());
            if (Accept(Tok::kRBrace)) break;
            if (!Accept(Tok::kComma)) Unexpected("{',', '}'}");
            if (Accept(Tok::kRBrace)) break;
          }
        }
        return Finish(std::move(e));
      }
      case Tok::kDot:
      case Tok::kIdent: {
        Accept(Tok::kDot);  // a leading dot names the root scope; only `device` lives there
        if (Cur().kind != Tok::kIdent) Unexpected("IDENTIFIER");
        std::string name = Cur().value;
        const int32_t name_at = Cur().offset;
        if (ReservedWords().count(name) != 0) Fail(name_at, "reserved identifier: " + name);
        ++pos_;
        const int32_t paren_at = Cur().offset;
        if (Accept(Tok::kLParen)) {
          std::vector<ExprPtr> args;
          ParseArgs(&args, Tok::kRParen);
          return GlobalCall(name, paren_at, std::move(args));
        }
        if (Cur().kind == Tok::kLBrace) {
          Fail(Cur().offset,
               "message construction ('" + name + "{...}') is not supported in DRA selectors");
        }
        ExprPtr e = Node(ExprKind::kIdent, name_at);
        e->name = std::move(name);
        return e;
      }
      default:
        Unexpected(
            "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, "
            "STRING, BYTES, IDENTIFIER}");
    }
  }

  std::string SimpleName(const ExprPtr& e) {
    if (e->kind != ExprKind::kIdent) Fail(e->offset, "argument must be a simple name");
    return e->name;
  }

  ExprPtr GlobalCall(const std::string& name, int32_t at, std::vector<ExprPtr> args) {
    if (name == "has" && args.size() == 1) {
      if (args[0]->kind != ExprKind::kSelect) {
        Fail(args[0]->offset, "invalid argument to has() macro");
      }
      ExprPtr e = std::move(args[0]);
      e->kind = ExprKind::kPresence;
      return e;
    }
    return Call(name, at, std::move(args));
  }

  ExprPtr Comprehension(Macro macro, int32_t at, std::vector<ExprPtr> args, size_t vars) {
    // args: the target, then `vars` simple names, then the bodies.
    ExprPtr e = Node(ExprKind::kComprehension, at);
    e->macro = macro;
    e->var = SimpleName(args[1]);
    if (vars == 2) {
      e->var2 = SimpleName(args[2]);
      if (e->var == e->var2) Fail(args[2]->offset, "duplicate variable name: " + e->var);
    }
    e->args.push_back(std::move(args[0]));
    for (size_t i = 1 + vars; i < args.size(); ++i) e->args.push_back(std::move(args[i]));
    return Finish(std::move(e));
  }

  // args[0] is the target.
  ExprPtr MemberCall(const std::string& name, int32_t at, std::vector<ExprPtr> args) {
    const size_t n = args.size() - 1;
    if (name == "bind" && n == 3 && args[0]->kind == ExprKind::kIdent && args[0]->name == "cel") {
      ExprPtr e = Node(ExprKind::kComprehension, at);
      e->macro = Macro::kBind;
      if (args[1]->kind != ExprKind::kIdent) {
        Fail(args[1]->offset, "cel.bind() variable names must be simple identifiers");
      }
      e->var = args[1]->name;
      e->args.push_back(std::move(args[2]));
      e->args.push_back(std::move(args[3]));
      return Finish(std::move(e));
    }
    if (name == "all" && (n == 2 || n == 3))
      return Comprehension(Macro::kAll, at, std::move(args), n - 1);
    if (name == "exists" && (n == 2 || n == 3)) {
      return Comprehension(Macro::kExists, at, std::move(args), n - 1);
    }
    if (name == "exists_one" && (n == 2 || n == 3)) {
      return Comprehension(Macro::kExistsOne, at, std::move(args), n - 1);
    }
    if (name == "existsOne" && n == 3)
      return Comprehension(Macro::kExistsOne, at, std::move(args), 2);
    if (name == "map" && (n == 2 || n == 3)) {
      const bool filter = n == 3;
      ExprPtr e = Comprehension(Macro::kMap, at, std::move(args), 1);
      e->has_filter = filter;
      return e;
    }
    if (name == "filter" && n == 2) return Comprehension(Macro::kFilter, at, std::move(args), 1);
    if ((name == "transformList" || name == "transformMap") && (n == 3 || n == 4)) {
      ExprPtr e =
          Comprehension(name == "transformList" ? Macro::kTransformList : Macro::kTransformMap, at,
                        std::move(args), 2);
      e->has_filter = n == 4;
      return e;
    }
    if (name == "sortBy" && n == 2) {
      const ExprKind k = args[0]->kind;
      if (k != ExprKind::kList && k != ExprKind::kSelect && k != ExprKind::kIdent &&
          k != ExprKind::kComprehension && k != ExprKind::kCall) {
        Fail(args[0]->offset,
             "sortBy can only be applied to a list, identifier, comprehension, call or select "
             "expression");
      }
      return Comprehension(Macro::kSortBy, at, std::move(args), 1);
    }
    if (name == "transformMapEntry") {
      Fail(at, "the transformMapEntry() macro is not supported by Berth's CEL evaluator");
    }
    return Call(name, at, std::move(args), /*member=*/true);
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

ExprPtr Parse(std::string_view input, ParseError* error) {
  size_t code_points = 0;
  for (char c : input) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++code_points;
  }
  if (code_points > kMaxCodePoints) {
    error->offset = 0;
    error->message =
        "expression code point size exceeds limit: size: " + std::to_string(code_points) +
        ", limit " + std::to_string(kMaxCodePoints);
    return nullptr;
  }
  std::vector<Token> tokens;
  if (!Lex(input, &tokens, &error->offset, &error->message)) {
    return nullptr;
  }
  try {
    return Parser(std::move(tokens)).ParseAll();
  } catch (const Failure& f) {
    error->offset = f.offset;
    error->message = f.message;
    return nullptr;
  }
}

}  // namespace berth::cel
