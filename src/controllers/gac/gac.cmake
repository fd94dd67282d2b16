# The generic action controller (EMCO's gac): new objects and per-cluster
# customizations from the generic K8s intents.
add_library(eco_gac STATIC ${CMAKE_CURRENT_LIST_DIR}/gac.cc ${CMAKE_CURRENT_LIST_DIR}/customize.cc)
target_link_libraries(eco_gac PUBLIC eco_controllers eco_appcontext eco_catalog eco_store eco_common
  nlohmann_json::nlohmann_json PRIVATE eco_scheduler OpenSSL::Crypto)
