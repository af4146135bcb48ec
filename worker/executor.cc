#include "worker/executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/fusion.h"
#include "worker/buffer_plan.h"
#include "worker/codegen/runtime/thread_pool.h"

namespace fusetune {

struct PlanExecutor::Step {
  FusedGroup group;
  Schedule schedule;
  std::shared_ptr<const codegen::CompiledKernel> kernel;
  std::vector<void*> buffers;      // group inputs, then outputs (kernel_abi.h)
  std::vector<ValueId> arguments;  // the group's inputs in the order `kernel` takes them
  bool shared = false;             // the kernel was compiled for an earlier group of the plan
};

namespace {
constexpr int kOptLevel = 3;
}

std::vector<KernelOrder> PlanKernels(const Graph& graph, const Plan& plan, const codegen::Jit& jit,
                                     int threads) {
  std::vector<KernelOrder> orders;
  const std::vector<std::vector<ValueId>> recomputed = RecomputedNodes(plan.groups);
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const PlanGroup& pg = plan.groups[gi];
    std::string why;
    std::optional<FusedGroup> group = AnalyzeGroup(graph, pg.nodes, &why, recomputed[gi]);
    if (!group) throw UserError("plan group is not lowerable: " + why);
    KernelOrder order;
    const std::string target = jit.target().Fingerprint();
    order.key = KernelKey(graph, *group, pg.schedule, target, threads, kOptLevel);
    order.share = ShareOf(graph, *group, pg.schedule, target, threads, kOptLevel);
    order.group = std::move(*group);
    order.schedule = pg.schedule;
    orders.push_back(std::move(order));
  }
  return orders;
}

std::shared_ptr<const codegen::CompiledKernel> CompileKernel(const Graph& graph,
                                                             const KernelOrder& order,
                                                             codegen::Jit& jit, int threads) {
  const codegen::CompileOptions options{.opt_level = kOptLevel, .threads = threads};
  return codegen::CompileGroup(graph, order.group, order.schedule, jit, options);
}

namespace {

// Compiles orders[i] for each i in `which` into kernels[i], on up to `compile_threads` threads
// (the Jit compiles concurrently: jit.h). A failure is rethrown after all have finished: the
// first in plan order, so the error does not depend on which thread lost the race.
void CompileAll(const Graph& graph, const std::vector<KernelOrder>& orders,
                const std::vector<size_t>& which, codegen::Jit& jit, int threads,
                int compile_threads,
                std::vector<std::shared_ptr<const codegen::CompiledKernel>>& kernels) {
  std::vector<std::exception_ptr> errors(which.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t w = next++; w < which.size(); w = next++) {
      try {
        kernels[which[w]] = CompileKernel(graph, orders[which[w]], jit, threads);
      } catch (...) {
        errors[w] = std::current_exception();
      }
    }
  };
  const size_t helpers =
      std::min(which.size(), static_cast<size_t>(std::max(1, compile_threads))) - 1;
  std::vector<std::thread> pool;
  for (size_t t = 0; t < helpers && which.size() > 1; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

PlanExecutor::PlanExecutor(const Graph& graph, const Plan& plan, codegen::Jit& jit, int threads,
                           KernelCache* kernels, int compile_threads)
    : graph_(graph), plan_(plan), threads_(threads) {
  ValidatePlan(graph, plan);
  runtime::SetNumThreads(threads);
  values_.resize(graph.values().size());
  for (ValueId v = 0; v < static_cast<ValueId>(graph.values().size()); ++v) {
    const Value& value = graph.value(v);
    if (value.kind == ValueKind::kConst && value.data) values_[v] = *value.data;
  }
  std::vector<KernelOrder> orders = PlanKernels(graph, plan, jit, threads);
  // One kernel per distinct group: the groups of a deep model's identical layers share one, each
  // binding it to its own buffers (given in the order of the arguments it was compiled for; wpack
  // keeps a packed copy per bound weight, bound_weights.h).
  std::vector<std::shared_ptr<const codegen::CompiledKernel>> compiled(orders.size());
  std::unordered_map<std::string, size_t> first;  // share key -> the first order with it
  std::vector<size_t> to_compile, owner(orders.size());
  std::vector<std::vector<ValueId>> arguments(orders.size());
  for (size_t i = 0; i < orders.size(); ++i) {
    owner[i] = i;
    arguments[i] = orders[i].group.inputs;
    auto [it, added] = first.emplace(orders[i].share.key, i);
    if (!added) {
      const KernelOrder& o = orders[it->second];
      if (auto args = ArgumentsFor(o.share, orders[i].share, orders[i].group)) {
        owner[i] = it->second;
        arguments[i] = std::move(*args);
        continue;
      }
    }
    if (kernels) compiled[i] = kernels->Find(orders[i].key);
    if (!compiled[i]) to_compile.push_back(i);
  }
  CompileAll(graph, orders, to_compile, jit, threads, compile_threads, compiled);
  compiled_ = static_cast<int>(to_compile.size());
  if (kernels)
    for (size_t i : to_compile) kernels->Put(orders[i].key, compiled[i]);
  for (size_t i = 0; i < orders.size(); ++i) {
    Step step;
    step.kernel = compiled[owner[i]];
    step.shared = owner[i] != i;
    step.arguments = std::move(arguments[i]);
    step.group = std::move(orders[i].group);
    step.schedule = plan.groups[i].schedule;
    steps_.push_back(std::move(step));
  }
  AllocateOutputs();
}

void PlanExecutor::AllocateOutputs() {
  std::vector<BufferStep> uses;
  for (const Step& step : steps_) uses.push_back({step.arguments, step.group.outputs});
  const std::unordered_set<ValueId> own(graph_.outputs().begin(), graph_.outputs().end());
  auto bytes = [&](ValueId v) { return (graph_.value(v).type.NumBytes() + 63) / 64 * 64; };
  const BufferPlan buffers = PlanBuffers(uses, bytes, own);
  for (int64_t block_bytes : buffers.block_bytes)
    blocks_.emplace_back(TensorType{DType::kFloat32, {std::max<int64_t>(block_bytes / 4, 1)}});
  for (const Step& step : steps_)
    for (ValueId out : step.group.outputs) {
      auto block = buffers.block_of.find(out);
      if (block == buffers.block_of.end())
        values_[out] = Tensor(graph_.value(out).type);
      else
        block_of_[out] = block->second;
    }
}

std::vector<Tensor> PlanExecutor::OutputBuffers() const {
  std::vector<Tensor> buffers;
  for (ValueId out : graph_.outputs())
    buffers.push_back(block_of_.count(out) ? Tensor() : values_[out]);
  return buffers;
}

void PlanExecutor::UseOutputs(std::span<const Tensor> buffers) {
  FT_CHECK(buffers.size() == graph_.outputs().size(), "outputs of another graph");
  for (size_t i = 0; i < buffers.size(); ++i) {
    const ValueId out = graph_.outputs()[i];
    if (buffers[i].data() && !block_of_.count(out) && values_[out].data() &&
        buffers[i].type() == values_[out].type())
      values_[out] = buffers[i];
  }
}

void* PlanExecutor::BufferOf(ValueId v) {
  auto block = block_of_.find(v);
  return block == block_of_.end() ? values_[v].data() : blocks_[block->second].data();
}

PlanExecutor::~PlanExecutor() { UnbindAll(); }

void PlanExecutor::UnbindAll() {
  // A kernel outlives this plan (the cache) or serves several of its groups: free the weights
  // it packed for these groups' buffers, and only those.
  for (Step& step : steps_) {
    if (!step.buffers.empty()) step.kernel->Unbind(step.buffers.data());
    step.buffers.clear();
  }
}

int PlanExecutor::num_kernels() const { return static_cast<int>(steps_.size()); }

void PlanExecutor::SetInputs(std::span<const Tensor> inputs) {
  const std::vector<ValueId>& params = graph_.params();
  std::vector<ValueId> without_data;
  for (ValueId p : params)
    if (!graph_.value(p).data) without_data.push_back(p);
  const bool one_per_param = inputs.size() == params.size();
  if (!one_per_param && inputs.size() != without_data.size()) {
    throw UserError(
        fmt::format("{} input tensors given; the graph has {} parameters ({} without data)",
                    inputs.size(), params.size(), without_data.size()));
  }
  const std::vector<ValueId>& targets = one_per_param ? params : without_data;
  for (size_t i = 0; i < targets.size(); ++i) {
    const Value& p = graph_.value(targets[i]);
    if (one_per_param && !inputs[i].data() && p.data) {
      values_[targets[i]] = *p.data;
      continue;
    }
    if (inputs[i].type() != p.type) {
      throw UserError(fmt::format("input for %{} has type {}, expected {}", p.name,
                                  inputs[i].type().ToString(), p.type.ToString()));
    }
    values_[targets[i]] = inputs[i];
  }
  for (ValueId p : params)
    if (!values_[p].data() && graph_.value(p).data) values_[p] = *graph_.value(p).data;
  // Every old binding goes before any new one: two groups may share a kernel and a weight.
  UnbindAll();
  for (Step& step : steps_) {
    for (ValueId in : step.arguments) {
      void* buffer = BufferOf(in);
      FT_CHECK(buffer != nullptr, fmt::format("no value for {}", graph_.RefName(in)));
      step.buffers.push_back(buffer);
    }
    for (ValueId out : step.group.outputs) step.buffers.push_back(BufferOf(out));
    step.kernel->Bind(step.buffers.data());  // packing weights ahead is setup, never timed
  }
}

void PlanExecutor::Run() {
  for (Step& step : steps_) {
    FT_CHECK(!step.buffers.empty() || step.group.inputs.empty(),
             "PlanExecutor::Run before SetInputs");
    step.kernel->Run(step.buffers.data());
  }
}

std::vector<Tensor> PlanExecutor::Outputs() const {
  std::vector<Tensor> outs;
  for (ValueId v : graph_.outputs()) {
    const Tensor& src = values_[v];
    Tensor copy(src.type());
    std::memcpy(copy.data(), src.data(), static_cast<size_t>(src.type().NumBytes()));
    outs.push_back(std::move(copy));
  }
  return outs;
}

PlanProfile PlanExecutor::Measure(const TimingOptions& options, KernelTimes kernel_times) {
  runtime::SetNumThreads(threads_);
  PlanProfile result;
  for (Step& step : steps_) {
    KernelTiming k;
    k.nodes = step.group.nodes;
    k.schedule = step.schedule;
    k.compile = step.kernel->times();
    k.shared = step.shared;
    result.kernels.push_back(std::move(k));
  }
  if (steps_.size() != 1 && kernel_times == KernelTimes::kSeparately) {
    // In plan order, so each kernel reads what the kernels before it wrote: no later kernel has
    // yet reused the blocks of its inputs.
    for (size_t i = 0; i < steps_.size(); ++i) {
      void** buffers = steps_[i].buffers.data();
      const codegen::CompiledKernel* kernel = steps_[i].kernel.get();
      result.kernels[i].timing = TimeCalls([&] { kernel->Run(buffers); }, options);
    }
  }
  if (steps_.size() == 1 || kernel_times == KernelTimes::kSeparately) {
    result.total = TimeCalls([&] { Run(); }, options);
    if (steps_.size() == 1) result.kernels[0].timing = result.total;
    return result;
  }
  // In sequence: the whole's own repeats, with a clock read after each kernel (~20 ns each, next
  // to kernels of microseconds), summed per run of `number` calls; the last `repeat` runs are the
  // repeats, so each kernel's figure is the median over the same repeats as the whole's.
  using Clock = std::chrono::steady_clock;
  std::vector<Clock::duration> spent(steps_.size(), Clock::duration::zero());
  std::vector<std::vector<Clock::duration>> runs;  // per run of `number` calls: spent per kernel
  auto in_sequence = [&] {
    Clock::time_point before = Clock::now();
    for (size_t i = 0; i < steps_.size(); ++i) {
      steps_[i].kernel->Run(steps_[i].buffers.data());
      const Clock::time_point after = Clock::now();
      spent[i] += after - before;
      before = after;
    }
  };
  auto next_run = [&] {
    runs.push_back(spent);
    std::fill(spent.begin(), spent.end(), Clock::duration::zero());
  };
  result.total = TimeCalls(in_sequence, options, next_run);
  runs.push_back(spent);  // the last run; runs[0] is the warm-up's
  const int number = std::max(1, result.total.number);
  const size_t repeats = std::min(runs.size(), static_cast<size_t>(result.total.repeat));
  for (size_t i = 0; i < steps_.size(); ++i) {
    std::vector<double> samples;
    for (size_t r = runs.size() - repeats; r < runs.size(); ++r)
      samples.push_back(std::chrono::duration<double, std::micro>(runs[r][i]).count() / number);
    result.kernels[i].timing = Summarize(std::move(samples), number);
  }
  return result;
}

}  // namespace fusetune
