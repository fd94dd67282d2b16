// eco's version, as `eco version` prints it and the API describes itself.
#pragma once

namespace eco {

inline constexpr const char* kVersion = "0.1.0";

}  // namespace eco
