# kube-sim's main. The simulator library (eco_kubesim, src/kubesim/sim.cmake)
# may not exist yet in a partial tree; without it there is no binary.
if(TARGET eco_kubesim AND TARGET eco_kubesim_server)
  add_executable(kube-sim ${CMAKE_CURRENT_LIST_DIR}/kube_sim.cc)
  target_link_libraries(kube-sim PRIVATE eco_kubesim eco_kubesim_server CLI11::CLI11
                        Threads::Threads)
  eco_use_tcmalloc(kube-sim)
endif()
