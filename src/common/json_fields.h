// Reading optional members of JSON objects that may be of any shape.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace eco {

// obj[key] when it is a string; `def` when obj is no object, or the member
// is absent, null or of another type.
inline std::string StringField(const nlohmann::json& obj, const char* key, const std::string& def = {}) {
  if (!obj.is_object()) return def;
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : def;
}

}  // namespace eco
