// InterComm: shancoll's state for one user inter-communicator.
//
// It owns a dup of the inter-communicator (point-to-point between the groups
// in a private tag space) and the local group as a shancoll Comm (an
// intra-communicator, so that the intragroup phases run shancoll's own
// allgatherv algorithms on it). Attached to the user's inter-communicator
// with an attribute keyval, freed with it or first thing in MPI_Finalize,
// like Comm.
//
// The two groups are named as in the paper: A is the larger group (p
// processes), B the smaller (q <= p); with equal sizes A is the group that
// holds rank 0 of the merged communicator, so both groups agree.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "shancoll/comm.h"
#include "shancoll/options.h"

namespace shancoll {

class InterComm {
 public:
  // The InterComm of a user inter-communicator, created on first use:
  // collective over both groups then, behind a handshake with deadline
  // `timeout`, as Comm::of. `timeout` becomes the local Comm's call timeout.
  static InterComm& of(MPI_Comm user, double timeout);
  // The InterComm of a user communicator if it has one (not collective).
  static InterComm* find(MPI_Comm user);

  // Not set up yet: the local group's rank and size, the remote size.
  InterComm(MPI_Comm user, double timeout);
  ~InterComm();
  InterComm(const InterComm&) = delete;
  InterComm& operator=(const InterComm&) = delete;

  MPI_Comm mpi() const { return inter_; }  // ranks are ranks of the remote group
  Comm& local() { return *local_; }        // the local group
  int rank() const { return local_->rank(); }
  int size() const { return local_->size(); }
  int remote_size() const { return remote_size_; }
  bool in_a() const { return in_a_; }  // this process is in group A (the larger)
  int p() const { return in_a_ ? size() : remote_size_; }
  int q() const { return in_a_ ? remote_size_ : size(); }

  // Runs one collective; a failed call breaks the local Comm and with it
  // this InterComm (see Comm::run).
  template <class F>
  auto run(const CallSite& site, F&& collective) {
    return local_->run(site, std::forward<F>(collective));
  }

  // Scratch memory of the intergroup algorithms, grown, never per call; apart
  // from the local Comm's, which the intragroup algorithms use.
  std::byte* scratch(std::size_t bytes);

  Stats last_stats;
  const char* last_algorithm = "";

 private:
  // Dups `user` and makes the local group's Comm (collective over both groups).
  void set_up(MPI_Comm user);

  MPI_Comm inter_ = MPI_COMM_NULL;
  std::unique_ptr<Comm> local_;
  int remote_size_ = 0;
  bool in_a_ = true;
  std::vector<std::byte> scratch_;
};

}  // namespace shancoll
