eco_test(gac_tests unit
  ${CMAKE_CURRENT_SOURCE_DIR}/gac_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/gac_api_test.cc)
target_link_libraries(gac_tests PRIVATE eco_gac eco_api eco_store eco_test_fixtures
  nlohmann_json::nlohmann_json)
target_include_directories(gac_tests PRIVATE ${CMAKE_SOURCE_DIR}/tests/api)
