eco_test(controllers_grpc_test unit ${CMAKE_CURRENT_LIST_DIR}/grpc_test.cc
  ${CMAKE_SOURCE_DIR}/tests/k8s/test_certs.cc)
target_include_directories(controllers_grpc_test PRIVATE ${CMAKE_SOURCE_DIR}/tests/k8s)
target_link_libraries(controllers_grpc_test PRIVATE eco_controllers_grpc OpenSSL::SSL OpenSSL::Crypto)
