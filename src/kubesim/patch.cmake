# Patch, server-side apply and selector semantics: pure functions on JSON.
add_library(eco_kubesim_patch STATIC patch.cc apply.cc selector.cc schema.cc)
target_link_libraries(eco_kubesim_patch PUBLIC eco_common nlohmann_json::nlohmann_json)
