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
#pragma once

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "shancoll/error.h"

namespace shancoll {

template <class T>
class Attached {
 public:
  // The object attached to `user`, or nullptr (not collective). The last
  // one found is remembered per thread (a loop of calls on one communicator
  // asks MPI once) until any T is deleted: a freed communicator's handle may
  // come back as another communicator.
  static T* find(MPI_Comm user) {
    if (user == MPI_COMM_NULL || keyval_ == MPI_KEYVAL_INVALID) return nullptr;
    thread_local Found last;
    const std::uint64_t deletions = deletions_.load(std::memory_order_acquire);
    if (last.user == user && last.deletions == deletions) return last.object;
    void* value = nullptr;
    int found = 0;
    MPI_Comm_get_attr(user, keyval_, &value, &found);
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

  // Takes ownership of `object` and attaches it to `user`.
  static T& attach(MPI_Comm user, T* object) {
    create_keyvals();
    MPI_Comm_set_attr(user, keyval_, object);
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
    users_.erase(std::remove(users_.begin(), users_.end(), user), users_.end());
  }

  static int on_delete(MPI_Comm user, int, void* value, void*) {
    forget(user);
    delete static_cast<T*>(value);
    return MPI_SUCCESS;
  }

  static int on_finalize(MPI_Comm, int, void*, void*) {
    while (!users_.empty()) {
      MPI_Comm user = users_.back();        // the newest first (see the header)
      MPI_Comm_delete_attr(user, keyval_);  // calls on_delete
      forget(user);
    }
    MPI_Comm_free_keyval(&keyval_);
    return MPI_SUCCESS;
  }

  static void create_keyvals() {
    if (keyval_ != MPI_KEYVAL_INVALID) return;
    check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_delete, &keyval_, nullptr),
              "MPI_Comm_create_keyval");
    check_mpi(
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_finalize, &finalize_keyval_, nullptr),
        "MPI_Comm_create_keyval");
    MPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval_, nullptr);
  }

  static inline int keyval_ = MPI_KEYVAL_INVALID;
  static inline int finalize_keyval_ = MPI_KEYVAL_INVALID;
  static inline std::vector<MPI_Comm> users_;
  static inline std::atomic<std::uint64_t> deletions_{
      0};  // T objects deleted so far  // user communicators holding a T, oldest first
};

}  // namespace shancoll
