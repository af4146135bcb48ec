#pragma once
// Helpers for the tests of deploy/: reading the manifests, pulling command lines apart, running
// the built binary.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fusetune::deploy_test {

std::filesystem::path SourceDir();
std::filesystem::path DeployDir();
std::string ReadFile(const std::filesystem::path& path);

// A YAML file with compose's merge keys (`<<: *anchor`) applied, which yaml-cpp 0.7 does not do.
YAML::Node LoadComposeFile(const std::filesystem::path& path);

// Every document of every deploy/k8s/*.yaml, with the file it came from.
struct K8sObject {
  std::string file;
  YAML::Node node;
  std::string kind() const { return node["kind"].as<std::string>(); }
  std::string name() const { return node["metadata"]["name"].as<std::string>(); }
};
std::vector<K8sObject> LoadK8sObjects();
// The one object of this kind (and name, when given); fails the test when there is not one.
YAML::Node FindK8s(const std::vector<K8sObject>& objects, const std::string& kind,
                   const std::string& name = "");

std::vector<std::string> Strings(const YAML::Node& sequence);

// A `fusetune` command line found in a manifest: where it came from, the subcommand and every
// token after it.
struct Invocation {
  std::string where;
  std::string subcommand;
  std::vector<std::string> args;
};
// `tokens` either start with the subcommand (the image's entrypoint is fusetune) or hold a path
// ending in /fusetune followed by the subcommand.
Invocation MakeInvocation(const std::string& where, const std::vector<std::string>& tokens);
// The value after `flag` (`--flag VALUE` or `--flag=VALUE`), if the flag is there.
std::optional<std::string> FlagValue(const Invocation& inv, const std::string& flag);
// Every token that looks like a long option (`--name`, `--name=value` gives `--name`).
std::vector<std::string> LongFlags(const std::vector<std::string>& args);

// "2-3,6" -> {2, 3, 6}; an empty set for text that is not a CPU list.
std::set<int> ParseCpuList(const std::string& text);
// "host:port" -> {host, port}.
std::pair<std::string, int> SplitHostPort(const std::string& address);

// An INI-like systemd unit: "Section.Key" -> every value given, in order.
std::multimap<std::string, std::string> ParseUnitFile(const std::filesystem::path& path);
std::vector<std::string> UnitValues(const std::multimap<std::string, std::string>& unit,
                                    const std::string& key);
// Splits a command line on blanks, dropping quotes, so the words of a `sh -c '...'` command are
// tokens too (no escapes: enough for our units).
std::vector<std::string> SplitCommandLine(const std::string& line);

struct Output {
  int exit_code = -1;
  std::string text;  // stdout and stderr together
};
// Runs `command` through /bin/sh with stdin from /dev/null.
Output RunShell(const std::string& command);

}  // namespace fusetune::deploy_test
