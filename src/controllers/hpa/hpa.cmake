# The built-in HPA placement and action controllers.
add_library(eco_hpa STATIC
  ${CMAKE_CURRENT_LIST_DIR}/cluster_view.cc
  ${CMAKE_CURRENT_LIST_DIR}/hpa.cc
  ${CMAKE_CURRENT_LIST_DIR}/intents.cc
  ${CMAKE_CURRENT_LIST_DIR}/schedulable.cc)
target_link_libraries(eco_hpa
  PUBLIC eco_controllers eco_appcontext eco_catalog eco_k8s eco_client_pool eco_store eco_common
         nlohmann_json::nlohmann_json
  PRIVATE Threads::Threads)
