#include "shancoll/coll/request/request.h"

#include <string>
#include <utility>

#include "shancoll/error.h"

namespace shancoll {
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

Request::Request(Comm& comm, const char* collective, const char* algorithm,
                 std::unique_ptr<Engine> engine, double timeout, bool persistent)
    : comm_(comm),
      collective_(collective),
      algorithm_(algorithm),
      engine_(std::move(engine)),
      timeout_(timeout),
      persistent_(persistent) {
  std::size_t rounds = 0;
  counts_rounds_ = engine_->rounds_done(rounds);
  if (!persistent_) begin();
}

Request::~Request() {
  if (registered_) unregister_active(this);  // waits while another thread advances it
}

void Request::begin() {
  engine_->start();  // first: a start that throws leaves the request inactive
  done_ = false;
  recorded_ = false;
  idle_tests_ = 0;
  rounds_.store(0, std::memory_order_relaxed);
  if (step()) {
    finish();
  } else {
    register_active(this);
    registered_ = true;
  }
}

void Request::start() {
  if (!persistent_)
    throw ArgumentError(std::string("request: this nonblocking ") + collective_ +
                        " started when it was made; only a persistent request is started");
  if (!done_)
    throw ArgumentError(std::string("request: the persistent ") + collective_ +
                        " is still active (started and not completed); wait for it first");
  if (registered_) {  // dropped by the registry once complete; unregistered here
    unregister_active(this);
    registered_ = false;
  }
  comm_.run({collective_, algorithm_}, [&] { begin(); });
}

bool Request::step() {
  if (done_) return true;
  const bool complete = engine_->test();
  std::size_t rounds = 0;
  if (engine_->rounds_done(rounds)) rounds_.store(rounds, std::memory_order_relaxed);
  done_ = complete;
  return complete;
}

bool Request::advance() {
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
bool Request::advance_elsewhere() noexcept {
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
// get the core. Without it a test() loop took 6-10 ms per 255-double
// iallreduce at 4 ranks on 2 cores under MPICH, whose MPI_Testall never
// yields, against 55 us for wait(). Like any wait past its spin, it then
// also drives the process's progress (progress.h): a test() loop on one
// request must not starve another that a peer is waiting on.
bool Request::test() {
  ++test_calls_;
  const bool done = comm_.run({collective_, algorithm_}, [&] { return advance(); });
  if (!done && ++idle_tests_ > spin_polls()) {
    pause_hook()(idle_tests_);
    drive_progress();
  }
  return done;
}

void Request::wait(double timeout) {
  // A timeout leaves the request intact (resumable): not a broken
  // communicator; but SHANCOLL_ON_ERROR=abort ends the job as for any timeout.
  comm_.run({collective_, algorithm_, true}, [&] {
    wait_until([&] { return advance(); },
               [&] { return std::string(collective_) + " wait: messages of a round"; }, timeout);
  });
}

void Request::finish() {
  recorded_ = true;
  stats_ = Stats{};
  engine_->count(stats_);
  comm_.last_stats = stats_;
  comm_.last_algorithm = algorithm_;
}

}  // namespace shancoll
