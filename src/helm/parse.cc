// Lexer and parser for Go's text/template grammar, following the structure
// (and the error wording) of Go 1.19's text/template/parse.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "helm/ast.h"
#include "helm/fmt.h"
#include "helm/template.h"

namespace eco::helm {
namespace {

enum class Tok {
  kError, kEOF, kText, kLeftDelim, kRightDelim, kSpace, kIdentifier, kField,
  kVariable, kString, kRawString, kChar, kCharConstant, kNumber, kComplex,
  kBool, kNil, kDot, kPipe, kLeftParen, kRightParen, kDeclare, kAssign,
  // keywords
  kBlock, kBreak, kContinue, kDefine, kElse, kEnd, kIf, kRange, kTemplate, kWith,
};

bool IsKeyword(Tok t) { return t >= Tok::kBlock || t == Tok::kDot || t == Tok::kNil; }

struct Token {
  Tok type;
  std::string val;
  int pos;
  int line;
};

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool IsAlnum(unsigned char c) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c >= 0x80;
}

std::string CharDesc(std::string_view s, size_t i) {
  // %#U of the rune at s[i].
  unsigned char c = i < s.size() ? s[i] : 0;
  char buf[32];
  if (c < 0x80) {
    std::snprintf(buf, sizeof buf, "U+%04X '%c'", c, c);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "U+%04X", c);
  return buf;
}

class Lexer {
 public:
  explicit Lexer(std::string_view in) : in_(in) {}

  std::vector<Token> Run() {
    while (!done_) LexText();
    return std::move(toks_);
  }

 private:
  void Emit(Tok t) {
    toks_.push_back({t, std::string(in_.substr(start_, pos_ - start_)), static_cast<int>(start_), start_line_});
    Ignore();
  }
  void Ignore() {
    for (size_t i = start_; i < pos_; ++i)
      if (in_[i] == '\n') ++line_;
    start_ = pos_;
    start_line_ = line_;
  }
  void Error(std::string msg) {
    toks_.push_back({Tok::kError, std::move(msg), static_cast<int>(start_), start_line_});
    toks_.push_back({Tok::kEOF, "", static_cast<int>(pos_), line_});
    done_ = true;
  }
  bool HasLeftTrim(size_t p) const {
    return p + 1 < in_.size() && in_[p] == '-' && IsSpace(in_[p + 1]);
  }
  bool HasRightTrim(size_t p) const {
    return p + 1 < in_.size() && IsSpace(in_[p]) && in_[p + 1] == '-';
  }
  // At "}}" or " -}}"? Sets *trim for the latter.
  bool AtRightDelim(bool* trim) const {
    if (HasRightTrim(pos_) && in_.substr(pos_ + 2, 2) == "}}") {
      *trim = true;
      return true;
    }
    *trim = false;
    return in_.substr(pos_, 2) == "}}";
  }
  bool AtTerminator() const {
    if (pos_ >= in_.size()) return true;
    char r = in_[pos_];
    if (IsSpace(r)) return true;
    switch (r) {
      case '.': case ',': case '|': case ':': case ')': case '(': return true;
    }
    return in_.substr(pos_, 2) == "}}";
  }

  void LexText() {
    size_t x = in_.find("{{", pos_);
    if (x == std::string_view::npos) {
      pos_ = in_.size();
      if (pos_ > start_) Emit(Tok::kText);
      toks_.push_back({Tok::kEOF, "", static_cast<int>(pos_), line_});
      done_ = true;
      return;
    }
    size_t trim = 0;
    if (HasLeftTrim(x + 2)) {
      size_t e = x;
      while (e > pos_ && IsSpace(in_[e - 1])) --e;
      trim = x - e;
    }
    pos_ = x - trim;
    if (pos_ > start_) Emit(Tok::kText);
    pos_ = x;
    Ignore();
    LexLeftDelim();
  }

  void LexLeftDelim() {
    pos_ += 2;
    bool trim = HasLeftTrim(pos_);
    size_t after = trim ? 2 : 0;
    if (in_.substr(pos_ + after, 2) == "/*") {
      pos_ += after;
      Ignore();
      LexComment();
      return;
    }
    Emit(Tok::kLeftDelim);
    pos_ += after;
    Ignore();
    paren_depth_ = 0;
    LexInsideAction();
  }

  void LexComment() {
    pos_ += 2;
    size_t x = in_.find("*/", pos_);
    if (x == std::string_view::npos) return Error("unclosed comment");
    pos_ = x + 2;
    bool trim;
    if (!AtRightDelim(&trim)) return Error("comment ends before closing delimiter");
    pos_ += (trim ? 2 : 0) + 2;
    if (trim) while (pos_ < in_.size() && IsSpace(in_[pos_])) ++pos_;
    Ignore();
  }

  void LexRightDelim(bool trim) {
    if (trim) {
      pos_ += 2;
      Ignore();
    }
    pos_ += 2;
    Emit(Tok::kRightDelim);
    if (trim) {
      while (pos_ < in_.size() && IsSpace(in_[pos_])) ++pos_;
      Ignore();
    }
  }

  void LexInsideAction() {
    for (;;) {
      if (done_) return;
      bool trim;
      if (AtRightDelim(&trim)) {
        if (paren_depth_ == 0) return LexRightDelim(trim);
        return Error("unclosed left paren");
      }
      if (pos_ >= in_.size()) return Error("unclosed action");
      char r = in_[pos_++];
      if (IsSpace(r)) {
        int n = 1;
        while (pos_ < in_.size() && IsSpace(in_[pos_])) {
          ++pos_;
          ++n;
        }
        if (HasRightTrim(pos_ - 1) && in_.substr(pos_ + 1, 2) == "}}") {
          --pos_;
          if (n == 1) continue;  // the space belongs to " -}}"
        }
        Emit(Tok::kSpace);
        continue;
      }
      switch (r) {
        case '=': Emit(Tok::kAssign); continue;
        case ':':
          if (pos_ >= in_.size() || in_[pos_] != '=') return Error("expected :=");
          ++pos_;
          Emit(Tok::kDeclare);
          continue;
        case '|': Emit(Tok::kPipe); continue;
        case '"': if (!LexQuote('"', Tok::kString, "unterminated quoted string")) return; continue;
        case '\'': if (!LexQuote('\'', Tok::kCharConstant, "unterminated character constant")) return; continue;
        case '`': {
          size_t x = in_.find('`', pos_);
          if (x == std::string_view::npos) return Error("unterminated raw quoted string");
          pos_ = x + 1;
          Emit(Tok::kRawString);
          continue;
        }
        case '$': if (!LexFieldOrVariable(Tok::kVariable)) return; continue;
        case '(': Emit(Tok::kLeftParen); ++paren_depth_; continue;
        case ')':
          Emit(Tok::kRightParen);
          if (--paren_depth_ < 0) return Error("unexpected right paren U+0029 ')'");
          continue;
        default: break;
      }
      if (r == '.' && !(pos_ < in_.size() && in_[pos_] >= '0' && in_[pos_] <= '9')) {
        if (!LexFieldOrVariable(Tok::kField)) return;
        continue;
      }
      if (r == '.' || r == '+' || r == '-' || (r >= '0' && r <= '9')) {
        --pos_;
        if (!LexNumber()) return;
        continue;
      }
      if (IsAlnum(static_cast<unsigned char>(r))) {
        --pos_;
        if (!LexIdentifier()) return;
        continue;
      }
      if (static_cast<unsigned char>(r) < 0x7F && r >= 0x20) {
        Emit(Tok::kChar);
        continue;
      }
      --pos_;
      return Error("unrecognized character in action: " + CharDesc(in_, pos_));
    }
  }

  bool LexQuote(char q, Tok t, const char* err) {
    for (;;) {
      if (pos_ >= in_.size() || in_[pos_] == '\n') {
        Error(err);
        return false;
      }
      char c = in_[pos_++];
      if (c == '\\') {
        if (pos_ >= in_.size() || in_[pos_] == '\n') {
          Error(err);
          return false;
        }
        ++pos_;
      } else if (c == q) {
        break;
      }
    }
    Emit(t);
    return true;
  }

  bool LexFieldOrVariable(Tok t) {
    if (AtTerminator()) {
      Emit(t == Tok::kVariable ? Tok::kVariable : Tok::kDot);
      return true;
    }
    while (pos_ < in_.size() && IsAlnum(static_cast<unsigned char>(in_[pos_]))) ++pos_;
    if (!AtTerminator()) {
      Error("bad character " + CharDesc(in_, pos_));
      return false;
    }
    Emit(t);
    return true;
  }

  bool LexIdentifier() {
    while (pos_ < in_.size() && IsAlnum(static_cast<unsigned char>(in_[pos_]))) ++pos_;
    if (!AtTerminator()) {
      Error("bad character " + CharDesc(in_, pos_));
      return false;
    }
    std::string_view w = in_.substr(start_, pos_ - start_);
    static const std::pair<const char*, Tok> kKeys[] = {
        {"block", Tok::kBlock}, {"break", Tok::kBreak}, {"continue", Tok::kContinue},
        {"define", Tok::kDefine}, {"else", Tok::kElse}, {"end", Tok::kEnd}, {"if", Tok::kIf},
        {"range", Tok::kRange}, {"nil", Tok::kNil}, {"template", Tok::kTemplate},
        {"with", Tok::kWith}};
    for (const auto& [k, t] : kKeys) {
      if (w == k) {
        Emit(t);
        return true;
      }
    }
    Emit(w == "true" || w == "false" ? Tok::kBool : Tok::kIdentifier);
    return true;
  }

  void Accept(const char* set) {
    if (pos_ < in_.size() && std::strchr(set, in_[pos_]) && in_[pos_]) ++pos_;
  }
  bool AcceptB(const char* set) {
    if (pos_ < in_.size() && in_[pos_] && std::strchr(set, in_[pos_])) {
      ++pos_;
      return true;
    }
    return false;
  }
  void AcceptRun(const char* set) {
    while (pos_ < in_.size() && in_[pos_] && std::strchr(set, in_[pos_])) ++pos_;
  }
  bool ScanNumber() {
    AcceptB("+-");
    const char* digits = "0123456789_";
    bool dec = true, hex = false;
    if (AcceptB("0")) {
      if (AcceptB("xX")) { digits = "0123456789abcdefABCDEF_"; dec = false; hex = true; }
      else if (AcceptB("oO")) { digits = "01234567_"; dec = false; }
      else if (AcceptB("bB")) { digits = "01_"; dec = false; }
    }
    AcceptRun(digits);
    if (AcceptB(".")) AcceptRun(digits);
    if (dec && AcceptB("eE")) {
      AcceptB("+-");
      AcceptRun("0123456789_");
    }
    if (hex && AcceptB("pP")) {
      AcceptB("+-");
      AcceptRun("0123456789_");
    }
    AcceptB("i");
    if (pos_ < in_.size() && IsAlnum(static_cast<unsigned char>(in_[pos_]))) {
      ++pos_;
      return false;
    }
    return true;
  }
  bool LexNumber() {
    if (!ScanNumber()) {
      Error("bad number syntax: " + Quote(in_.substr(start_, pos_ - start_)));
      return false;
    }
    if (pos_ < in_.size() && (in_[pos_] == '+' || in_[pos_] == '-')) {
      if (!ScanNumber() || in_[pos_ - 1] != 'i') {
        Error("bad number syntax: " + Quote(in_.substr(start_, pos_ - start_)));
        return false;
      }
      Emit(Tok::kComplex);
      return true;
    }
    Emit(in_[pos_ - 1] == 'i' ? Tok::kComplex : Tok::kNumber);
    return true;
  }

  std::string_view in_;
  size_t pos_ = 0, start_ = 0;
  int line_ = 1, start_line_ = 1;
  int paren_depth_ = 0;
  bool done_ = false;
  std::vector<Token> toks_;
};

// Go's strconv.Unquote for "...", `...` and '...'. Returns false if malformed.
bool Unquote(std::string_view s, std::string* out) {
  out->clear();
  if (s.size() < 2) return false;
  char q = s[0];
  if (q != s.back()) return false;
  s = s.substr(1, s.size() - 2);
  if (q == '`') {
    for (char c : s) if (c != '\r') out->push_back(c);
    return true;
  }
  auto append_rune = [&](uint32_t r) {
    ValueList one{Value::Int(r)};
    *out += Sprintf("%c", one);
  };
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    if (c == q && q == '"') return false;
    if (c != '\\') {
      out->push_back(c);
      ++i;
      continue;
    }
    if (++i >= s.size()) return false;
    char e = s[i++];
    auto hexval = [&](size_t n, uint32_t* v) {
      *v = 0;
      if (i + n > s.size()) return false;
      for (size_t k = 0; k < n; ++k) {
        char h = s[i + k];
        int d = (h >= '0' && h <= '9') ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
        if (d < 0) return false;
        *v = *v * 16 + d;
      }
      i += n;
      return true;
    };
    uint32_t v;
    switch (e) {
      case 'a': out->push_back('\a'); break;
      case 'b': out->push_back('\b'); break;
      case 'f': out->push_back('\f'); break;
      case 'n': out->push_back('\n'); break;
      case 'r': out->push_back('\r'); break;
      case 't': out->push_back('\t'); break;
      case 'v': out->push_back('\v'); break;
      case '\\': out->push_back('\\'); break;
      case '\'': if (q != '\'') return false; out->push_back('\''); break;
      case '"': if (q != '"') return false; out->push_back('"'); break;
      case 'x': if (!hexval(2, &v)) return false; out->push_back(static_cast<char>(v)); break;
      case 'u': if (!hexval(4, &v)) return false; append_rune(v); break;
      case 'U': if (!hexval(8, &v) || v > 0x10FFFF) return false; append_rune(v); break;
      default:
        if (e >= '0' && e <= '7') {
          if (i + 2 > s.size()) return false;
          v = e - '0';
          for (int k = 0; k < 2; ++k) {
            char o = s[i++];
            if (o < '0' || o > '7') return false;
            v = v * 8 + (o - '0');
          }
          if (v > 255) return false;
          out->push_back(static_cast<char>(v));
          break;
        }
        return false;
    }
  }
  return true;
}

// Go's strconv.ParseInt/ParseUint with base 0 (prefixes and underscores).
bool ParseGoUint(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  int base = 10;
  bool prefixed = false;
  if (s.size() > 1 && s[0] == '0') {
    char p = s[1] | 0x20;
    if (p == 'x') { base = 16; s.remove_prefix(2); prefixed = true; }
    else if (p == 'o') { base = 8; s.remove_prefix(2); prefixed = true; }
    else if (p == 'b') { base = 2; s.remove_prefix(2); prefixed = true; }
    else { base = 8; s.remove_prefix(1); prefixed = true; }
  }
  if (s.empty()) return false;
  uint64_t v = 0;
  char prev = prefixed ? '_' : '!';
  bool any = false;
  for (char c : s) {
    if (c == '_') {
      if (prev == '_' && !(prefixed && !any)) return false;
      if (!prefixed && !any) return false;
      prev = '_';
      continue;
    }
    int d = (c >= '0' && c <= '9') ? c - '0' : ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') ? (c | 0x20) - 'a' + 10 : 99;
    if (d >= base) return false;
    if (v > (UINT64_MAX - d) / base) return false;
    v = v * base + d;
    prev = c;
    any = true;
  }
  if (prev == '_' || !any) return false;
  *out = v;
  return true;
}

bool ParseGoInt(std::string_view s, int64_t* out) {
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  uint64_t u;
  if (!ParseGoUint(s, &u)) return false;
  if (neg) {
    if (u > static_cast<uint64_t>(INT64_MAX) + 1) return false;
    *out = static_cast<int64_t>(0 - u);
  } else {
    if (u > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(u);
  }
  return true;
}

bool ParseGoFloat(std::string_view s, double* out) {
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      // Go allows '_' between digits and right after a base prefix.
      if (i == 0 || i + 1 == s.size() ||
          !(std::isxdigit(static_cast<unsigned char>(s[i - 1])) || s[i - 1] == 'x' || s[i - 1] == 'X') ||
          !std::isxdigit(static_cast<unsigned char>(s[i + 1])))
        return false;
      continue;
    }
    clean.push_back(s[i]);
  }
  if (clean.empty()) return false;
  for (char c : clean)
    if (!(std::isxdigit(static_cast<unsigned char>(c)) || c == '.' || c == '+' || c == '-' ||
          c == 'x' || c == 'X' || c == 'p' || c == 'P' || c == 'e' || c == 'E'))
      return false;
  char* end = nullptr;
  errno = 0;
  double d = std::strtod(clean.c_str(), &end);
  if (end != clean.c_str() + clean.size()) return false;
  if (errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL)) return false;
  *out = d;
  return true;
}

struct ParseError {
  std::string msg;
};

class Parser {
 public:
  Parser(std::string_view name, std::string_view text, const FuncMap& funcs,
         std::map<std::string, std::shared_ptr<const Tree>, std::less<>>* trees)
      : name_(name), text_(text), funcs_(funcs), trees_(trees) {}

  Status Run() {
    toks_ = Lexer(text_).Run();
    std::string err;
    if (!ParseTop(&err)) return Invalid(err);
    return Status::Ok();
  }

 private:
  // Errors unwind through `fail_`: every parse step returns nullptr/false
  // once it is set, so no exceptions are needed.
  bool failed() const { return !fail_.empty(); }
  std::nullptr_t Fail(const std::string& msg) {
    if (fail_.empty()) {
      int line = cur_ ? cur_->line : 1;
      fail_ = "template: " + name_ + ":" + std::to_string(line) + ": " + msg;
    }
    return nullptr;
  }

  const Token& Next() {
    cur_ = &toks_[std::min(idx_, toks_.size() - 1)];
    if (idx_ < toks_.size()) ++idx_;
    return *cur_;
  }
  const Token& Peek() const { return toks_[std::min(idx_, toks_.size() - 1)]; }
  void Backup(size_t n = 1) { idx_ -= n; }
  const Token& NextNonSpace() {
    for (;;) {
      const Token& t = Next();
      if (t.type != Tok::kSpace) return t;
    }
  }
  const Token& PeekNonSpace() {
    const Token& t = NextNonSpace();
    Backup();
    return t;
  }

  static std::string TokString(const Token& t) {
    if (t.type == Tok::kEOF) return "EOF";
    if (t.type == Tok::kError) return t.val;
    if (IsKeyword(t.type)) return "<" + t.val + ">";
    if (t.val.size() > 10) {
      // %.10q: quote the first 10 runes.
      std::string q = Quote(t.val.substr(0, 10));
      return q + "...";
    }
    return Quote(t.val);
  }

  std::nullptr_t Unexpected(const Token& t, const std::string& context) {
    if (t.type == Tok::kError) {
      std::string extra;
      if (action_line_ != 0 && action_line_ != t.line) {
        extra = " in action started at " + name_ + ":" + std::to_string(action_line_);
        if (t.val.size() >= 7 && t.val.compare(t.val.size() - 7, 7, " action") == 0)
          extra = extra.substr(10);
      }
      return Fail(t.val + extra);
    }
    return Fail("unexpected " + TokString(t) + " in " + context);
  }

  std::unique_ptr<Node> NewNode(NodeType type, const Token& t) {
    auto n = std::make_unique<Node>(type);
    n->line = t.line;
    // Go's column: bytes since the last newline before the token.
    size_t pos = std::min<size_t>(t.pos, text_.size());
    size_t nl = text_.rfind('\n', pos == 0 ? std::string_view::npos : pos - 1);
    if (pos == 0) nl = std::string_view::npos;
    n->col = nl == std::string_view::npos ? static_cast<int>(pos) : static_cast<int>(pos - nl - 1);
    return n;
  }

  bool AddTree(const std::string& name, std::unique_ptr<Node> root, bool from_define) {
    auto it = trees_->find(name);
    bool empty = IsEmpty(root.get());
    if (it != trees_->end() && !IsEmpty(it->second->root.get())) {
      if (from_define && !empty && defined_here_.count(name)) {
        Fail("template: multiple definition of template " + Quote(name));
        return false;
      }
      if (empty) return true;  // an empty redefinition never replaces
    }
    auto tree = std::make_shared<Tree>();
    tree->name = name;
    tree->parse_name = name_;
    tree->root = std::move(root);
    (*trees_)[name] = std::move(tree);
    if (from_define) defined_here_.insert({name, true});
    return true;
  }

  static bool IsEmpty(const Node* n) {
    if (!n) return true;
    switch (n->type) {
      case NodeType::kList:
        for (const auto& c : n->items)
          if (!IsEmpty(c.get())) return false;
        return true;
      case NodeType::kText:
        for (char c : n->text)
          if (!IsSpace(c)) return false;
        return true;
      default:
        return false;
    }
  }

  bool ParseTop(std::string* err) {
    auto root = std::make_unique<Node>(NodeType::kList);
    vars_ = {"$"};
    while (Peek().type != Tok::kEOF) {
      if (Peek().type == Tok::kLeftDelim) {
        Next();
        if (NextNonSpace().type == Tok::kDefine) {
          ParseDefinition();
          if (failed()) break;
          continue;
        }
        // Back up to the delimiter.
        while (toks_[idx_ - 1].type != Tok::kLeftDelim) --idx_;
        --idx_;
      }
      auto n = TextOrAction();
      if (failed()) break;
      if (n->type == NodeType::kEnd || n->type == NodeType::kElse) {
        Fail("unexpected " + n->String());
        break;
      }
      root->items.push_back(std::move(n));
    }
    if (!failed()) AddTree(name_, std::move(root), false);
    if (failed()) {
      *err = fail_;
      return false;
    }
    return true;
  }

  void ParseDefinition() {
    const Token& nt = NextNonSpace();
    if (nt.type != Tok::kString && nt.type != Tok::kRawString) {
      Unexpected(nt, "define clause");
      return;
    }
    std::string name;
    if (!Unquote(nt.val, &name)) {
      Fail("invalid syntax");
      return;
    }
    const Token& rd = NextNonSpace();
    if (rd.type != Tok::kRightDelim) {
      Unexpected(rd, "define clause");
      return;
    }
    auto saved_vars = vars_;
    vars_ = {"$"};
    std::unique_ptr<Node> end;
    auto list = ItemList(&end);
    vars_ = saved_vars;
    if (failed()) return;
    if (end->type != NodeType::kEnd) {
      Fail("unexpected " + end->String() + " in define clause");
      return;
    }
    AddTree(name, std::move(list), true);
  }

  std::unique_ptr<Node> ItemList(std::unique_ptr<Node>* end) {
    auto list = NewNode(NodeType::kList, PeekNonSpace());
    while (PeekNonSpace().type != Tok::kEOF) {
      auto n = TextOrAction();
      if (failed()) return nullptr;
      if (n->type == NodeType::kEnd || n->type == NodeType::kElse) {
        *end = std::move(n);
        return list;
      }
      list->items.push_back(std::move(n));
    }
    NextNonSpace();
    return Fail("unexpected EOF");
  }

  std::unique_ptr<Node> TextOrAction() {
    const Token& t = NextNonSpace();
    if (t.type == Tok::kText) {
      auto n = NewNode(NodeType::kText, t);
      n->text = t.val;
      return n;
    }
    if (t.type == Tok::kLeftDelim) {
      int saved = action_line_;
      action_line_ = t.line;
      auto n = Action();
      action_line_ = saved;
      return n;
    }
    return Unexpected(t, "input");
  }

  std::unique_ptr<Node> Action() {
    const Token& t = NextNonSpace();
    switch (t.type) {
      case Tok::kBlock: return BlockControl();
      case Tok::kBreak:
      case Tok::kContinue: {
        bool brk = t.type == Tok::kBreak;
        auto n = NewNode(brk ? NodeType::kBreak : NodeType::kContinue, t);
        const Token& rd = NextNonSpace();
        if (rd.type != Tok::kRightDelim) return Unexpected(rd, brk ? "{{break}}" : "{{continue}}");
        if (range_depth_ == 0) return Fail(brk ? "{{break}} outside {{range}}" : "{{continue}} outside {{range}}");
        return n;
      }
      case Tok::kElse: {
        const Token& p = PeekNonSpace();
        if (p.type == Tok::kIf) return NewNode(NodeType::kElse, p);
        const Token& rd = NextNonSpace();
        if (rd.type != Tok::kRightDelim) return Unexpected(rd, "else");
        return NewNode(NodeType::kElse, rd);
      }
      case Tok::kEnd: {
        const Token& rd = NextNonSpace();
        if (rd.type != Tok::kRightDelim) return Unexpected(rd, "end");
        return NewNode(NodeType::kEnd, rd);
      }
      case Tok::kIf: return Control(NodeType::kIf, true, "if");
      case Tok::kRange: return Control(NodeType::kRange, false, "range");
      case Tok::kWith: return Control(NodeType::kWith, false, "with");
      case Tok::kTemplate: return TemplateControl();
      default: break;
    }
    Backup();
    auto n = NewNode(NodeType::kAction, Peek());
    n->pipe = Pipeline("command", Tok::kRightDelim);
    if (failed()) return nullptr;
    n->line = n->pipe->line;
    n->col = n->pipe->col;
    return n;
  }

  std::unique_ptr<Node> Control(NodeType type, bool allow_else_if, const char* context) {
    // The parser runs on the caller's stack: bound its recursion.
    if (++nesting_ > kMaxNesting) return Fail("nesting too deep (more than 1000 levels)");
    struct Unnest {
      int* n;
      ~Unnest() { --*n; }
    } unnest{&nesting_};
    size_t mark = vars_.size();
    auto n = NewNode(type, Peek());
    n->pipe = Pipeline(context, Tok::kRightDelim);
    if (failed()) return nullptr;
    n->line = n->pipe->line;
    n->col = n->pipe->col;
    if (type == NodeType::kRange) ++range_depth_;
    std::unique_ptr<Node> next;
    n->list = ItemList(&next);
    if (type == NodeType::kRange) --range_depth_;
    if (failed()) return nullptr;
    if (next->type == NodeType::kElse) {
      if (allow_else_if && Peek().type == Tok::kIf) {
        Next();
        auto else_list = NewNode(NodeType::kList, Peek());
        auto inner = Control(NodeType::kIf, true, "if");
        if (failed()) return nullptr;
        else_list->items.push_back(std::move(inner));
        n->else_list = std::move(else_list);
      } else {
        n->else_list = ItemList(&next);
        if (failed()) return nullptr;
        if (next->type != NodeType::kEnd) return Fail("expected end; found " + next->String());
      }
    }
    vars_.resize(mark);
    return n;
  }

  bool TemplateName(const Token& t, const char* context, std::string* name) {
    if (t.type == Tok::kString || t.type == Tok::kRawString) {
      if (!Unquote(t.val, name)) {
        Fail("invalid syntax");
        return false;
      }
      return true;
    }
    Unexpected(t, context);
    return false;
  }

  std::unique_ptr<Node> TemplateControl() {
    const Token& t = NextNonSpace();
    auto n = NewNode(NodeType::kTemplate, t);
    if (!TemplateName(t, "template clause", &n->text)) return nullptr;
    if (NextNonSpace().type != Tok::kRightDelim) {
      Backup();
      n->pipe = Pipeline("template clause", Tok::kRightDelim);
      if (failed()) return nullptr;
    }
    return n;
  }

  std::unique_ptr<Node> BlockControl() {
    const Token& t = NextNonSpace();
    auto n = NewNode(NodeType::kTemplate, t);
    if (!TemplateName(t, "block clause", &n->text)) return nullptr;
    n->pipe = Pipeline("block clause", Tok::kRightDelim);
    if (failed()) return nullptr;
    auto saved_vars = vars_;
    vars_ = {"$"};
    std::unique_ptr<Node> end;
    auto list = ItemList(&end);
    vars_ = saved_vars;
    if (failed()) return nullptr;
    if (end->type != NodeType::kEnd) return Fail("unexpected " + end->String() + " in block clause");
    if (!AddTree(n->text, std::move(list), true)) return nullptr;
    return n;
  }

  std::unique_ptr<Node> Pipeline(const std::string& context, Tok end) {
    auto pipe = NewNode(NodeType::kPipe, PeekNonSpace());
  decls:
    if (PeekNonSpace().type == Tok::kVariable) {
      const Token& v = NextNonSpace();
      const Token& after = Peek();
      Tok after_type = after.type;
      const Token& next = PeekNonSpace();
      if (next.type == Tok::kAssign || next.type == Tok::kDeclare) {
        pipe->is_assign = next.type == Tok::kAssign;
        NextNonSpace();
        auto var = NewNode(NodeType::kVariable, v);
        var->idents = {v.val};
        pipe->decls.push_back(std::move(var));
        vars_.push_back(v.val);
      } else if (next.type == Tok::kChar && next.val == ",") {
        NextNonSpace();
        auto var = NewNode(NodeType::kVariable, v);
        var->idents = {v.val};
        pipe->decls.push_back(std::move(var));
        vars_.push_back(v.val);
        if (context == "range" && pipe->decls.size() < 2) {
          Tok p = PeekNonSpace().type;
          if (p == Tok::kVariable || p == Tok::kRightDelim || p == Tok::kRightParen) goto decls;
          return Fail("range can only initialize variables");
        }
        return Fail("too many declarations in " + context);
      } else if (after_type == Tok::kSpace) {
        // Back up before the variable (and its trailing space).
        while (&toks_[idx_ - 1] != &v) --idx_;
        --idx_;
      } else {
        while (&toks_[idx_ - 1] != &v) --idx_;
        --idx_;
      }
    }
    for (;;) {
      const Token& t = NextNonSpace();
      if (t.type == end) {
        if (pipe->items.empty()) return Fail("missing value for " + context);
        for (size_t i = 1; i < pipe->items.size(); ++i) {
          NodeType a = pipe->items[i]->items[0]->type;
          if (a == NodeType::kBool || a == NodeType::kDot || a == NodeType::kNil ||
              a == NodeType::kNumber || a == NodeType::kString)
            return Fail("non executable command in pipeline stage " + std::to_string(i + 1));
        }
        return pipe;
      }
      switch (t.type) {
        case Tok::kBool: case Tok::kCharConstant: case Tok::kComplex: case Tok::kDot:
        case Tok::kField: case Tok::kIdentifier: case Tok::kNumber: case Tok::kNil:
        case Tok::kRawString: case Tok::kString: case Tok::kVariable: case Tok::kLeftParen: {
          Backup();
          auto cmd = Command();
          if (failed()) return nullptr;
          pipe->items.push_back(std::move(cmd));
          break;
        }
        default:
          return Unexpected(t, context);
      }
    }
  }

  std::unique_ptr<Node> Command() {
    auto cmd = NewNode(NodeType::kCommand, PeekNonSpace());
    for (;;) {
      PeekNonSpace();
      auto op = Operand();
      if (failed()) return nullptr;
      if (op) cmd->items.push_back(std::move(op));
      const Token& t = Next();
      if (t.type == Tok::kSpace) continue;
      if (t.type == Tok::kRightDelim || t.type == Tok::kRightParen) {
        Backup();
      } else if (t.type != Tok::kPipe) {
        return Unexpected(t, "operand");
      }
      break;
    }
    if (cmd->items.empty()) return Fail("empty command");
    return cmd;
  }

  std::unique_ptr<Node> Operand() {
    auto node = Term();
    if (!node) return nullptr;
    if (Peek().type == Tok::kField) {
      auto chain = NewNode(NodeType::kChain, Peek());
      std::vector<std::string> fields;
      while (Peek().type == Tok::kField) fields.push_back(Next().val.substr(1));
      switch (node->type) {
        case NodeType::kField:
        case NodeType::kVariable:
          for (auto& f : fields) node->idents.push_back(f);
          return node;
        case NodeType::kBool: case NodeType::kString: case NodeType::kNumber:
        case NodeType::kNil: case NodeType::kDot:
          return Fail("unexpected . after term " + Quote(node->String()));
        default:
          chain->idents = std::move(fields);
          chain->base = std::move(node);
          return chain;
      }
    }
    return node;
  }

  std::unique_ptr<Node> Term() {
    const Token& t = NextNonSpace();
    switch (t.type) {
      case Tok::kIdentifier: {
        if (funcs_.find(t.val) == funcs_.end() && !IsBuiltin(t.val))
          return Fail("function " + Quote(t.val) + " not defined");
        auto n = NewNode(NodeType::kIdentifier, t);
        n->text = t.val;
        return n;
      }
      case Tok::kDot: return NewNode(NodeType::kDot, t);
      case Tok::kNil: return NewNode(NodeType::kNil, t);
      case Tok::kVariable: {
        auto n = NewNode(NodeType::kVariable, t);
        size_t start = 0;
        std::string_view v = t.val;
        // "$x.a.b" is never lexed as one token, but keep the split general.
        size_t dot = v.find('.', 1);
        n->idents.push_back(std::string(v.substr(start, dot)));
        bool found = false;
        for (const auto& name : vars_)
          if (name == n->idents[0]) found = true;
        if (!found) return Fail("undefined variable " + Quote(n->idents[0]));
        return n;
      }
      case Tok::kField: {
        auto n = NewNode(NodeType::kField, t);
        n->idents.push_back(t.val.substr(1));
        return n;
      }
      case Tok::kBool: {
        auto n = NewNode(NodeType::kBool, t);
        n->bool_val = t.val == "true";
        return n;
      }
      case Tok::kCharConstant:
      case Tok::kComplex:
      case Tok::kNumber: return Number(t);
      case Tok::kLeftParen: {
        if (++nesting_ > kMaxNesting) return Fail("nesting too deep (more than 1000 levels)");
        auto p = Pipeline("parenthesized pipeline", Tok::kRightParen);
        --nesting_;
        return p;
      }
      case Tok::kString:
      case Tok::kRawString: {
        auto n = NewNode(NodeType::kString, t);
        if (!Unquote(t.val, &n->text)) return Fail("invalid syntax");
        return n;
      }
      default:
        Backup();
        return nullptr;
    }
  }

  std::unique_ptr<Node> Number(const Token& t) {
    auto n = NewNode(NodeType::kNumber, t);
    n->text = t.val;
    if (t.type == Tok::kCharConstant) {
      std::string s;
      if (!Unquote(t.val, &s) || s.empty()) return Fail("malformed character constant: " + t.val);
      // Decode the single rune.
      unsigned char c = s[0];
      int32_t r = c;
      if (c >= 0x80) {
        int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        r = c & (0x3F >> (len - 1));
        for (int k = 1; k < len && k < static_cast<int>(s.size()); ++k) r = (r << 6) | (s[k] & 0x3F);
      }
      n->is_int = n->is_uint = n->is_float = true;
      n->int_val = r;
      n->float_val = r;
      return n;
    }
    if (t.type == Tok::kComplex) {
      // "re+imi" or "imi"; Go's simplifyComplex also makes a complex with a
      // zero imaginary part usable as a float (and an int when integral).
      std::string body = t.val.substr(0, t.val.size() - 1);
      size_t split = body.find_first_of("+-", 1);
      while (split != std::string::npos && (body[split - 1] == 'e' || body[split - 1] == 'E' ||
                                            body[split - 1] == 'p' || body[split - 1] == 'P'))
        split = body.find_first_of("+-", split + 1);
      double re = 0, im = 0;
      bool ok = split == std::string::npos
                    ? ParseGoFloat(body, &im)
                    : ParseGoFloat(body.substr(0, split), &re) && ParseGoFloat(body.substr(split), &im);
      if (!ok) return Fail("illegal number syntax: " + Quote(t.val));
      n->is_complex = true;
      n->real_val = re;
      n->imag_val = im;
      if (im == 0) {
        n->is_float = true;
        n->float_val = re;
        if (re >= -9.2e18 && re <= 9.2e18 && re == static_cast<double>(static_cast<int64_t>(re))) {
          n->is_int = true;
          n->int_val = static_cast<int64_t>(re);
          n->is_uint = re >= 0;
        }
      }
      return n;
    }
    uint64_t u;
    if (ParseGoUint(t.val, &u)) n->is_uint = true;
    int64_t i;
    if (ParseGoInt(t.val, &i)) {
      n->is_int = true;
      n->int_val = i;
    }
    if (n->is_int) {
      n->is_float = true;
      n->float_val = static_cast<double>(n->int_val);
    } else if (n->is_uint) {
      n->is_float = true;
      n->float_val = static_cast<double>(u);
    } else {
      double f;
      if (ParseGoFloat(t.val, &f)) {
        if (t.val.find_first_of(".eEpP") == std::string::npos && t.val.find("0x") != 0)
          return Fail("integer overflow: " + Quote(t.val));
        n->is_float = true;
        n->float_val = f;
        // Range first: converting an out-of-range double is undefined in C++.
        if (f >= -9223372036854775808.0 && f < 9223372036854775808.0 &&
            f == static_cast<double>(static_cast<int64_t>(f))) {
          n->is_int = true;
          n->int_val = static_cast<int64_t>(f);
        }
      }
    }
    if (!n->is_int && !n->is_uint && !n->is_float) return Fail("illegal number syntax: " + Quote(t.val));
    return n;
  }

  static bool IsBuiltin(std::string_view name) {
    static const char* kBuiltins[] = {"and", "or", "not", "len", "index", "slice", "print", "printf",
                                      "println", "eq", "ne", "lt", "le", "gt", "ge", "html", "js",
                                      "urlquery", "call"};
    for (const char* b : kBuiltins)
      if (name == b) return true;
    return false;
  }

  std::string name_;
  std::string_view text_;
  const FuncMap& funcs_;
  std::map<std::string, std::shared_ptr<const Tree>, std::less<>>* trees_;
  std::map<std::string, bool> defined_here_;
  std::vector<Token> toks_;
  size_t idx_ = 0;
  const Token* cur_ = nullptr;
  std::vector<std::string> vars_;
  int range_depth_ = 0;
  int action_line_ = 0;
  static constexpr int kMaxNesting = 1000;
  int nesting_ = 0;
  std::string fail_;
};

}  // namespace

std::string Node::String() const {
  switch (type) {
    case NodeType::kText: return Quote(text);
    case NodeType::kAction: return "{{" + pipe->String() + "}}";
    case NodeType::kBreak: return "{{break}}";
    case NodeType::kContinue: return "{{continue}}";
    case NodeType::kElse: return "{{else}}";
    case NodeType::kEnd: return "{{end}}";
    case NodeType::kList: {
      std::string s;
      for (const auto& i : items) s += i->String();
      return s;
    }
    case NodeType::kIf:
    case NodeType::kRange:
    case NodeType::kWith: {
      const char* kw = type == NodeType::kIf ? "if" : type == NodeType::kRange ? "range" : "with";
      std::string s = std::string("{{") + kw + " " + pipe->String() + "}}" + list->String();
      if (else_list) s += "{{else}}" + else_list->String();
      return s + "{{end}}";
    }
    case NodeType::kTemplate:
      return "{{template " + Quote(text) + (pipe ? " " + pipe->String() : "") + "}}";
    case NodeType::kPipe: {
      std::string s;
      for (size_t i = 0; i < decls.size(); ++i) {
        if (i) s += ", ";
        s += decls[i]->String();
      }
      if (!decls.empty()) s += is_assign ? " = " : " := ";
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) s += " | ";
        s += items[i]->String();
      }
      return s;
    }
    case NodeType::kCommand: {
      std::string s;
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) s += " ";
        if (items[i]->type == NodeType::kPipe) s += "(" + items[i]->String() + ")";
        else s += items[i]->String();
      }
      return s;
    }
    case NodeType::kField: {
      std::string s;
      for (const auto& f : idents) s += "." + f;
      return s;
    }
    case NodeType::kChain: {
      std::string s = base->type == NodeType::kPipe ? "(" + base->String() + ")" : base->String();
      for (const auto& f : idents) s += "." + f;
      return s;
    }
    case NodeType::kVariable: {
      std::string s;
      for (size_t i = 0; i < idents.size(); ++i) {
        if (i) s += ".";
        s += idents[i];
      }
      return s;
    }
    case NodeType::kIdentifier: return text;
    case NodeType::kDot: return ".";
    case NodeType::kNil: return "nil";
    case NodeType::kBool: return bool_val ? "true" : "false";
    case NodeType::kNumber: return text;
    case NodeType::kString: return Quote(text);
  }
  return "?";
}

TemplateSet::TemplateSet(std::shared_ptr<const FuncMap> funcs) : funcs_(std::move(funcs)) {
  if (!funcs_) funcs_ = std::make_shared<FuncMap>();
}

Status TemplateSet::Parse(std::string_view name, std::string_view text) {
  // Parse into a copy so a failed parse leaves the set unchanged.
  auto trees = trees_;
  Parser p(name, text, *funcs_, &trees);
  Status s = p.Run();
  if (!s.ok()) return s;
  trees_ = std::move(trees);
  return Status::Ok();
}

bool TemplateSet::Has(std::string_view name) const { return trees_.find(name) != trees_.end(); }

}  // namespace eco::helm
