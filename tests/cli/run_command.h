#pragma once
// Runs the built `fusetune` binary with arguments and captures its exit code, stdout and stderr.
#include <sys/wait.h>

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fusetune::testing {

// Timing flags for tunes whose figures a test does not judge: as few repeats as a job allows.
inline const std::string kFast = " --repeat 2 --min-repeat-ms 1 ";

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `text` in a file of this process's own under the temporary directory; returns its path.
inline std::string WriteTempFile(const std::string& stem, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() /
              ("fusetune_" + stem + "_" + std::to_string(::getpid()));
  std::ofstream(path) << text;
  return path.string();
}

// `env` is prepended to the command line ("A=1 B=2"), so it applies to this run only.
inline CommandResult RunFusetune(const std::string& args, const std::string& env = "") {
  static int counter = 0;
  auto dir = std::filesystem::temp_directory_path();
  auto out_path =
      dir / ("fusetune_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter) + ".out");
  auto err_path = dir / ("fusetune_cli_" + std::to_string(::getpid()) + "_" +
                         std::to_string(counter++) + ".err");
  std::string cmd = env + " " + FUSETUNE_BINARY + " " + args + " >" + out_path.string() + " 2>" +
                    err_path.string() + " </dev/null";
  int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = Slurp(out_path);
  r.err = Slurp(err_path);
  std::filesystem::remove(out_path);
  std::filesystem::remove(err_path);
  return r;
}

// `run --json` of `graph` under the plan file `plan` at `threads` threads: every kernel compiled,
// timed twice and checked against the reference interpreter.
inline CommandResult RunPlanFile(const std::string& plan, const std::string& graph, int threads) {
  return RunFusetune("run --json --repeat 2 --threads " + std::to_string(threads) + " --plan " +
                     plan + " " + graph);
}

// A fresh path under the temp directory, removed (with its WAL files) when the object dies.
class TempDb {
 public:
  explicit TempDb(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("fusetune_" + name + "_" + std::to_string(::getpid()) + ".db")) {
    Remove();
  }
  ~TempDb() { Remove(); }
  const std::string& path() const { return path_str_ = path_.string(); }

 private:
  void Remove() {
    for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(path_.string() + s);
  }
  std::filesystem::path path_;
  mutable std::string path_str_;
};

}  // namespace fusetune::testing
