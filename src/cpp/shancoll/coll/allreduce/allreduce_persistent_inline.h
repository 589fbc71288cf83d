// The persistent small-message allreduce on one node (shan as a persistent
// request): data beside its flag in the request's own node-segment lines.
// Cost model and why two lines per rank suffice: the .cc's header.
#pragma once

#include <cstdint>

#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/request/request.h"
#include "shancoll/shm/inline_lines.h"
#include "shancoll/topology.h"

namespace shancoll {

// One node of more than one rank, a vector of at most 56 bytes.
bool persistent_inline_fits(const Topology& topo, const AllreduceArgs& args);

class InlineAllreduceEngine final : public Engine {
 public:
  // Collective over the node (the segment's handshake): at _init.
  InlineAllreduceEngine(const Topology& topo, const AllreduceArgs& args, const double& timeout);

  void start() override;
  bool test() override;
  void count(Stats& stats) const override;

 private:
  void combine();

  const Topology& topo_;
  Reducer reducer_;
  AllreduceArgs args_;
  std::size_t bytes_;
  InlineLines lines_;
  std::uint64_t run_ = 0;
  int arrived_ = 0;  // lines of this run seen, the own one included
};

}  // namespace shancoll
