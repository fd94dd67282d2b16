# The traffic (dtc) action controller: NetworkPolicies, service discovery and
# Istio resources from the traffic group intents; then the registered
# dtc sub-controllers.
add_library(eco_traffic STATIC ${CMAKE_CURRENT_SOURCE_DIR}/traffic/traffic.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/traffic/traffic_resources.cc)
target_link_libraries(eco_traffic PUBLIC eco_controllers eco_appcontext eco_catalog
  nlohmann_json::nlohmann_json)
