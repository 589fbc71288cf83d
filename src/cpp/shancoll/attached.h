// Attached<T>: per-communicator state (Comm, InterComm) cached on the user's
// communicator with an attribute keyval.
//
// The object is deleted with the communicator (MPI calls the keyval's delete
// function from MPI_Comm_free); whatever is still attached at MPI_Finalize
// is deleted first thing in MPI_Finalize, through an attribute on
// MPI_COMM_SELF, while MPI is still usable (the objects free windows and
// dups). One keyval per T.
//
// Deleting an object is collective (MPI_Win_free, MPI_Comm_free), and at
// MPI_Finalize the processes need not agree on what is left to delete: a
// communicator broken on one rank only (a timeout) keeps its MPI objects
// there and frees them on the others. So inside MPI_Finalize the objects are
// deleted without MPI calls (finalizing() is true: MPI_Finalize reclaims
// what they hold); on two real nodes of two ranks, freeing them there hung
// MPI_Finalize. release_all(), called while MPI is fully usable, frees them,
// newest first: each process's creation order fits one global order (every
// creation was collective and got through), and so does its reverse.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <vector>

#include "shancoll/error.h"

namespace shancoll {

template <class T>
class Attached {
 public:
  // The object attached to `user`, or nullptr (not collective).
  static T* find(MPI_Comm user) {
    if (user == MPI_COMM_NULL || keyval_ == MPI_KEYVAL_INVALID) return nullptr;
    void* value = nullptr;
    int found = 0;
    MPI_Comm_get_attr(user, keyval_, &value, &found);
    return found ? static_cast<T*>(value) : nullptr;
  }

  // Frees every attached T now, as MPI_Finalize would first thing, and
  // forgets the keyvals (a later attach() creates new ones). For runtimes
  // that run MPI_COMM_SELF's delete callbacks only once MPI calls are no
  // longer allowed (SimGrid SMPI 3.32 aborts in MPI_Comm_delete_attr then).
  static void release_all() {
    if (finalize_keyval_ == MPI_KEYVAL_INVALID) return;
    releasing_ = true;
    MPI_Comm_delete_attr(MPI_COMM_SELF, finalize_keyval_);  // calls on_finalize
    releasing_ = false;
    MPI_Comm_free_keyval(&finalize_keyval_);
  }

  // True while MPI_Finalize deletes the objects: a T's destructor then makes
  // no MPI call (see the header).
  static bool finalizing() { return finalizing_; }

  // Takes ownership of `object` and attaches it to `user`.
  static T& attach(MPI_Comm user, T* object) {
    create_keyvals();
    MPI_Comm_set_attr(user, keyval_, object);
    users_.push_back(user);
    return *object;
  }

 private:
  static void forget(MPI_Comm user) {
    users_.erase(std::remove(users_.begin(), users_.end(), user), users_.end());
  }

  static int on_delete(MPI_Comm user, int, void* value, void*) {
    forget(user);
    delete static_cast<T*>(value);
    return MPI_SUCCESS;
  }

  static int on_finalize(MPI_Comm, int, void*, void*) {
    finalizing_ = !releasing_;
    while (!users_.empty()) {
      MPI_Comm user = users_.back();        // the newest first (see the header)
      MPI_Comm_delete_attr(user, keyval_);  // calls on_delete
      forget(user);
    }
    MPI_Comm_free_keyval(&keyval_);
    finalizing_ = false;
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
  static inline bool releasing_ = false;       // in release_all
  static inline bool finalizing_ = false;      // in MPI_Finalize's deletion
  static inline std::vector<MPI_Comm> users_;  // user communicators holding a T, oldest first
};

}  // namespace shancoll
