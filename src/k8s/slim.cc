// ParseSlim (paths.h). simdjson does the parsing: the watches of thousands
// of clusters bring every object the clusters hold, and nlohmann's
// character-by-character lexer was a sixth of eco's CPU. Only the fields
// kept are turned into nlohmann values, which the readiness rules take.
#include <simdjson.h>

#include "k8s/paths.h"

namespace eco::k8s {

namespace {

using nlohmann::json;
namespace dom = simdjson::dom;

bool Dropped(std::string_view key, int depth, int object_depth) {
  if (depth == object_depth) return key == "data" || key == "binaryData" || key == "stringData";
  if (depth == object_depth + 1) {
    return key == "managedFields" || key == "annotations" || key == "template" || key == "jobTemplate" ||
           key == "volumeClaimTemplates";
  }
  return false;
}

// `level`: containers around `e` (the root is 0); keys of an object at
// level L sit at depth L + 1, as nlohmann's parser callback counts them.
json Convert(dom::element e, int level, int object_depth) {
  switch (e.type()) {
    case dom::element_type::OBJECT: {
      json out = json::object();
      for (dom::key_value_pair kv : dom::object(e)) {
        if (Dropped(kv.key, level + 1, object_depth)) continue;
        out.emplace(std::string(kv.key), Convert(kv.value, level + 1, object_depth));
      }
      return out;
    }
    case dom::element_type::ARRAY: {
      json out = json::array();
      for (dom::element v : dom::array(e)) out.push_back(Convert(v, level + 1, object_depth));
      return out;
    }
    case dom::element_type::STRING:
      return std::string(std::string_view(e));
    case dom::element_type::INT64:
      return int64_t(e);
    case dom::element_type::UINT64:
      return uint64_t(e);
    case dom::element_type::DOUBLE:
      return double(e);
    case dom::element_type::BOOL:
      return bool(e);
    case dom::element_type::NULL_VALUE:
      return nullptr;
  }
  return nullptr;
}

}  // namespace

json ParseSlim(std::string_view text, int object_depth) {
  // One parser per thread: it keeps its buffers between documents.
  thread_local dom::parser parser;
  dom::element root;
  if (parser.parse(text.data(), text.size(), /*realloc_if_needed=*/true).get(root) != simdjson::SUCCESS) {
    return json(json::value_t::discarded);
  }
  return Convert(root, 0, object_depth);
}

std::string ResourceVersionIn(std::string_view text) { return ObjectVersionIn(text).resource_version; }

ObjectVersion ObjectVersionIn(std::string_view text) {
  thread_local dom::parser parser;
  dom::element root;
  ObjectVersion out;
  if (parser.parse(text.data(), text.size(), /*realloc_if_needed=*/true).get(root) != simdjson::SUCCESS) return out;
  dom::element meta;
  if (root["metadata"].get(meta) != simdjson::SUCCESS) return out;
  std::string_view rv;
  if (meta["resourceVersion"].get(rv) == simdjson::SUCCESS) out.resource_version = std::string(rv);
  int64_t gen = 0;
  if (meta["generation"].get(gen) == simdjson::SUCCESS) out.generation = gen;
  return out;
}

}  // namespace eco::k8s
