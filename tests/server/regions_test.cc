// Region cuts (server/regions.h): a component larger than --max-region is cut where the cuts
// separate the fewest bytes from readers a candidate fuses them with, so a stack of identical
// blocks is cut at its block boundaries, alike in every block, and no matmul loses its epilogue.
#include "server/regions.h"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ir/text/relay_parser.h"
#include "server/candidates.h"

namespace fusetune {
namespace {

// `blocks` copies of a block: `params` and `body` are fmt formats of the block's number ({0})
// and the value it reads ({1}: %x, then the last block's %n); each block ends in %n{0}.
std::string Stack(int blocks, const char* params, const char* body) {
  std::string all_params, all_body;
  for (int b = 0; b < blocks; ++b) {
    const std::string in = b == 0 ? "%x" : fmt::format("%n{}", b - 1);
    all_params += fmt::format(fmt::runtime(params), b, in);
    all_body += fmt::format(fmt::runtime(body), b, in);
  }
  return fmt::format("fn (%x: Tensor[(16, 64), float32]{}) {{\n{}  %n{}\n}}", all_params, all_body,
                     blocks - 1);
}

// Each region's node names, space-separated.
std::vector<std::string> RegionNames(const Graph& g, const std::vector<Region>& regions) {
  std::vector<std::string> names;
  for (const Region& r : regions) {
    std::string line;
    for (ValueId v : r.nodes) line += (line.empty() ? "" : " ") + g.value(v).name;
    names.push_back(line);
  }
  return names;
}

// MLP blocks: dense to 256 wide, bias, tanh, dense back to 64, a scale, which the next block's
// dense reads as its prologue (the candidates join the blocks into one component). Five op nodes
// each; the 256-wide values stay inside a block.
const char* kMlpParams =
    ", %w1_{0}: Tensor[(256, 64), float32], %b1_{0}: Tensor[(256,), float32], "
    "%w2_{0}: Tensor[(64, 256), float32]";
const char* kMlpBody =
    "  %d1_{0} = nn.dense({1}, %w1_{0}, units=256);\n"
    "  %a_{0} = add(%d1_{0}, %b1_{0});\n"
    "  %t_{0} = tanh(%a_{0});\n"
    "  %d2_{0} = nn.dense(%t_{0}, %w2_{0}, units=64);\n"
    "  %n{0} = multiply(%d2_{0}, 0.5f);\n";

TEST(Regions, AStackIsCutAtItsBlockBoundaries) {
  const Graph g = ParseRelay(Stack(6, kMlpParams, kMlpBody), "stack.relay");
  const std::vector<Region> regions =
      BuildRegions(g, EnumerateCandidateGroups(RequestPolicy(g, {})), 8);
  // 30 op nodes, at most 8 a region: no region holds two blocks (10). A cut between blocks
  // separates a 64-wide value from the next dense's prologue; one inside a block, a 256-wide value
  // from its bias or tanh. Cuts every 8 nodes (as before) fell inside blocks 1, 3 and 4.
  std::vector<std::string> want;
  for (int b = 0; b < 6; ++b) want.push_back(fmt::format("d1_{0} a_{0} t_{0} d2_{0} n{0}", b));
  EXPECT_EQ(RegionNames(g, regions), want);
}

// Blocks of five ops whose values are all 16 x 64: a cut inside a block costs little more than
// one between blocks, so the fewest bytes are the fewest cuts, wherever they fall. LLaMA's decoder
// layers are like this: four places of equal cost in each.
const char* kChainParams = ", %w_{0}: Tensor[(64, 64), float32], %b_{0}: Tensor[(64,), float32]";
const char* kChainBody =
    "  %d_{0} = nn.dense({1}, %w_{0}, units=64);\n"
    "  %a_{0} = add(%d_{0}, %b_{0});\n"
    "  %t_{0} = tanh(%a_{0});\n"
    "  %s_{0} = sigmoid(%t_{0});\n"
    "  %n{0} = multiply(%s_{0}, %t_{0});\n";

TEST(Regions, AStackWhoseCutsAllCostTheSameIsStillCutAlikeInEveryBlock) {
  const Graph g = ParseRelay(Stack(6, kChainParams, kChainBody), "chain.relay");
  const std::vector<Region> regions =
      BuildRegions(g, EnumerateCandidateGroups(RequestPolicy(g, {})), 8);
  // The fewest cuts (every 8 nodes) cost the fewest bytes, each region another slice of the
  // blocks (as before the period); cut at the period, every region is one block.
  std::vector<std::string> want;
  for (int b = 0; b < 6; ++b) want.push_back(fmt::format("d_{0} a_{0} t_{0} s_{0} n{0}", b));
  EXPECT_EQ(RegionNames(g, regions), want);
}

}  // namespace
}  // namespace fusetune
