# kube-sim's transport, TLS material and kubeconfigs, in process on loopback.
find_package(CURL REQUIRED)
eco_test(kubesim_server_test unit ${CMAKE_CURRENT_LIST_DIR}/server_test.cc)
target_link_libraries(kubesim_server_test PRIVATE eco_kubesim_server CURL::libcurl
  OpenSSL::SSL OpenSSL::Crypto yaml-cpp nlohmann_json::nlohmann_json Threads::Threads)
