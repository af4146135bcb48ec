// What a `fusetune-codegen` process (a sandbox child, `run`) is started with: the caller's
// environment, with glibc's malloc asked for transparent huge pages ahead of the user's own
// tunables, which win.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "worker/codegen_binary.h"

namespace fusetune {
namespace {

// Sets (or with nullopt unsets) a variable while it lives, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value->c_str(), 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

bool Has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

std::vector<std::string> Tunables(const std::vector<std::string>& env) {
  std::vector<std::string> out;
  for (const std::string& e : env)
    if (e.starts_with("GLIBC_TUNABLES=")) out.push_back(e);
  return out;
}

TEST(CodegenEnvironment, AsksMallocForHugePages) {
  ScopedEnv tunables("GLIBC_TUNABLES", std::nullopt);
  ScopedEnv other("FUSETUNE_ENVIRONMENT_TEST", "kept");
  const std::vector<std::string> env = CodegenEnvironment();
  EXPECT_EQ(Tunables(env), std::vector<std::string>{"GLIBC_TUNABLES=glibc.malloc.hugetlb=1"});
  EXPECT_TRUE(Has(env, "FUSETUNE_ENVIRONMENT_TEST=kept"));
}

TEST(CodegenEnvironment, TheUsersTunablesComeAfterAndWin) {
  // glibc reads the list in order, a later setting of a tunable replacing an earlier one.
  ScopedEnv tunables("GLIBC_TUNABLES", "glibc.malloc.hugetlb=0:glibc.malloc.arena_max=2");
  EXPECT_EQ(Tunables(CodegenEnvironment()),
            std::vector<std::string>{"GLIBC_TUNABLES=glibc.malloc.hugetlb=1:glibc.malloc.hugetlb=0:"
                                     "glibc.malloc.arena_max=2"});
  ScopedEnv empty("GLIBC_TUNABLES", "");
  EXPECT_EQ(Tunables(CodegenEnvironment()),
            std::vector<std::string>{"GLIBC_TUNABLES=glibc.malloc.hugetlb=1"});
}

TEST(CodegenEnvironment, TheCallersEnvironmentHasItToo) {
  // `fusetune run` execs `fusetune-codegen run`: the same allocator as the sandbox child's.
  ScopedEnv tunables("GLIBC_TUNABLES", std::nullopt);
  const std::vector<std::string> env = CodegenCallerEnvironment();
  EXPECT_EQ(Tunables(env), std::vector<std::string>{"GLIBC_TUNABLES=glibc.malloc.hugetlb=1"});
  EXPECT_EQ(std::count_if(
                env.begin(), env.end(),
                [](const std::string& e) { return e.starts_with("FUSETUNE_CALLER_BUILD_ID="); }),
            1);
}

}  // namespace
}  // namespace fusetune
