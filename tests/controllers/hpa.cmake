eco_test(hpa_tests unit
  ${CMAKE_CURRENT_SOURCE_DIR}/hpa_api_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/hpa_controller_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/hpa_schedulable_test.cc)
target_link_libraries(hpa_tests PRIVATE eco_hpa eco_api eco_store eco_test_fixtures
  nlohmann_json::nlohmann_json)

# Placement against kube-sim clusters that differ in node labels and
# capacity (and nodes made cordoned, tainted, NotReady through the API), and
# the edited Deployments really scheduling there.
if(NOT ECO_UNIT_ONLY)
  eco_test(hpa_kubesim_test integration ${CMAKE_CURRENT_SOURCE_DIR}/hpa_kubesim_test.cc)
  target_link_libraries(hpa_kubesim_test PRIVATE eco_hpa eco_k8s eco_scheduler eco_api eco_store
    eco_test_fixtures nlohmann_json::nlohmann_json)
  target_compile_definitions(hpa_kubesim_test PRIVATE
    HPA_FLEET_FILE="${CMAKE_CURRENT_SOURCE_DIR}/hpa_fleet.yaml")
  if(TARGET kube-sim)
    add_dependencies(hpa_kubesim_test kube-sim)
  endif()
endif()
