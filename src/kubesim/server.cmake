# kube-sim's transport (Boost.Beast, header-only; HTTP/2 by nghttp2), TLS
# material and kubeconfigs.
find_package(Boost 1.74 REQUIRED)
add_library(eco_kubesim_server STATIC
  ${CMAKE_CURRENT_LIST_DIR}/server.cc
  ${CMAKE_CURRENT_LIST_DIR}/server_core.cc
  ${CMAKE_CURRENT_LIST_DIR}/h2_connection.cc
  ${CMAKE_CURRENT_LIST_DIR}/h2_session.cc
  ${CMAKE_CURRENT_LIST_DIR}/tls.cc
  ${CMAKE_CURRENT_LIST_DIR}/kubeconfig_out.cc)
target_link_libraries(eco_kubesim_server
  PUBLIC eco_common
  PRIVATE Boost::headers PkgConfig::NGHTTP2 OpenSSL::SSL OpenSSL::Crypto Threads::Threads
          nlohmann_json::nlohmann_json)
