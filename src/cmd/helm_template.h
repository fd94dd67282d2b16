// `eco helm template [NAME] CHART [flags]`: Helm's `helm template`, with its
// flags in pflag's forms (--flag=v, --flag v, -fv, -f v, -f=v).
#pragma once

#include <string>
#include <vector>

namespace eco::cmd {

// Runs the command on `args` (what follows "helm template"); prints as Helm
// does (stdout, "Error: ..." on stderr) and returns the exit code.
int HelmTemplateMain(const std::vector<std::string>& args);

}  // namespace eco::cmd
