// An OpenAPI 3.0 description of the routes eco serves, built from the
// route table itself (GET /v2/openapi.json), so it cannot drift from them.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace eco::api {

// `routes`: "METHOD /v2/path/{var}/..." as Api::Routes() lists them.
nlohmann::json OpenApiDocument(const std::vector<std::string>& routes, const std::string& version);

}  // namespace eco::api
