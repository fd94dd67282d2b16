// What libraries read from files the first time they need it, done at start
// by the long-running roles, so that a deployment (instantiate until Ready)
// touches no file. docs/limits.md lists what is still read at start.
#pragma once

namespace eco::cmd {

void PreloadLazyFiles();

}  // namespace eco::cmd
