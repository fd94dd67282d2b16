# Writes OUT: a C++ source holding each of FILES (in DIR) as bytes, so that
# the dashboard ships inside the eco binary. Run by the build (cmake -P).
string(REPLACE "," ";" FILES "${FILES}")  # passed comma-separated: no shell quoting
set(body "// Generated from src/ui by embed.cmake; do not edit.\n#include \"ui/ui.h\"\n\nnamespace eco::ui {\nnamespace {\n")
set(table "")
set(i 0)
foreach(f IN LISTS FILES)
  file(READ "${DIR}/${f}" hex HEX)
  string(LENGTH "${hex}" n)
  math(EXPR size "${n} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(APPEND body "const unsigned char k${i}[] = {${bytes}0};\n")
  string(APPEND table "    {\"${f}\", std::string_view(reinterpret_cast<const char*>(k${i}), ${size})},\n")
  math(EXPR i "${i} + 1")
endforeach()
string(APPEND body "}  // namespace\n\nstd::span<const EmbeddedFile> EmbeddedFiles() {\n  static const EmbeddedFile files[] = {\n${table}  };\n  return files;\n}\n\n}  // namespace eco::ui\n")
file(WRITE "${OUT}.tmp" "${body}")
# Only a changed file is replaced, so nothing recompiles needlessly.
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
