// Attached<T>: per-communicator state (Comm, InterComm) cached on the user's
// communicator with an attribute keyval.
//
// The object is deleted with the communicator (MPI calls the keyval's delete
// function from MPI_Comm_free); whatever is still attached at MPI_Finalize
// is deleted first thing in MPI_Finalize, through an attribute on
// MPI_COMM_SELF. There the objects make no collective calls (window and
// communicator frees; in_mpi_finalize()): a rank whose call failed keeps its
// windows (Comm::~Comm), so a healthy rank freeing its own would wait for it
// forever, and MPI_Finalize with them. MPI_Finalize and the process's exit
// release what is left. One keyval per T.
#pragma once

#include <mpi.h>

#include <set>

#include "shancoll/error.h"

namespace shancoll {

namespace detail {
inline bool g_in_mpi_finalize = false;
}

// True once MPI_Finalize has begun deleting the attached objects (not during
// release_all()): their destructors then skip every collective free.
inline bool in_mpi_finalize() { return detail::g_in_mpi_finalize; }

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

  // Takes ownership of `object` and attaches it to `user`.
  static T& attach(MPI_Comm user, T* object) {
    create_keyvals();
    MPI_Comm_set_attr(user, keyval_, object);
    users_.insert(user);
    return *object;
  }

 private:
  static int on_delete(MPI_Comm user, int, void* value, void*) {
    users_.erase(user);
    delete static_cast<T*>(value);
    return MPI_SUCCESS;
  }

  static int on_finalize(MPI_Comm, int, void*, void*) {
    if (!releasing_) detail::g_in_mpi_finalize = true;  // called by MPI_Finalize
    while (!users_.empty()) {
      MPI_Comm user = *users_.begin();
      MPI_Comm_delete_attr(user, keyval_);  // calls on_delete
      users_.erase(user);
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
  static inline std::set<MPI_Comm> users_;  // user communicators holding a T
  static inline bool releasing_ = false;    // inside release_all()
};

}  // namespace shancoll
