// One request for every nonblocking and persistent collective.
//
// A Request runs an Engine (what moves the data: the MPI library's own
// nonblocking or persistent collective, a shancoll schedule over
// point-to-point messages, ...) and does everything the engines share:
// start/test/wait with a deadline, MPI's progress rule (while in flight the
// request is registered as Active, progress.h, so every wait of the process
// advances it; no thread), the error an advance on another thread kept for
// the owner, and the statistics of a completed run.
//
// Nonblocking (i<coll>): the request is started at creation and is done once
// complete. Persistent (<coll>_init): everything the engine can decide once
// is decided at creation (algorithm, schedule, scratch, the MPI library's
// persistent request); start() replays it; starting a request that is still
// in flight is an error (MPI: erroneous), refused with ArgumentError.
// The engine owns copies of everything it reads besides the user's buffers
// (counts, displacements, the reducer), so the caller's call structure may
// go away once the request exists.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>

#include "shancoll/comm.h"
#include "shancoll/progress.h"

namespace shancoll {

// What a request runs. start() begins one run (a persistent request's
// engine is started again after each completion); test() advances it
// without blocking and returns true once the run is complete.
class Engine {
 public:
  virtual ~Engine() = default;
  virtual void start() = 0;
  virtual bool test() = 0;
  // Rounds completed in the current run, for a deadline that counts
  // progress (the PMPI library's); false when the engine cannot see them
  // (the MPI library's own request).
  virtual bool rounds_done(std::size_t& rounds) const {
    (void)rounds;
    return false;
  }
  // The statistics of a completed run.
  virtual void count(Stats& stats) const { stats.rounds = 1; }
};

class Request final : public Active {
 public:
  // `collective` and `algorithm` are static strings (registry names).
  Request(Comm& comm, const char* collective, const char* algorithm, std::unique_ptr<Engine> engine,
          double timeout, bool persistent);
  ~Request() override;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  // Persistent: begins a run; ArgumentError if the previous one is still in flight.
  void start();
  bool test();                // advances without blocking; true when done (see .cc: yields)
  void wait(double timeout);  // TimeoutError after `timeout` s; may be called again
  bool done() const { return done_; }
  bool persistent() const { return persistent_; }
  std::int64_t test_calls() const { return test_calls_; }
  const Stats& stats() const { return stats_; }
  const char* collective() const { return collective_; }
  const char* algorithm() const { return algorithm_; }
  double timeout() const { return timeout_; }  // the call's: what its waits default to
  // Rounds completed in the current run (Engine::rounds_done); any thread.
  bool rounds_done(std::size_t& rounds) const {
    rounds = rounds_.load(std::memory_order_relaxed);
    return counts_rounds_;
  }

  bool advance_elsewhere() noexcept override;

 private:
  void begin();    // starts the engine and registers (or finishes at once)
  bool advance();  // the owner's step: rethrows an error kept by advance_elsewhere
  bool step();     // one step; the caller holds busy_
  void finish();

  Comm& comm_;
  const char* collective_;
  const char* algorithm_;
  std::unique_ptr<Engine> engine_;
  const double timeout_;
  const bool persistent_;
  bool counts_rounds_ = false;
  Stats stats_;
  std::int64_t test_calls_ = 0;
  std::uint64_t idle_tests_ = 0;  // unsuccessful test() calls in this run
  std::atomic<bool> done_{true};
  std::atomic<std::size_t> rounds_{0};  // the engine's, published by step()
  bool registered_ = false;
  bool recorded_ = true;           // stats given to the communicator (the owner's thread)
  std::atomic<bool> busy_{false};  // a thread is in step(); the other one skips
  std::exception_ptr error_;       // from advance_elsewhere, for the owner (under busy_)
};

// Tags of the engines' point-to-point messages on comm.mpi() (a private
// dup): one tag per run, 0x1000 .. 0x4fff, so that up to 0x4000 runs may be
// in flight on one communicator (MPI's non-overtaking rule orders a run's
// messages between two ranks, round after round).
constexpr int kRequestTagBase = 0x1000;
constexpr int kRequestTagSlots = 0x4000;
inline int request_tag(std::uint64_t seq) {
  return kRequestTagBase + static_cast<int>(seq % kRequestTagSlots);
}

}  // namespace shancoll
