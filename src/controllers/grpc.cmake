# gRPC transport: RemoteController (client) and ControllerServer.
add_library(eco_controllers_grpc STATIC ${CMAKE_CURRENT_LIST_DIR}/grpc.cc)
target_link_libraries(eco_controllers_grpc PUBLIC eco_controllers eco_proto)
