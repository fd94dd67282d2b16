eco_test(kubesim_sim_test unit sim_test.cc reference_test.cc update_rules_test.cc)
target_link_libraries(kubesim_sim_test PRIVATE eco_kubesim eco_test_fixtures nlohmann_json::nlohmann_json ZLIB::ZLIB)
# The recordings of a real API server the reference test replays; it skips without them.
set(ECO_REFERENCE_DIR "${CMAKE_SOURCE_DIR}/../shared/reference/kubernetes" CACHE PATH "Recordings of kube-apiserver")
target_compile_definitions(kubesim_sim_test PRIVATE ECO_REFERENCE_DIR="${ECO_REFERENCE_DIR}")
