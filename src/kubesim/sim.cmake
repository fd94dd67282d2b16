find_package(yaml-cpp REQUIRED)
add_library(eco_kubesim STATIC sim.cc controllers.cc types.cc fleet.cc update_rules.cc openapi.cc)
target_link_libraries(eco_kubesim
  PUBLIC eco_common nlohmann_json::nlohmann_json
  PRIVATE eco_kubesim_patch yaml-cpp Threads::Threads OpenSSL::Crypto)
