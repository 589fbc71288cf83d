// The C API's options: one documented text form, "key=value,key=value"
// (shancoll.h lists the keys), parsed into the core's Options. Text rather
// than a struct so that C, Fortran (a character string) and environment
// variables (SHANCOLL_<COLL>_OPTIONS) all pass options the same way, and a
// new key never changes the ABI.
#pragma once

#include "shancoll/coll/release_gather/release_gather.h"
#include "shancoll/options.h"

namespace shancoll::capi {

// Which keys a collective accepts.
enum class Family { allgather, allreduce, rooted };

struct CallOptions {
  Options options;  // timeout, ranks_per_node, block_size, transport
  ReleaseGatherOptions release_gather;
  int ports = 0;           // allreduce: n of the dissemination family (0 chooses)
  bool consistent = true;  // allreduce: bitwise-identical floating-point results

  // The core's Options, pointing at release_gather (valid while *this lives).
  Options resolved() const;
};

// Parses `text`; NULL or "" reads the environment variable `env_name`
// (unset: the defaults). Throws ArgumentError naming the key ("options: ...").
CallOptions parse_options(const char* text, const char* env_name, Family family);

}  // namespace shancoll::capi
