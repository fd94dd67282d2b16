eco_test(traffic_tests unit
  ${CMAKE_CURRENT_SOURCE_DIR}/traffic_controller_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/traffic_api_test.cc)
target_link_libraries(traffic_tests PRIVATE eco_traffic eco_api eco_store eco_test_fixtures
  nlohmann_json::nlohmann_json)
target_include_directories(traffic_tests PRIVATE ${CMAKE_SOURCE_DIR}/tests/api)
