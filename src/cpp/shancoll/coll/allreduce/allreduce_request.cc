#include "shancoll/coll/allreduce/allreduce_request.h"

#include <climits>
#include <string>
#include <utility>

#include "shancoll/error.h"
#include "shancoll/progress.h"

namespace shancoll {

AllreduceRequest::AllreduceRequest(Comm& comm, const AllreduceArgs& args,
                                   const AllreduceAlgorithm& algorithm, const Options& options)
    : comm_(comm),
      reducer_(*args.reducer),
      args_(args),
      algorithm_(algorithm),
      topo_(comm.nodes(options.ranks_per_node).topo),
      timeout_(options.wait_timeout()) {
  args_.reducer = &reducer_;
  copy_input(args_);
  stats_.node_count = topo_.node_count;
  const std::uint64_t seq = comm.next_epoch();
  if (args_.count == 0) {
    done_ = true;
  } else if (algorithm.schedule) {
    const int ports = args_.ports > 0 ? args_.ports : default_ports(algorithm.name, comm.size());
    auto schedule = cached_schedule(algorithm.schedule, comm.size(), comm.rank(), ports);
    scratch_.reset(new std::byte[ScheduleExecutor::scratch_bytes(*schedule, args_)]);
    executor_ = std::make_unique<ScheduleExecutor>(schedule, args_, comm.mpi(),
                                                   allreduce_tag_base(seq), scratch_.get());
    executor_->start();         // the first round travels while the caller returns to Python
    done_ = executor_->done();  // no rounds (one rank): complete already
  } else if (std::string(algorithm.name) == "mpi") {
#if MPI_VERSION >= 4
    check_mpi(PMPI_Iallreduce_c(MPI_IN_PLACE, args_.recv, args_.count, dtype_mpi(reducer_.type()),
                                reducer_.op(), comm.mpi(), &mpi_request_),
              "MPI_Iallreduce_c");
#else
    if (args_.count > INT_MAX) throw ArgumentError("recvbuf: over 2^31-1 elements need MPI-4");
    check_mpi(PMPI_Iallreduce(MPI_IN_PLACE, args_.recv, static_cast<int>(args_.count),
                              dtype_mpi(reducer_.type()), reducer_.op(), comm.mpi(), &mpi_request_),
              "MPI_Iallreduce");
#endif
  } else {
    throw ArgumentError(std::string("algorithm: '") + algorithm.name +
                        "' has no split-phase version");
  }
  if (done_) {
    finish();
  } else {
    register_active(this);
    registered_ = true;
  }
}

AllreduceRequest::~AllreduceRequest() {
  if (registered_) unregister_active(this);  // waits while another thread advances it
  // An abandoned MPI request cannot be cancelled (collectives): freed, MPI
  // completes it. An abandoned executor cancels its own receives.
  if (mpi_request_ != MPI_REQUEST_NULL) MPI_Request_free(&mpi_request_);
}

namespace {

// Holds an atomic flag for one step, or reports that another thread does.
class Hold {
 public:
  explicit Hold(std::atomic<bool>& busy)
      : busy_(busy), held_(!busy.exchange(true, std::memory_order_acquire)) {}
  ~Hold() {
    if (held_) busy_.store(false, std::memory_order_release);
  }
  explicit operator bool() const { return held_; }

 private:
  std::atomic<bool>& busy_;
  bool held_;
};

}  // namespace

bool AllreduceRequest::step() {
  if (done_) return true;
  if (executor_) {
    done_ = executor_->test();
    rounds_.store(executor_->rounds_done(), std::memory_order_relaxed);
  } else {
    int flag = 0;
    check_mpi(MPI_Test(&mpi_request_, &flag, MPI_STATUS_IGNORE), "MPI_Test (iallreduce)");
    done_ = flag != 0;
  }
  return done_;
}

bool AllreduceRequest::advance() {
  bool done = false;
  if (Hold hold(busy_); hold) {
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    done = step();
  }
  if (done && !recorded_) finish();  // on the owner's thread: the communicator's stats
  return done;
}

// Another wait of the process advances this request: an error is kept for
// the owner (its test or wait raises it), and the request is then dropped
// from the registry, as it is once complete.
bool AllreduceRequest::advance_elsewhere() noexcept {
  Hold hold(busy_);
  if (!hold) return false;
  if (error_) return true;
  try {
    return step();
  } catch (...) {
    error_ = std::current_exception();
    return true;
  }
}

// A caller polling test() in a loop waits where the library cannot see it.
// Past the spins of a wait, an unsuccessful test() runs the wait's pause
// (a sched_yield): with more ranks than cores, the ranks being waited for
// get the core. Without it a test() loop took 6-10 ms per 255-double call
// at 4 ranks on 2 cores under MPICH, whose MPI_Testall never yields,
// against 55 us for wait(). Like any wait past its spin, it then also
// drives the process's progress (progress.h): a test() loop on one request
// must not starve another that a peer is waiting on.
bool AllreduceRequest::test() {
  ++test_calls_;
  const bool done = comm_.run({"iallreduce", algorithm_.name}, [&] { return advance(); });
  if (!done && ++idle_tests_ > spin_polls()) {
    pause_hook()(idle_tests_);
    drive_progress();
  }
  return done;
}

void AllreduceRequest::wait(double timeout) {
  // A timeout leaves the request intact (resumable): not a broken
  // communicator; but SHANCOLL_ON_ERROR=abort ends the job as for any timeout.
  comm_.run({"iallreduce", algorithm_.name, true}, [&] {
    wait_until([&] { return advance(); }, "iallreduce wait: messages of a round", timeout);
  });
}

void AllreduceRequest::finish() {
  recorded_ = true;
  if (executor_) executor_->count(topo_, stats_);
  if (!executor_ && args_.count > 0) stats_.rounds = 1;
  comm_.last_stats = stats_;
  comm_.last_algorithm = algorithm_.name;
}

}  // namespace shancoll
