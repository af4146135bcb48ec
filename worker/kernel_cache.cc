#include "worker/kernel_cache.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "ir/text/canonical_order.h"
#include "ir/text/signature.h"

namespace fusetune {

namespace {

// The key's text but for the order of the group's inputs when `input_order` is false.
std::string KeyText(const Graph& graph, const FusedGroup& group, const CanonicalForm& form,
                    const Schedule& schedule, const std::string& target, int threads, int opt_level,
                    bool input_order) {
  auto position = [](const std::vector<ValueId>& in, ValueId v) {
    auto it = std::find(in.begin(), in.end(), v);
    return it == in.end() ? -1L : static_cast<long>(it - in.begin());
  };
  std::string abi;
  if (input_order) {
    abi = "inputs";
    for (ValueId v : group.inputs) abi += fmt::format(" p{}", position(form.inputs, v));
    abi += "; ";
  }
  abi += "outputs";
  for (ValueId v : group.outputs) abi += fmt::format(" n{}", position(form.nodes, v));
  abi += "; nodes";
  for (ValueId v : group.nodes) abi += fmt::format(" n{}", position(form.nodes, v));
  // A wpack matmul packs B at bind time only where B is a weight, not computed by another kernel
  // (worker/codegen/templates/matmul.cc): the same group is two kernels, by where B comes from.
  if (schedule.Get("wpack", 0) != 0 && group.anchor >= 0) {
    const std::vector<ValueId>& operands = graph.value(group.anchor).inputs;
    if (operands.size() > 1 && graph.value(operands[1]).kind == ValueKind::kNode)
      abi += "; B computed";
  }
  return fmt::format("{}\n{}\nschedule {}\ntarget {}\nthreads {}\nopt {}", form.text, abi,
                     schedule.ToString(), target, threads, opt_level);
}

}  // namespace

std::string KernelKey(const Graph& graph, const FusedGroup& group, const Schedule& schedule,
                      const std::string& target, int threads, int opt_level) {
  const CanonicalForm form = Canonicalize(graph, group.nodes, group.recompute);
  return Hash128Hex(KeyText(graph, group, form, schedule, target, threads, opt_level, true));
}

KernelShare ShareOf(const Graph& graph, const FusedGroup& group, const Schedule& schedule,
                    const std::string& target, int threads, int opt_level) {
  const CanonicalForm form = Canonicalize(graph, group.nodes, group.recompute);
  KernelShare share;
  share.key = Hash128Hex(KeyText(graph, group, form, schedule, target, threads, opt_level, false));
  std::map<std::string, int> seen;  // constants by text: equal texts are equal values
  for (ValueId v : group.inputs) {
    auto it = std::find(form.inputs.begin(), form.inputs.end(), v);
    if (it != form.inputs.end()) {
      share.roles.push_back(fmt::format("p{}", it - form.inputs.begin()));
    } else if (graph.value(v).kind == ValueKind::kConst) {
      const std::string text = canonical::ConstantText(graph.value(v));
      share.roles.push_back(fmt::format("{} #{}", text, seen[text]++));
    } else {
      share.roles.push_back(fmt::format("value {}", v));  // never expected: shares with nothing
    }
  }
  return share;
}

std::optional<std::vector<ValueId>> ArgumentsFor(const KernelShare& owner, const KernelShare& share,
                                                 const FusedGroup& group) {
  if (owner.key != share.key || owner.roles.size() != share.roles.size()) return std::nullopt;
  std::map<std::string, ValueId> by_role;
  for (size_t i = 0; i < share.roles.size(); ++i)
    if (!by_role.emplace(share.roles[i], group.inputs.at(i)).second) return std::nullopt;
  std::vector<ValueId> arguments;
  for (const std::string& role : owner.roles) {
    auto it = by_role.find(role);
    if (it == by_role.end()) return std::nullopt;
    arguments.push_back(it->second);
  }
  return arguments;
}

KernelCache::KernelCache(size_t max_kernels)
    : entries_(static_cast<int64_t>(std::max<size_t>(1, max_kernels))) {}

std::shared_ptr<const codegen::CompiledKernel> KernelCache::Find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* kernel = entries_.Find(key);
  if (!kernel) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  return *kernel;
}

bool KernelCache::Contains(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.Contains(key);
}

void KernelCache::Put(const std::string& key,
                      std::shared_ptr<const codegen::CompiledKernel> kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.Put(key, std::move(kernel), 1);
}

size_t KernelCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

int64_t KernelCache::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}

int64_t KernelCache::misses() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return misses_;
}

}  // namespace fusetune
