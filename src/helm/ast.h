// Parse tree of a Go template (internal to the helm engine).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace eco::helm {

enum class NodeType {
  kText, kAction, kIf, kRange, kWith, kTemplate, kBreak, kContinue, kList,
  kPipe, kCommand, kField, kChain, kIdentifier, kVariable, kDot, kNil, kBool,
  kNumber, kString, kElse, kEnd,
};

struct Node {
  NodeType type;
  int line = 1;
  int col = 0;                         // byte offset in its line, as Go reports
  std::string text;                    // text, identifier, string value, number text, template name
  std::vector<std::string> idents;     // field/variable/chain path
  std::vector<std::unique_ptr<Node>> items;  // list items, pipe commands, command args
  std::vector<std::unique_ptr<Node>> decls;  // pipe variables
  std::unique_ptr<Node> pipe, list, else_list, base;
  bool is_assign = false;
  bool bool_val = false;
  // Number constants (Go's NumberNode).
  bool is_int = false, is_uint = false, is_float = false;
  int64_t int_val = 0;
  double float_val = 0;
  bool is_complex = false;  // a complex128 constant (real_val + imag_val i)
  double real_val = 0, imag_val = 0;

  explicit Node(NodeType t) : type(t) {}
  std::string String() const;  // Go's Node.String(), for error context
};

struct Tree {
  std::string name;        // template name ("executing %q")
  std::string parse_name;  // file it came from (location in messages)
  std::unique_ptr<Node> root;
};

}  // namespace eco::helm
