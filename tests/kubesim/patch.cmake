eco_test(kubesim_patch_test unit patch_test.cc apply_test.cc selector_test.cc schema_test.cc)
target_link_libraries(kubesim_patch_test PRIVATE eco_kubesim_patch)
