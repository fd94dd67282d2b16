eco_test(kubesim_sim_test unit sim_test.cc)
target_link_libraries(kubesim_sim_test PRIVATE eco_kubesim nlohmann_json::nlohmann_json)
