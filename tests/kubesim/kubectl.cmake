# Real kubectl against a real kube-sim process (integration).
if(NOT ECO_UNIT_ONLY)
  eco_test(kubesim_kubectl_test integration kubectl_test.cc)
  target_link_libraries(kubesim_kubectl_test PRIVATE eco_test_fixtures nlohmann_json::nlohmann_json)
  target_compile_definitions(kubesim_kubectl_test PRIVATE ECO_KUBECTL="${CMAKE_SOURCE_DIR}/.tools/kubectl")
  if(TARGET kube-sim)
    add_dependencies(kubesim_kubectl_test kube-sim)
  endif()
endif()
