// Runs the built `eco helm template` as a process on a helm-v3 corpus chart
// and compares its stdout with the golden Helm printed.
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace {

const std::string kDir = std::string(ECO_CONFORMANCE_DIR) + "/helm";

std::string EcoBinary() {
  const char* dir = std::getenv("ECO_BIN_DIR");
  return std::string(dir ? dir : ECO_BUILD_BIN_DIR) + "/eco";
}

// Runs `cmd` through the shell; returns stdout and sets the exit code.
std::string RunShell(const std::string& cmd, int* code) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = pclose(p);
  *code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(HelmTemplateCli, SubchartGoldenByteForByte) {
  if (!std::ifstream(kDir + "/cases.json")) GTEST_SKIP() << "conformance corpus not found";
  if (!std::ifstream(EcoBinary())) GTEST_SKIP() << "eco binary not built at " << EcoBinary();
  // helm-template-show-only-glob: `helm template <chart> -s templates/subdir/role*`
  // with the v3 unit-test default kube version.
  int code = -1;
  std::string out = RunShell(EcoBinary() + " helm template " + kDir +
                            "/charts/helm-v3/subchart --namespace default -s 'templates/subdir/role*' "
                            "--kube-version=v1.20.0 2>/dev/null",
                        &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out, ReadAll(kDir + "/expected/helm-template-show-only-glob.txt"));
  // The whole chart, release name given, flags in their other forms.
  out = RunShell(EcoBinary() + " helm template release-name -ndefault " + kDir +
                "/charts/helm-v3/subchart --kube-version v1.20.0 2>/dev/null",
            &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out, ReadAll(kDir + "/expected/helm-template-subchart.txt"));
}

TEST(HelmTemplateCli, ErrorsGoToStderrWithExitCode1) {
  if (!std::ifstream(EcoBinary())) GTEST_SKIP() << "eco binary not built at " << EcoBinary();
  int code = -1;
  std::string out = RunShell(EcoBinary() + " helm template /nonexistent/chart 2>&1 >/dev/null", &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out, "Error: path \"/nonexistent/chart\" not found\n");
  out = RunShell(EcoBinary() + " helm template --bogus x 2>&1 >/dev/null", &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out, "Error: unknown flag: --bogus\n");
}

}  // namespace

namespace {

TEST(HelmTemplateCli, HelpListsTheFlagsAndExitsZero) {
  if (!std::ifstream(EcoBinary())) GTEST_SKIP() << "eco binary not built at " << EcoBinary();
  int code = -1;
  std::string out = RunShell(EcoBinary() + " helm template --help 2>/dev/null", &code);
  EXPECT_EQ(code, 0);
  for (const char* flag : {"--values", "--set-json", "--show-only", "--kube-version", "--include-crds"})
    EXPECT_NE(out.find(flag), std::string::npos) << flag;
  out = RunShell(EcoBinary() + " helm --help 2>/dev/null", &code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("template"), std::string::npos);
}

}  // namespace
