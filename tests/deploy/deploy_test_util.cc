#include "deploy_test_util.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

namespace fusetune::deploy_test {
namespace fs = std::filesystem;

fs::path SourceDir() { return FUSETUNE_SOURCE_DIR; }
fs::path DeployDir() { return SourceDir() / "deploy"; }

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

namespace {

// Applies `<<` merge keys the way docker compose does: keys of the map itself win over merged
// ones, a sequence of maps merges left to right with earlier maps winning.
YAML::Node ResolveMerges(const YAML::Node& node) {
  if (node.IsSequence()) {
    YAML::Node out(YAML::NodeType::Sequence);
    for (const YAML::Node& item : node) out.push_back(ResolveMerges(item));
    return out;
  }
  if (!node.IsMap()) return node;
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& kv : node) {
    if (kv.first.as<std::string>() == "<<") continue;
    out[kv.first.as<std::string>()] = ResolveMerges(kv.second);
  }
  if (YAML::Node merge = node["<<"]) {
    std::vector<YAML::Node> sources;
    if (merge.IsSequence())
      for (const YAML::Node& m : merge) sources.push_back(m);
    else
      sources.push_back(merge);
    for (const YAML::Node& source : sources)
      for (const auto& kv : ResolveMerges(source)) {
        std::string key = kv.first.as<std::string>();
        if (!out[key]) out[key] = kv.second;
      }
  }
  return out;
}

}  // namespace

YAML::Node LoadComposeFile(const fs::path& path) {
  return ResolveMerges(YAML::LoadFile(path.string()));
}

std::vector<K8sObject> LoadK8sObjects() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(DeployDir() / "k8s"))
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<K8sObject> objects;
  for (const fs::path& file : files)
    for (const YAML::Node& doc : YAML::LoadAllFromFile(file.string()))
      if (doc && !doc.IsNull()) objects.push_back({file.filename().string(), doc});
  return objects;
}

YAML::Node FindK8s(const std::vector<K8sObject>& objects, const std::string& kind,
                   const std::string& name) {
  std::vector<YAML::Node> found;
  for (const K8sObject& o : objects)
    if (o.kind() == kind && (name.empty() || o.name() == name)) found.push_back(o.node);
  EXPECT_EQ(found.size(), 1u) << "objects of kind " << kind << " named '" << name << "'";
  return found.empty() ? YAML::Node() : found[0];
}

std::vector<std::string> Strings(const YAML::Node& sequence) {
  std::vector<std::string> out;
  if (sequence && sequence.IsSequence())
    for (const YAML::Node& item : sequence) out.push_back(item.as<std::string>());
  return out;
}

Invocation MakeInvocation(const std::string& where, const std::vector<std::string>& tokens) {
  Invocation inv{where, "", {}};
  size_t start = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    if (t == "fusetune" || (t.size() > 9 && t.ends_with("/fusetune"))) {
      start = i + 1;
      break;
    }
  }
  if (start < tokens.size()) inv.subcommand = tokens[start];
  for (size_t i = start + 1; i < tokens.size(); ++i) inv.args.push_back(tokens[i]);
  return inv;
}

std::optional<std::string> FlagValue(const Invocation& inv, const std::string& flag) {
  for (size_t i = 0; i < inv.args.size(); ++i) {
    if (inv.args[i] == flag && i + 1 < inv.args.size()) return inv.args[i + 1];
    if (inv.args[i].starts_with(flag + "=")) return inv.args[i].substr(flag.size() + 1);
  }
  return std::nullopt;
}

std::vector<std::string> LongFlags(const std::vector<std::string>& args) {
  static const std::regex long_flag("^--[a-z][a-z0-9-]*");
  std::vector<std::string> out;
  for (const std::string& a : args) {
    std::smatch m;
    if (std::regex_search(a, m, long_flag)) out.push_back(m.str());
  }
  return out;
}

std::set<int> ParseCpuList(const std::string& text) {
  std::set<int> cpus;
  std::stringstream parts(text);
  std::string part;
  static const std::regex range(R"(^\s*(\d+)\s*(?:-\s*(\d+))?\s*$)");
  while (std::getline(parts, part, ',')) {
    std::smatch m;
    if (!std::regex_match(part, m, range)) return {};
    int first = std::stoi(m[1].str());
    int last = m[2].matched ? std::stoi(m[2].str()) : first;
    if (last < first) return {};
    for (int c = first; c <= last; ++c) cpus.insert(c);
  }
  return cpus;
}

std::pair<std::string, int> SplitHostPort(const std::string& address) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos) return {address, -1};
  try {
    return {address.substr(0, colon), std::stoi(address.substr(colon + 1))};
  } catch (const std::exception&) {
    return {address.substr(0, colon), -1};
  }
}

std::multimap<std::string, std::string> ParseUnitFile(const fs::path& path) {
  std::multimap<std::string, std::string> unit;
  std::stringstream in(ReadFile(path));
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = line.substr(1, line.size() - 2);
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    unit.emplace(section + "." + line.substr(0, eq), line.substr(eq + 1));
  }
  return unit;
}

std::vector<std::string> UnitValues(const std::multimap<std::string, std::string>& unit,
                                    const std::string& key) {
  std::vector<std::string> out;
  auto [begin, end] = unit.equal_range(key);
  for (auto it = begin; it != end; ++it) out.push_back(it->second);
  return out;
}

std::vector<std::string> SplitCommandLine(const std::string& line) {
  std::vector<std::string> tokens;
  std::string current;
  bool in_token = false;
  for (char c : line) {
    if (c == '\'' || c == '"') {
      in_token = true;
      continue;
    }
    if (c == ' ' || c == '\t') {
      if (in_token) tokens.push_back(current);
      current.clear();
      in_token = false;
      continue;
    }
    current += c;
    in_token = true;
  }
  if (in_token) tokens.push_back(current);
  return tokens;
}

Output RunShell(const std::string& command) {
  Output out;
  std::string full = "(" + command + ") </dev/null 2>&1";
  FILE* pipe = ::popen(full.c_str(), "r");
  if (!pipe) return out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.text.append(buf.data(), n);
  int status = ::pclose(pipe);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

}  // namespace fusetune::deploy_test
