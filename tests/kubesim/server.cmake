# kube-sim's transport, TLS material and kubeconfigs, in process on loopback.
find_package(CURL REQUIRED)
eco_test(kubesim_server_test unit ${CMAKE_CURRENT_LIST_DIR}/server_test.cc)
target_link_libraries(kubesim_server_test PRIVATE eco_kubesim_server CURL::libcurl
  OpenSSL::SSL OpenSSL::Crypto yaml-cpp nlohmann_json::nlohmann_json Threads::Threads)
# kube-sim's HTTP/2 transport, driven by a small nghttp2 client.
eco_test(kubesim_h2_test unit ${CMAKE_CURRENT_LIST_DIR}/h2_test.cc)
target_link_libraries(kubesim_h2_test PRIVATE eco_kubesim_server eco_test_fixtures PkgConfig::NGHTTP2
  OpenSSL::SSL OpenSSL::Crypto nlohmann_json::nlohmann_json Threads::Threads)
