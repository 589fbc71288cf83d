// Attached<T>: per-communicator state (Comm, InterComm) cached on the user's
// communicator with an attribute keyval.
//
// The object is deleted with the communicator (MPI calls the keyval's delete
// function from MPI_Comm_free); whatever is still attached at MPI_Finalize
// is deleted first thing in MPI_Finalize, through an attribute on
// MPI_COMM_SELF, while MPI is still usable (the objects free windows and
// dups). One keyval per T.
//
// Deleting an object is collective (MPI_Win_free, MPI_Comm_free), so at
// MPI_Finalize every process deletes what is left newest first: each
// process's creation order fits one global order (every creation was
// collective and got through), and so does its reverse; the order of the
// handles' values, used before, need not.
//
// Threads (MPI_THREAD_MULTIPLE): the keyvals and the list of user
// communicators are process-wide, and threads may set up and free shancoll
// state on different communicators at once (MPI allows collectives and
// MPI_Comm_free on different communicators concurrently; MPI calls on_delete
// from the thread that frees). So both are guarded by one mutex, taken only
// on the slow paths (the first call on a communicator, its free, finalize);
// find(), every call's lookup, reads the keyval with one atomic load (a
// plain load on x86) and remembers the last communicator it found per
// thread (thread_local) until any T is deleted (an atomic counter). What is
// attached, the T, is per communicator and unlocked: MPI forbids concurrent
// collectives on one communicator. release_all() is for a single thread.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "shancoll/error.h"

namespace shancoll {

// Counts a deleted T of any Attached<T> (comm.cc; read by states_freed(),
// comm.h), and MPI_Finalize's deletion of whatever is left.
void note_state_freed();

template <class T>
class Attached {
 public:
  // The object attached to `user`, or nullptr (not collective). The last
  // one found is remembered per thread (a loop of calls on one communicator
  // asks MPI once) until any T is deleted: a freed communicator's handle may
  // come back as another communicator.
  static T* find(MPI_Comm user) {
    const int keyval = keyval_.load(std::memory_order_acquire);
    if (user == MPI_COMM_NULL || keyval == MPI_KEYVAL_INVALID) return nullptr;
    thread_local Found last;
    const std::uint64_t deletions = deletions_.load(std::memory_order_acquire);
    if (last.user == user && last.deletions == deletions) return last.object;
    void* value = nullptr;
    int found = 0;
    MPI_Comm_get_attr(user, keyval, &value, &found);
    if (!found) return nullptr;
    last = {user, static_cast<T*>(value), deletions};
    return last.object;
  }

  // Frees every attached T now, as MPI_Finalize would first thing, and
  // forgets the keyvals (a later attach() creates new ones). For runtimes
  // that run MPI_COMM_SELF's delete callbacks only once MPI calls are no
  // longer allowed (SimGrid SMPI 3.32 aborts in MPI_Comm_delete_attr then).
  static void release_all() {
    if (finalize_keyval_ == MPI_KEYVAL_INVALID) return;
    MPI_Comm_delete_attr(MPI_COMM_SELF, finalize_keyval_);  // calls on_finalize
    MPI_Comm_free_keyval(&finalize_keyval_);
  }

  // Takes ownership of `object` and attaches it to `user` (outside the lock:
  // MPI_Comm_set_attr may call on_delete, which takes it).
  static T& attach(MPI_Comm user, T* object) {
    MPI_Comm_set_attr(user, create_keyvals(), object);
    std::lock_guard<std::mutex> lock(mutex_);
    users_.push_back(user);
    return *object;
  }

 private:
  struct Found {
    MPI_Comm user = MPI_COMM_NULL;
    T* object = nullptr;
    std::uint64_t deletions = 0;
  };

  static void forget(MPI_Comm user) {
    deletions_.fetch_add(1, std::memory_order_acq_rel);  // before the handle can be reused
    note_state_freed();
    std::lock_guard<std::mutex> lock(mutex_);
    users_.erase(std::remove(users_.begin(), users_.end(), user), users_.end());
  }

  // The newest user communicator still holding a T, or MPI_COMM_NULL.
  static MPI_Comm newest() {
    std::lock_guard<std::mutex> lock(mutex_);
    return users_.empty() ? MPI_COMM_NULL : users_.back();
  }

  static int on_delete(MPI_Comm user, int, void* value, void*) {
    forget(user);
    delete static_cast<T*>(value);
    return MPI_SUCCESS;
  }

  // The lock is not held across MPI_Comm_delete_attr: on_delete takes it.
  static int on_finalize(MPI_Comm, int, void*, void*) {
    const int keyval = keyval_.load(std::memory_order_relaxed);
    for (MPI_Comm user; (user = newest()) != MPI_COMM_NULL;) {  // the newest first (header)
      MPI_Comm_delete_attr(user, keyval);                       // calls on_delete
      forget(user);
    }
    note_state_freed();  // even with nothing attached: MPI is going away
    int freed = keyval;
    MPI_Comm_free_keyval(&freed);
    keyval_.store(MPI_KEYVAL_INVALID, std::memory_order_release);
    return MPI_SUCCESS;
  }

  // The keyval of T, created with the finalize keyval on first use.
  static int create_keyvals() {
    std::lock_guard<std::mutex> lock(mutex_);
    int keyval = keyval_.load(std::memory_order_relaxed);
    if (keyval != MPI_KEYVAL_INVALID) return keyval;
    check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_delete, &keyval, nullptr),
              "MPI_Comm_create_keyval");
    check_mpi(
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_finalize, &finalize_keyval_, nullptr),
        "MPI_Comm_create_keyval");
    MPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval_, nullptr);
    keyval_.store(keyval, std::memory_order_release);  // find() may use it from now on
    return keyval;
  }

  static inline std::mutex mutex_;  // guards the three below, except find()'s read of keyval_
  static inline std::atomic<int> keyval_{MPI_KEYVAL_INVALID};
  static inline int finalize_keyval_ = MPI_KEYVAL_INVALID;
  static inline std::vector<MPI_Comm> users_;  // user communicators holding a T, oldest first
  static inline std::atomic<std::uint64_t> deletions_{0};  // T objects deleted so far
};

}  // namespace shancoll
