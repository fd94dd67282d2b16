// Requests for the gac API (DIG/generic-k8s-intents/...): multipart bodies
// with a metadata part and the file(s) as emcoctl sends them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "api/api.h"

namespace eco::testing {

inline api::Request GacMultipart(const std::string& method, const std::string& path, const nlohmann::json& meta,
                                 const std::vector<std::pair<std::string, std::string>>& files = {},
                                 const std::string& field = "files") {
  api::Request r;
  r.method = method;
  r.path = path;
  r.multipart = true;
  r.content_type = "multipart/form-data; boundary=x";
  r.parts.emplace("metadata", api::FormPart{meta.dump(), "", "application/json"});
  for (const auto& [name, content] : files) {
    r.parts.emplace(field, api::FormPart{content, name, "application/octet-stream"});
  }
  return r;
}

}  // namespace eco::testing
