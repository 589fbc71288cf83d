#include "shancoll/intercomm.h"

#include <algorithm>

#include "shancoll/attached.h"
#include "shancoll/environment.h"
#include "shancoll/error.h"
#include "shancoll/handshake.h"
#include "shancoll/on_error.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {
namespace {

// The local group as an intra-communicator: merge the groups, then create
// the local group's communicator from the merged one (the user's
// communicators need not be subsets of MPI_COMM_WORLD, e.g. after a spawn).
// Also tells whether the local group holds rank 0 of the merged communicator.
MPI_Comm local_group_comm(MPI_Comm inter, bool* holds_merged_rank0) {
  MPI_Comm merged = MPI_COMM_NULL;
  check_mpi(MPI_Intercomm_merge(inter, 0, &merged), "MPI_Intercomm_merge");
  MPI_Group local_group, merged_group;
  MPI_Comm_group(inter, &local_group);  // of an inter-communicator: the local group
  MPI_Comm_group(merged, &merged_group);
  const int zero = 0;
  int in_local = MPI_UNDEFINED;
  MPI_Group_translate_ranks(merged_group, 1, &zero, local_group, &in_local);
  *holds_merged_rank0 = in_local != MPI_UNDEFINED;
  MPI_Comm local = MPI_COMM_NULL;
  const int rc = MPI_Comm_create_group(merged, local_group, 0, &local);
  MPI_Group_free(&local_group);
  MPI_Group_free(&merged_group);
  MPI_Comm_free(&merged);
  check_mpi(rc, "MPI_Comm_create_group");
  return local;
}

}  // namespace

InterComm& InterComm::of(MPI_Comm user, double timeout) {
  if (user == MPI_COMM_NULL) throw ArgumentError("comm: the communicator is null (freed?)");
  if (InterComm* known = find(user)) {
    known->local_->set_call_timeout(timeout);
    return *known;
  }
  check_environment();  // at the first call on a communicator, before any communication
  int inter = 0;
  check_mpi(MPI_Comm_test_inter(user, &inter), "MPI_Comm_test_inter");
  if (!inter) throw ArgumentError("comm: expected an inter-communicator");
  InterComm& ic = Attached<InterComm>::attach(user, new InterComm(user, timeout));
  ic.run(CallSite{}, [&] {  // a failure breaks the local Comm, and with it ic (see Comm::of)
    handshake(user, "the inter-communicator (its dup and local group)", timeout);
    ic.set_up(user);
  });
  return ic;
}

InterComm* InterComm::find(MPI_Comm user) { return Attached<InterComm>::find(user); }

InterComm::InterComm(MPI_Comm user, double timeout)
    : local_(std::make_unique<Comm>(user, timeout)) {  // of an inter-communicator: the local group
  MPI_Comm_remote_size(user, &remote_size_);
}

void InterComm::set_up(MPI_Comm user) {
  check_mpi(MPI_Comm_dup(user, &inter_), "MPI_Comm_dup");
  // Errors (a truncated receive after diverging counts) must come back as
  // exceptions, never abort the job.
  MPI_Comm_set_errhandler(inter_, MPI_ERRORS_RETURN);
  bool first = false;
  MPI_Comm local = local_group_comm(inter_, &first);
  MPI_Comm_set_errhandler(local, MPI_ERRORS_RETURN);
  local_->set_up(local);  // its own dup
  MPI_Comm_free(&local);
  const int n = local_->size();
  in_a_ = n > remote_size_ || (n == remote_size_ && first);
}

InterComm::~InterComm() {
  if (local_->broken()) {
    // As for Comm: operations of the failed call may still be in flight on
    // the dup; keep it (leak it) until MPI_Finalize. The local Comm decides
    // for its own.
    local_.reset();
    return;
  }
  local_.reset();
  free_drained(inter_);
}

std::byte* InterComm::scratch(std::size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(std::max(bytes, 2 * scratch_.size()));
  return scratch_.data();
}

}  // namespace shancoll
