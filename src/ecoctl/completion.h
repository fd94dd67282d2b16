// `ecoctl completion bash|zsh`: a shell completion script to source.
#pragma once

#include <string>

namespace eco::ecoctl {

// The script for `shell` ("bash" or "zsh"; zsh through bashcompinit), or ""
// for a shell without one.
std::string CompletionScript(const std::string& shell);

}  // namespace eco::ecoctl
