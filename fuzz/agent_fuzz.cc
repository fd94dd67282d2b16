// Fuzzes what the agent protocol decodes from the other side: the hub's
// and the agent's stream messages (protobuf), and a publication's
// compressed JSON. Any input must end in a value or an error: no crash, no
// hang, no allocation beyond DecodePublication's bound.
#include <cstddef>
#include <cstdint>
#include <string>

#include "agent/agent.pb.h"
#include "appcontext/agent_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  eco::agent::v1::HubMessage hub;
  if (hub.ParseFromString(bytes) && hub.has_publication()) {
    (void)eco::appcontext::DecodePublication(hub.publication().data());
  }
  eco::agent::v1::AgentMessage agent;
  (void)agent.ParseFromString(bytes);
  // A publication as stored: the first byte picks compressed or plain JSON.
  if (size > 0 && (data[0] & 1)) {
    (void)eco::appcontext::DecodePublication(bytes.substr(1));
  } else {
    nlohmann::json j = nlohmann::json::parse(bytes, nullptr, false);
    if (!j.is_discarded()) {
      auto p = eco::appcontext::PublicationFromJson(j);
      // What decodes also encodes and decodes again.
      if (p.ok()) (void)eco::appcontext::DecodePublication(eco::appcontext::EncodePublication(*p));
    }
  }
  return 0;
}
