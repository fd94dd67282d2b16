// Label and field selectors with the API server's syntax and errors.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace eco::kubesim {

// "a=b,c!=d,e in (x,y),f notin (z),g,!h" (also "==").
class LabelSelector {
 public:
  static Result<LabelSelector> Parse(const std::string& text);  // "" matches everything
  bool Matches(const nlohmann::json& labels) const;             // labels: object or null
  bool Empty() const { return reqs_.empty(); }

  struct Requirement {
    std::string key;
    enum Op { kEq, kNotEq, kIn, kNotIn, kExists, kNotExists } op;
    std::vector<std::string> values;
  };

 private:
  std::vector<Requirement> reqs_;
};

// "metadata.name=x,metadata.namespace!=y,spec.nodeName=n,status.phase=Running".
// Any dotted path into the object is accepted (missing field == "").
class FieldSelector {
 public:
  static Result<FieldSelector> Parse(const std::string& text);
  bool Empty() const { return reqs_.empty(); }
  bool Matches(const nlohmann::json& object) const;
  // The value of an equality requirement on `field`, or "" (lets a lookup by
  // metadata.name avoid a scan).
  std::string EqualityValue(const std::string& field) const;

 private:
  struct Req {
    std::string field;
    bool equal;
    std::string value;
  };
  std::vector<Req> reqs_;
};

}  // namespace eco::kubesim
