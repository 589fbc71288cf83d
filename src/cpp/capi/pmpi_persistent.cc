// The persistent collectives (MPI_<Coll>_init) of the PMPI library, and the
// calls that start, complete, cancel and free requests, which must know the
// requests shancoll runs.
//
// Routed only where shancoll has an engine that (a) beats the MPI library's
// persistent collective on this machine (the rule table's <coll>_init rows,
// measured per CPU and library: rules.h; without a row, on a machine no
// table was measured on, the inline engines alone) and (b) needs no
// progress from its owner after the start: today the barrier, allreduce,
// bcast, reduce, allgather and allgatherv on one node of several ranks: at
// most 56 bytes (per rank) the inline engines
// (coll/allreduce/allreduce_persistent_inline.h and coll/persistent_inline.h:
// a start writes the rank's line, a test reads the peers'), past it the
// deposit engines (coll/persistent_deposit.h: a start copies the rank's
// input into the request's own segment, a test
// takes the peers' deposits); and there, by their deposit engines, alltoall
// and alltoallv (blocks of at most 4 KiB), gather and gatherv (16 KiB),
// scatter and scatterv (2 KiB),
// reduce_scatter_block and reduce_scatter (8 KiB), scan and exscan (16 KiB);
// past those bounds, and for bcast from 128 KiB, where the ranks may copy
// straight between their buffers, the single-copy engines
// (coll/persistent_single_copy.h: each block claimed by whichever of its
// two ranks is waiting, so that neither needs the other's test). Why (b):
// MPI's progress rule lets a peer wait in this request while its owner sits
// in a blocking MPI call that shancoll does not see (an MPI_Recv, the
// library's own collective); an engine whose later steps need the owner
// would deadlock there. Every one the engines do not take (several nodes,
// an inter-communicator, a derived datatype, a user op, the bounds above)
// returns the library's own persistent request untouched.
//
// Every persistent form of shancoll's collectives is interposed, under
// MPI-4 libraries (MPICH, Intel MPI) and Open MPI 5 (which declares them,
// not their _c forms, while it says MPI 3.1). Where no engine takes the call
// (the bounds above, several nodes, ...) the library's own persistent
// request runs it: shancoll's other engines for requests are the
// point-to-point schedules, whose rounds after the first are posted by the
// owner's test (they fail (b)), and `mpi`, the library's own nonblocking
// call posted at each start, which routing would only wrap where the
// library's own persistent request is ready-made.
//
// The handle: the library's own persistent request for the same call
// (PMPI_<Coll>_init, never started), so that a call not interposed here sees
// a valid inactive persistent request of the right kind; pmpi_routed.h maps
// it to shancoll's request. MPI_Start, MPI_Startall, the completion calls,
// MPI_Request_get_status, MPI_Request_free and MPI_Cancel look the handle up
// there; when nothing is routed that costs one relaxed atomic load and a
// branch before the PMPI_ call. A mixed array (routed and library requests)
// is driven with each call's MPI semantics: the routed runs are polled
// (shancoll_test: spins, then yields and drives MPI's progress), under
// shancoll's deadline (the request's timeout, SHANCOLL_TIMEOUT: an error,
// never a hang); the library's requests go to one PMPI_ call on the
// compacted array.
//
// Fortran: MPICH's Fortran 2008 bindings (Debian's MPICH 4.0.2,
// libmpichfort) call PMPI_Wait, PMPI_Test, PMPI_Start, ... directly, while
// their MPI_Allreduce_init reaches this one: a routed request waited for
// from Fortran would be reported complete at once, while the run goes on.
// Whether a binding calls MPI_ or PMPI_ names depends on how the library was
// built, so nothing is routed while any MPI Fortran binding is loaded in the
// process (fortran_loaded()).
//
// The ranks agree before routing (one allreduce of a flag at _init): the
// process-local conditions (Fortran bindings, a full table) could differ
// between ranks, and the inline engine's _init is collective over the node.
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "pmpi_common.h"
#include "pmpi_routed.h"
#include "shancoll/on_error.h"
#include "shancoll/ops.h"
#include "shancoll/rules.h"

namespace shancoll::pmpi {

RoutedTable g_routed;

std::size_t RoutedTable::slot_of(MPI_Request handle) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &handle, sizeof handle < sizeof bits ? sizeof handle : sizeof bits);
  return static_cast<std::size_t>((bits * 0x9E3779B97F4A7C15ull) >> (64 - kSlotBits));
}

Routed* RoutedTable::lookup(MPI_Request handle) {
  if (handle == MPI_REQUEST_NULL) return nullptr;
  const std::size_t home = slot_of(handle);
  const std::size_t probes = probes_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < probes; ++i) {
    Routed& r = slots_[(home + i) % kSlots];
    if (r.handle.load(std::memory_order_acquire) == handle) return &r;
  }
  return nullptr;
}

namespace {

int world_rank() {
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// Says what went wrong with a routed request; returns `code`.
int say(const char* call, const Routed& r, int code, const char* what) {
  std::fprintf(stderr, "shancoll_pmpi: rank %d: %s on the persistent %s: %s\n", world_rank(), call,
               r.collective, what);
  return code;
}

// The communicator's error handler decides (fatal by default), as for any MPI error.
int handled(MPI_Comm comm, int code) {
  PMPI_Comm_call_errhandler(comm, code);
  return code;
}

// MPI's empty status: what a completed collective and an inactive request report.
void set_empty(MPI_Status* status) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = MPI_ANY_SOURCE;
  status->MPI_TAG = MPI_ANY_TAG;
  status->MPI_ERROR = MPI_SUCCESS;
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
}

MPI_Status* status_at(MPI_Status statuses[], int i) {
  return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

int start(Routed& r, const char* call) {
  if (r.active)
    return handled(r.comm, say(call, r, MPI_ERR_REQUEST,
                               "request: still active (started and not completed); complete it "
                               "with MPI_Wait or MPI_Test first"));
  const int rc = shancoll_start(&r.request);
  if (rc != MPI_SUCCESS) return handled(r.comm, say(call, r, rc, shancoll_last_error()));
  r.active = true;
  if (summary()) r.started = PMPI_Wtime();
  return MPI_SUCCESS;
}

// Advances an active run; `done` once it is complete. A failed run (not a
// timeout: shancoll_test has none) cannot go on: the request becomes
// inactive, so that the program may free it.
int poll(Routed& r, const char* call, bool& done) {
  int flag = 0;
  const int rc = shancoll_test(&r.request, &flag);
  done = flag != 0;
  if (rc == MPI_SUCCESS) return rc;
  r.active = false;
  return say(call, r, rc, shancoll_last_error());
}

// The run is over: the request becomes inactive, its handle stays valid.
void complete(Routed& r, MPI_Status* status) {
  r.active = false;
  set_empty(status);
  if (summary()) record(r.collective, r.algorithm, r.bytes, PMPI_Wtime() - r.started);
}

// shancoll's deadline for a wait on routed runs: `since` is when the wait
// began (0: not yet); MPI_ERR_OTHER once `r` has been waited for longer than
// its timeout. The run stays active: a later wait may still complete it.
int overdue(const char* call, const Routed& r, double& since) {
  const double now = PMPI_Wtime();
  if (since == 0) since = now;
  if (now - since <= r.timeout) return MPI_SUCCESS;
  char what[200];
  std::snprintf(what, sizeof what,
                "request: not complete after %g s (a peer rank is missing from the collective or "
                "late; see SHANCOLL_TIMEOUT); it stays active",
                r.timeout);
  on_failure(r.collective, r.algorithm, what);  // SHANCOLL_ON_ERROR=abort ends the job here
  return say(call, r, MPI_ERR_OTHER, what);
}

// An array of requests split into the routed ones and the library's,
// compacted for one PMPI_ call. One per thread, reused: no allocation once
// grown.
struct Split {
  std::vector<Routed*> routed;       // per index; null: the library's
  std::vector<int> index;            // the library's requests' indices
  std::vector<MPI_Request> library;  // and handles
  std::vector<MPI_Status> statuses;  // of the PMPI_ call
  std::vector<int> indices;          // of PMPI_Testsome
  bool any_active = false;           // a routed run in flight

  // False when no request is routed: the caller hands the array to PMPI_.
  bool of(int count, const MPI_Request requests[]) {
    if (g_routed.empty() || count <= 0 || !requests) return false;
    routed.assign(static_cast<std::size_t>(count), nullptr);
    index.clear();
    library.clear();
    bool any = false;
    any_active = false;
    for (int i = 0; i < count; ++i) {
      Routed* r = g_routed.find(requests[i]);
      routed[i] = r;
      any |= r != nullptr;
      any_active |= r && r->active;
      if (!r) index.push_back(i), library.push_back(requests[i]);
    }
    statuses.resize(library.size());
    indices.resize(library.size());
    return any;
  }
  int library_count() const { return static_cast<int>(library.size()); }
  MPI_Status* library_statuses(const MPI_Status* wanted) {
    return wanted == MPI_STATUSES_IGNORE ? MPI_STATUSES_IGNORE : statuses.data();
  }
  // The library's handles (nulled or inactive by the PMPI_ call) back into the array.
  void put_back(MPI_Request requests[]) const {
    for (std::size_t k = 0; k < index.size(); ++k) requests[index[k]] = library[k];
  }
  // The library's statuses, at their indices.
  void copy_statuses(MPI_Status out[]) const {
    if (out == MPI_STATUSES_IGNORE) return;
    for (std::size_t k = 0; k < index.size(); ++k) out[index[k]] = statuses[k];
  }
};

thread_local Split t_split;

// MPI_ERR_IN_STATUS when there are statuses to say which request failed
// (`failed`, with `code`); the others `others` (MPI_ERR_PENDING: not completed).
int in_status(MPI_Comm comm, int code, int count, MPI_Status statuses[], int failed, int others) {
  if (statuses == MPI_STATUSES_IGNORE) return handled(comm, code);
  for (int k = 0; k < count; ++k) statuses[k].MPI_ERROR = k == failed ? code : others;
  return handled(comm, MPI_ERR_IN_STATUS);
}

// Polls the routed runs of `s` once: true when all are complete; on an
// error, `failed` is the index and the return code is in `rc`.
bool routed_done(Split& s, const char* call, int& rc, int& failed, Routed*& late) {
  bool all = true;
  late = nullptr;
  for (std::size_t i = 0; i < s.routed.size(); ++i) {
    Routed* r = s.routed[i];
    if (!r || !r->active) continue;
    bool done = false;
    if ((rc = poll(*r, call, done)) != MPI_SUCCESS) {
      failed = static_cast<int>(i);
      return false;
    }
    if (!done && !late) late = r;
    all &= done;
  }
  return all;
}

// Completes every routed request of `s` (empty statuses for the inactive ones).
void complete_routed(Split& s, MPI_Status statuses[]) {
  for (std::size_t i = 0; i < s.routed.size(); ++i) {
    Routed* r = s.routed[i];
    if (!r) continue;
    if (r->active)
      complete(*r, status_at(statuses, static_cast<int>(i)));
    else
      set_empty(status_at(statuses, static_cast<int>(i)));
  }
}

// Drives MPI's progress for the library's requests while routed runs are
// polled, without completing any (MPI_Testall must change none of them
// unless all are complete).
void poke_library(const Split& s) {
  int flag = 0;
  for (MPI_Request r : s.library) PMPI_Request_get_status(r, &flag, MPI_STATUS_IGNORE);
}

// The routed runs first, under shancoll's deadline, then the library's
// requests in one PMPI_Waitall (they never wait for the routed ones, whose
// peers need nothing from this rank after its start).
int waitall(Split& s, int count, MPI_Request requests[], MPI_Status statuses[]) {
  double since = 0;
  int rc = MPI_SUCCESS, failed = -1;
  Routed* late = nullptr;
  while (!routed_done(s, "MPI_Waitall", rc, failed, late)) {
    if (failed >= 0)
      return in_status(s.routed[failed]->comm, rc, count, statuses, failed, MPI_ERR_PENDING);
    if ((rc = overdue("MPI_Waitall", *late, since)) != MPI_SUCCESS) {
      const int at =
          static_cast<int>(std::find(s.routed.begin(), s.routed.end(), late) - s.routed.begin());
      return in_status(late->comm, rc, count, statuses, at, MPI_ERR_PENDING);
    }
    poke_library(s);
  }
  if (s.library_count() > 0) {
    rc = PMPI_Waitall(s.library_count(), s.library.data(), s.library_statuses(statuses));
    s.put_back(requests);
    s.copy_statuses(statuses);
  }
  complete_routed(s, statuses);
  return rc;
}

int testall(Split& s, int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  int rc = MPI_SUCCESS, failed = -1;
  Routed* late = nullptr;
  *flag = 0;
  if (!routed_done(s, "MPI_Testall", rc, failed, late)) {
    if (failed >= 0)
      return in_status(s.routed[failed]->comm, rc, count, statuses, failed, MPI_ERR_PENDING);
    poke_library(s);
    return MPI_SUCCESS;
  }
  int library_flag = 1;
  if (s.library_count() > 0) {
    rc = PMPI_Testall(s.library_count(), s.library.data(), &library_flag,
                      s.library_statuses(statuses));
    s.put_back(requests);
  }
  if (!library_flag) return rc;
  s.copy_statuses(statuses);
  complete_routed(s, statuses);
  *flag = 1;
  return rc;
}

// Waitany (wait) and Testany: the first routed run complete, else one of
// the library's; MPI_UNDEFINED when no request is active.
int any(Split& s, bool wait, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  const char* call = wait ? "MPI_Waitany" : "MPI_Testany";
  double since = 0;
  *index = MPI_UNDEFINED;
  for (;;) {
    Routed* late = nullptr;
    for (std::size_t i = 0; i < s.routed.size(); ++i) {
      Routed* r = s.routed[i];
      if (!r || !r->active) continue;
      bool done = false;
      const int rc = poll(*r, call, done);
      if (rc != MPI_SUCCESS || done) *index = static_cast<int>(i);
      if (rc != MPI_SUCCESS) return handled(r->comm, rc);
      if (done) {
        complete(*r, status);
        return *flag = 1, MPI_SUCCESS;
      }
      if (!late) late = r;
    }
    int k = MPI_UNDEFINED, library_flag = 1;
    if (s.library_count() > 0) {
      const int rc = PMPI_Testany(s.library_count(), s.library.data(), &k, &library_flag, status);
      s.put_back(requests);
      if (k != MPI_UNDEFINED) *index = s.index[k];
      if (rc != MPI_SUCCESS || (library_flag && k != MPI_UNDEFINED)) return *flag = 1, rc;
    }
    if (!late && library_flag) {  // nothing active: MPI's empty status
      set_empty(status);
      return *flag = 1, MPI_SUCCESS;
    }
    if (!wait) return *flag = 0, MPI_SUCCESS;
    if (!late) {  // only the library's left: its own wait
      const int rc = PMPI_Waitany(s.library_count(), s.library.data(), &k, status);
      s.put_back(requests);
      if (k != MPI_UNDEFINED) *index = s.index[k];
      return *flag = 1, rc;
    }
    if (const int rc = overdue(call, *late, since)) {
      *index =
          static_cast<int>(std::find(s.routed.begin(), s.routed.end(), late) - s.routed.begin());
      return handled(late->comm, rc);
    }
  }
}

// Waitsome once only the library's requests are active: its own wait.
int library_wait(Split& s, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  const int rc = PMPI_Waitsome(s.library_count(), s.library.data(), outcount, s.indices.data(),
                               s.library_statuses(statuses));
  s.put_back(requests);
  for (int k = 0; *outcount != MPI_UNDEFINED && k < *outcount; ++k) {
    indices[k] = s.index[s.indices[k]];
    if (statuses != MPI_STATUSES_IGNORE) statuses[k] = s.statuses[k];
  }
  return rc;
}

// Waitsome (wait) and Testsome: every routed run complete and the library's
// requests PMPI_Testsome completes, in one call.
int some(Split& s, bool wait, MPI_Request requests[], int* outcount, int indices[],
         MPI_Status statuses[]) {
  const char* call = wait ? "MPI_Waitsome" : "MPI_Testsome";
  double since = 0;
  for (;;) {
    int n = 0, failed = -1, code = MPI_SUCCESS;
    Routed* late = nullptr;
    for (std::size_t i = 0; i < s.routed.size(); ++i) {
      Routed* r = s.routed[i];
      if (!r || !r->active) continue;
      bool done = false;
      const int rc = poll(*r, call, done);
      if (rc != MPI_SUCCESS) failed = n, code = rc;
      if (rc == MPI_SUCCESS && !done) {
        if (!late) late = r;
        continue;
      }
      indices[n] = static_cast<int>(i);
      if (rc == MPI_SUCCESS) complete(*r, status_at(statuses, n));
      ++n;
    }
    int library_out = MPI_UNDEFINED;
    if (s.library_count() > 0) {
      const int rc = PMPI_Testsome(s.library_count(), s.library.data(), &library_out,
                                   s.indices.data(), s.library_statuses(statuses));
      s.put_back(requests);
      if (rc != MPI_SUCCESS && failed < 0) code = rc;
      for (int k = 0; library_out != MPI_UNDEFINED && k < library_out; ++k, ++n) {
        indices[n] = s.index[s.indices[k]];
        if (statuses != MPI_STATUSES_IGNORE) statuses[n] = s.statuses[k];
      }
    }
    *outcount = n;
    if (failed >= 0)
      return in_status(s.routed[indices[failed]]->comm, code, n, statuses, failed, MPI_SUCCESS);
    if (n > 0 || code != MPI_SUCCESS) return code;
    if (!late && library_out == MPI_UNDEFINED)  // nothing active
      return *outcount = MPI_UNDEFINED, MPI_SUCCESS;
    if (!wait) return MPI_SUCCESS;
    if (!late) return library_wait(s, requests, outcount, indices, statuses);
    if (const int rc = overdue(call, *late, since)) return handled(late->comm, rc);
  }
}

// Whether any MPI Fortran binding is loaded in this process (the header: its
// completion calls may bypass the interposed ones). Looked up at each _init:
// a binding may be loaded later (dlopen).
bool fortran_loaded() {
  for (const char* name :
       {"mpi_wait_", "mpi_wait__", "mpi_wait", "MPI_WAIT", "mpi_wait_f08_", "mpi_wait_f08"})
    if (dlsym(RTLD_DEFAULT, name)) return true;
  return false;
}

// Why this call goes to the library whatever the other ranks decide, or nullptr.
const char* shared_reason(MPI_Comm comm, MPI_Op op) {
  if (const char* why = global_fallback()) return why;
  int inter = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
    return "comm: an inter-communicator";
  // A user op would run in shancoll's polls as well; the routing rule leaves
  // it to the library (not measured).
  if (predefined_op_index(op) < 0)
    return "op: a user op (only predefined ops are routed to persistent requests)";
  return nullptr;
}

// Whether the MPI library is Intel MPI (the rules below are its).
bool intel_mpi() { return machine_mpi().find("Intel(R) MPI Library") != std::string::npos; }

// `collective` is `name` or its _c form.
bool is(const char* collective, const char* name) {
  return std::strncmp(collective, name, std::strlen(name)) == 0;
}

// Whether the library's own persistent form of `collective` gives wrong
// results: Intel MPI's MPI_Gather_init, MPI_Scatter_init and
// MPI_Allgather_init (and _c). Intel MPI 2021.18.1, 2 ranks on one node,
// each run's inputs changed before its start and checked against the
// blocking call (docs/performance.md, "Intel MPI's own persistent gather,
// scatter and allgather"): the gather's root wrong in every run, the scatter
// and the allgather right in the first run only, some jobs ending in a
// segmentation fault inside MPI_Start; its nonblocking forms and its other
// persistent collectives right. Where no engine of shancoll's takes such a
// call, shancoll's `mpi` request (the library's nonblocking call, posted at
// each start) runs it instead of the library's persistent request.
bool library_persistent_wrong(const char* collective) {
  return intel_mpi() && (is(collective, "MPI_Gather_init") || is(collective, "MPI_Scatter_init") ||
                         is(collective, "MPI_Allgather_init"));
}

// Why this rank would not route; the ranks agree (the header).
const char* agreed_reason(MPI_Comm comm) {
  const char* mine = nullptr;
  if (fortran_loaded())
    mine =
        "an MPI Fortran binding is loaded (its MPI_WAIT may call PMPI_Wait, which cannot see "
        "shancoll's run)";
  else if (g_routed.full())
    mine = "the table of routed persistent requests is full";
  int ok = mine == nullptr;
  PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, comm);
  if (ok) return nullptr;
  return mine ? mine : "another rank cannot route it (SHANCOLL_PMPI_VERBOSE=1 there says why)";
}

// Enters a routed request under the library's handle.
int enter(const char* collective, MPI_Comm comm, std::int64_t bytes, MPI_Request handle,
          shancoll_request own) {
  std::size_t rounds = 0;
  double timeout = 0;
  capi::request_progress(own, rounds, timeout);
  const char* algorithm = shancoll_last_algorithm();
  Routed* r = g_routed.insert(handle, [&](Routed& slot) {
    slot.request = own;
    slot.comm = comm;
    slot.collective = collective;
    slot.timeout = timeout;
    slot.bytes = bytes;
    slot.active = false;
    std::snprintf(slot.algorithm, sizeof slot.algorithm, "%s", algorithm);
  });
  if (!r) {  // another thread filled the table since agreed_reason
    shancoll_request_free(&own);
    return failed(collective, comm, MPI_ERR_NO_MEM);
  }
  // Not report_routed: the thread's last trees are those of an earlier call.
  report(collective, comm, "routed to shancoll ", r->algorithm);
  return MPI_SUCCESS;
}

}  // namespace

int wait_one(Routed& r, MPI_Status* status) {
  double since = 0;
  while (r.active) {
    bool done = false;
    int rc = poll(r, "MPI_Wait", done);
    if (rc == MPI_SUCCESS && done) {
      complete(r, status);
      return rc;
    }
    if (rc == MPI_SUCCESS) rc = overdue("MPI_Wait", r, since);
    if (rc != MPI_SUCCESS) return handled(r.comm, rc);
  }
  set_empty(status);  // inactive: MPI returns at once
  return MPI_SUCCESS;
}

// MPI_Test (finish: the request becomes inactive when complete) and
// MPI_Request_get_status (it stays active until a completion call).
int test_one(Routed& r, const char* call, bool finish, int* flag, MPI_Status* status) {
  if (!flag) return handled(r.comm, say(call, r, MPI_ERR_ARG, "flag: NULL"));
  bool done = true;
  if (r.active) {
    const int rc = poll(r, call, done);
    if (rc != MPI_SUCCESS) return handled(r.comm, rc);
  }
  *flag = done;
  if (done && r.active && finish)
    complete(r, status);
  else if (done)
    set_empty(status);
  return MPI_SUCCESS;
}

int free_routed(Routed& r, MPI_Request* request) {
  if (r.active)
    return handled(r.comm,
                   say("MPI_Request_free", r, MPI_ERR_REQUEST,
                       "request: still active (MPI: freeing an active persistent collective "
                       "request is erroneous); complete it with MPI_Wait or MPI_Test first"));
  shancoll_request own = r.request;
  g_routed.erase(r);  // before the library may hand the handle out again
  shancoll_request_free(&own);
  return PMPI_Request_free(request);
}

int refuse_cancel(Routed& r) {
  return handled(r.comm, say("MPI_Cancel", r, MPI_ERR_REQUEST,
                             "request: a persistent collective request cannot be cancelled "
                             "(MPI); it is left as it was"));
}

// The library's persistent request first (the program's handle), then
// shancoll's request by its `auto` where that picks the collective's
// persistent `engine` (the rule table of this machine and library: rules.h,
// <coll>_init rows; without a row, the inline engines alone; never by
// SHANCOLL_I<COLL>_ALGORITHM, which may name a schedule, which fails (b)).
// Elsewhere the library's own persistent request runs the call, except
// where that is wrong: shancoll's `mpi` request (the library's nonblocking
// call at each start) runs it instead.
template <class Library, class Shancoll>
int persistent_init(const char* collective, const char* engine, MPI_Comm comm, MPI_Op op,
                    std::int64_t bytes, MPI_Request* request, Library&& library_init,
                    Shancoll&& shancoll_init) {
  const int rc = library_init();
  if (rc != MPI_SUCCESS || capi::inside() || !request) return rc;
  const char* why = shared_reason(comm, op);
  if (!why) why = agreed_reason(comm);
  if (why) {
    report(collective, comm, "to the MPI library: ", why);
    return MPI_SUCCESS;
  }
  shancoll_request own = SHANCOLL_REQUEST_NULL;
  int made = shancoll_init("auto", &own);
  if (made == MPI_SUCCESS && std::strcmp(shancoll_last_algorithm(), engine) != 0) {
    shancoll_request_free(&own);  // every rank alike: the same table, an agreed choice
    if (!library_persistent_wrong(collective)) {
      report(collective, comm, "to the MPI library: ",
             "no persistent engine of shancoll's is chosen here (the rule table: "
             "shancoll.rules_info(), SHANCOLL_RULES)");
      return MPI_SUCCESS;
    }
    made = shancoll_init("mpi", &own);
  }
  if (made == MPI_SUCCESS) return enter(collective, comm, bytes, *request, own);
  if (capi::refused(made)) {
    report_refusal(collective, comm, shancoll_last_error());
    return MPI_SUCCESS;
  }
  PMPI_Request_free(request);
  return failed(collective, comm, made);
}

// The calls below with some request routed: each looks its requests up.

[[gnu::noinline]] int routed_start(MPI_Request* request) {
  Routed* r = request ? g_routed.find(*request) : nullptr;
  if (!r) return PMPI_Start(request);
  return start(*r, "MPI_Start");
}

[[gnu::noinline]] int routed_startall(int count, MPI_Request requests[]) {
  if (!t_split.of(count, requests)) return PMPI_Startall(count, requests);
  for (int i = 0; i < count; ++i) {  // in array order (MPI: unspecified)
    Routed* r = t_split.routed[i];
    const int rc = r ? start(*r, "MPI_Startall") : PMPI_Start(&requests[i]);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

[[gnu::noinline]] int routed_wait(MPI_Request* request, MPI_Status* status) {
  Routed* r = request ? g_routed.find(*request) : nullptr;
  if (!r) return PMPI_Wait(request, status);
  return wait_one(*r, status);
}

[[gnu::noinline]] int routed_test(MPI_Request* request, int* flag, MPI_Status* status) {
  Routed* r = request ? g_routed.find(*request) : nullptr;
  if (!r) return PMPI_Test(request, flag, status);
  return test_one(*r, "MPI_Test", true, flag, status);
}

[[gnu::noinline]] int routed_request_get_status(MPI_Request request, int* flag,
                                                MPI_Status* status) {
  Routed* r = g_routed.find(request);
  if (!r) return PMPI_Request_get_status(request, flag, status);
  // As MPI_Test, but the request stays active until a completion call sees it.
  return test_one(*r, "MPI_Request_get_status", false, flag, status);
}

[[gnu::noinline]] int routed_waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (!t_split.of(count, requests)) return PMPI_Waitall(count, requests, statuses);
  return waitall(t_split, count, requests, statuses);
}

[[gnu::noinline]] int routed_testall(int count, MPI_Request requests[], int* flag,
                                     MPI_Status statuses[]) {
  if (!t_split.of(count, requests) || !flag) return PMPI_Testall(count, requests, flag, statuses);
  return testall(t_split, count, requests, flag, statuses);
}

[[gnu::noinline]] int routed_waitany(int count, MPI_Request requests[], int* index,
                                     MPI_Status* status) {
  if (!t_split.of(count, requests) || !index) return PMPI_Waitany(count, requests, index, status);
  int flag = 0;
  return any(t_split, true, requests, index, &flag, status);
}

[[gnu::noinline]] int routed_testany(int count, MPI_Request requests[], int* index, int* flag,
                                     MPI_Status* status) {
  if (!t_split.of(count, requests) || !index || !flag)
    return PMPI_Testany(count, requests, index, flag, status);
  return any(t_split, false, requests, index, flag, status);
}

[[gnu::noinline]] int routed_waitsome(int incount, MPI_Request requests[], int* outcount,
                                      int indices[], MPI_Status statuses[]) {
  if (!t_split.of(incount, requests) || !outcount || !indices)
    return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  return some(t_split, true, requests, outcount, indices, statuses);
}

[[gnu::noinline]] int routed_testsome(int incount, MPI_Request requests[], int* outcount,
                                      int indices[], MPI_Status statuses[]) {
  if (!t_split.of(incount, requests) || !outcount || !indices)
    return PMPI_Testsome(incount, requests, outcount, indices, statuses);
  return some(t_split, false, requests, outcount, indices, statuses);
}

[[gnu::noinline]] int routed_request_free(MPI_Request* request) {
  Routed* r = request ? g_routed.find(*request) : nullptr;
  if (!r) return PMPI_Request_free(request);
  return free_routed(*r, request);  // both requests; refused while active
}

[[gnu::noinline]] int routed_cancel(MPI_Request* request) {
  Routed* r = request ? g_routed.find(*request) : nullptr;
  if (!r) return PMPI_Cancel(request);
  return refuse_cancel(*r);
}

}  // namespace shancoll::pmpi

using shancoll::pmpi::g_routed;
using shancoll::pmpi::Routed;
using shancoll::pmpi::t_split;

extern "C" {

// MPI-4's persistent collectives: under MPI-4 libraries (MPICH, Intel MPI),
// and under Open MPI 5, which declares them (not their _c forms) while it
// says MPI 3.1.
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
// One line per persistent collective shancoll may run: the MPI signature
// (without info and request), the C API's persistent form, its persistent
// engine (the only algorithm routed), its op (MPI_OP_NULL: none) and its
// bytes for the summary.
#define SHANCOLL_UNPAREN(...) __VA_ARGS__
#define SHANCOLL_PMPI_INIT(mpi, capi, engine, op, bytes, params, args)          \
  int MPI_##mpi(SHANCOLL_UNPAREN params, MPI_Info info, MPI_Request* request) { \
    return shancoll::pmpi::persistent_init(                                     \
        "MPI_" #mpi, engine, comm, op, bytes, request,                          \
        [&] { return PMPI_##mpi(SHANCOLL_UNPAREN args, info, request); },       \
        [&](const char* name, shancoll_request* own) {                          \
          return shancoll_##capi(SHANCOLL_UNPAREN args, name, nullptr, own);    \
        });                                                                     \
  }
SHANCOLL_PMPI_INIT(Allreduce_init, allreduce_init, "shan", op,
                   shancoll::pmpi::bytes_of(count, datatype),
                   (const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                    MPI_Comm comm),
                   (sendbuf, recvbuf, count, datatype, op, comm))
SHANCOLL_PMPI_INIT(Bcast_init, bcast_init, "release_gather", MPI_OP_NULL,
                   shancoll::pmpi::bytes_of(count, datatype),
                   (void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm),
                   (buffer, count, datatype, root, comm))
SHANCOLL_PMPI_INIT(Reduce_init, reduce_init, "release_gather", op,
                   shancoll::pmpi::bytes_of(count, datatype),
                   (const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                    int root, MPI_Comm comm),
                   (sendbuf, recvbuf, count, datatype, op, root, comm))
SHANCOLL_PMPI_INIT(Allgather_init, allgather_init, "shan", MPI_OP_NULL,
                   shancoll::pmpi::bytes_of(recvcount, recvtype),
                   (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    int recvcount, MPI_Datatype recvtype, MPI_Comm comm),
                   (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
SHANCOLL_PMPI_INIT(Allgatherv_init, allgatherv_init, "shan", MPI_OP_NULL,
                   shancoll::pmpi::gathered_bytes(recvcounts, recvtype, comm),
                   (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    MPI_Comm comm),
                   (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm))
SHANCOLL_PMPI_INIT(Alltoall_init, alltoall_init, "shan", MPI_OP_NULL,
                   shancoll::pmpi::gathered_bytes(recvcount, recvtype, comm),
                   (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    int recvcount, MPI_Datatype recvtype, MPI_Comm comm),
                   (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
SHANCOLL_PMPI_INIT(Alltoallv_init, alltoallv_init, "shan", MPI_OP_NULL,
                   shancoll::pmpi::gathered_bytes(recvcounts, recvtype, comm),
                   (const void* sendbuf, const int sendcounts[], const int sdispls[],
                    MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                    const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm),
                   (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                    comm))
SHANCOLL_PMPI_INIT(Gather_init, gather_init, "shan", MPI_OP_NULL,
                   shancoll::pmpi::own_bytes(sendbuf, sendcount, sendtype, recvcount, recvtype),
                   (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm),
                   (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm))
SHANCOLL_PMPI_INIT(
    Gatherv_init, gatherv_init, "shan", MPI_OP_NULL,
    shancoll::pmpi::own_bytes(
        sendbuf, sendcount, sendtype,
        sendbuf == MPI_IN_PLACE ? shancoll::pmpi::count_at_root(recvcounts, comm) : 0, recvtype),
    (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
     const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm),
    (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm))
SHANCOLL_PMPI_INIT(Scatter_init, scatter_init, "shan", MPI_OP_NULL,
                   shancoll::pmpi::own_bytes(recvbuf, recvcount, recvtype, sendcount, sendtype),
                   (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm),
                   (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm))
SHANCOLL_PMPI_INIT(
    Scatterv_init, scatterv_init, "shan", MPI_OP_NULL,
    shancoll::pmpi::own_bytes(
        recvbuf, recvcount, recvtype,
        recvbuf == MPI_IN_PLACE ? shancoll::pmpi::count_at_root(sendcounts, comm) : 0, sendtype),
    (const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
     void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm),
    (sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm))
SHANCOLL_PMPI_INIT(Reduce_scatter_block_init, reduce_scatter_block_init, "shan", op,
                   shancoll::pmpi::bytes_of(recvcount, datatype),
                   (const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm),
                   (sendbuf, recvbuf, recvcount, datatype, op, comm))
SHANCOLL_PMPI_INIT(Reduce_scatter_init, reduce_scatter_init, "shan", op,
                   shancoll::pmpi::my_block_bytes(recvcounts, datatype, comm),
                   (const void* sendbuf, void* recvbuf, const int recvcounts[],
                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm),
                   (sendbuf, recvbuf, recvcounts, datatype, op, comm))
SHANCOLL_PMPI_INIT(Scan_init, scan_init, "shan", op, shancoll::pmpi::bytes_of(count, datatype),
                   (const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                    MPI_Comm comm),
                   (sendbuf, recvbuf, count, datatype, op, comm))
SHANCOLL_PMPI_INIT(Exscan_init, exscan_init, "shan", op, shancoll::pmpi::bytes_of(count, datatype),
                   (const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                    MPI_Comm comm),
                   (sendbuf, recvbuf, count, datatype, op, comm))
SHANCOLL_PMPI_INIT(Barrier_init, barrier_init, "release_gather", MPI_OP_NULL, 0, (MPI_Comm comm),
                   (comm))
#if MPI_VERSION >= 4  // the _c forms
SHANCOLL_PMPI_INIT(Allreduce_init_c, allreduce_init_c, "shan", op,
                   shancoll::pmpi::bytes_of(count, datatype),
                   (const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm),
                   (sendbuf, recvbuf, count, datatype, op, comm))
SHANCOLL_PMPI_INIT(Bcast_init_c, bcast_init_c, "release_gather", MPI_OP_NULL,
                   shancoll::pmpi::bytes_of(count, datatype),
                   (void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm),
                   (buffer, count, datatype, root, comm))
SHANCOLL_PMPI_INIT(Reduce_init_c, reduce_init_c, "release_gather", op,
                   shancoll::pmpi::bytes_of(count, datatype),
                   (const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, int root, MPI_Comm comm),
                   (sendbuf, recvbuf, count, datatype, op, root, comm))
SHANCOLL_PMPI_INIT(Allgather_init_c, allgather_init_c, "shan", MPI_OP_NULL,
                   shancoll::pmpi::bytes_of(recvcount, recvtype),
                   (const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm),
                   (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
SHANCOLL_PMPI_INIT(Allgatherv_init_c, allgatherv_init_c, "shan", MPI_OP_NULL,
                   shancoll::pmpi::gathered_bytes(recvcounts, recvtype, comm),
                   (const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                    const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                    MPI_Comm comm),
                   (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm))
SHANCOLL_PMPI_INIT(Alltoall_init_c, alltoall_init_c, "shan", MPI_OP_NULL,
                   shancoll::pmpi::gathered_bytes(recvcount, recvtype, comm),
                   (const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm),
                   (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
SHANCOLL_PMPI_INIT(Alltoallv_init_c, alltoallv_init_c, "shan", MPI_OP_NULL,
                   shancoll::pmpi::gathered_bytes(recvcounts, recvtype, comm),
                   (const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                    MPI_Datatype sendtype, void* recvbuf, const MPI_Count recvcounts[],
                    const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm),
                   (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                    comm))
SHANCOLL_PMPI_INIT(Gather_init_c, gather_init_c, "shan", MPI_OP_NULL,
                   shancoll::pmpi::own_bytes(sendbuf, sendcount, sendtype, recvcount, recvtype),
                   (const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm),
                   (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm))
SHANCOLL_PMPI_INIT(Gatherv_init_c, gatherv_init_c, "shan", MPI_OP_NULL,
                   shancoll::pmpi::own_bytes(sendbuf, sendcount, sendtype,
                                             sendbuf == MPI_IN_PLACE
                                                 ? shancoll::pmpi::count_at_root(recvcounts, comm)
                                                 : 0,
                                             recvtype),
                   (const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                    const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                    int root, MPI_Comm comm),
                   (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                    comm))
SHANCOLL_PMPI_INIT(Scatter_init_c, scatter_init_c, "shan", MPI_OP_NULL,
                   shancoll::pmpi::own_bytes(recvbuf, recvcount, recvtype, sendcount, sendtype),
                   (const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm),
                   (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm))
SHANCOLL_PMPI_INIT(Scatterv_init_c, scatterv_init_c, "shan", MPI_OP_NULL,
                   shancoll::pmpi::own_bytes(recvbuf, recvcount, recvtype,
                                             recvbuf == MPI_IN_PLACE
                                                 ? shancoll::pmpi::count_at_root(sendcounts, comm)
                                                 : 0,
                                             sendtype),
                   (const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                    MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount,
                    MPI_Datatype recvtype, int root, MPI_Comm comm),
                   (sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                    comm))
SHANCOLL_PMPI_INIT(Reduce_scatter_block_init_c, reduce_scatter_block_init_c, "shan", op,
                   shancoll::pmpi::bytes_of(recvcount, datatype),
                   (const void* sendbuf, void* recvbuf, MPI_Count recvcount, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm),
                   (sendbuf, recvbuf, recvcount, datatype, op, comm))
SHANCOLL_PMPI_INIT(Reduce_scatter_init_c, reduce_scatter_init_c, "shan", op,
                   shancoll::pmpi::my_block_bytes(recvcounts, datatype, comm),
                   (const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[],
                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm),
                   (sendbuf, recvbuf, recvcounts, datatype, op, comm))
SHANCOLL_PMPI_INIT(Scan_init_c, scan_init_c, "shan", op, shancoll::pmpi::bytes_of(count, datatype),
                   (const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm),
                   (sendbuf, recvbuf, count, datatype, op, comm))
SHANCOLL_PMPI_INIT(Exscan_init_c, exscan_init_c, "shan", op,
                   shancoll::pmpi::bytes_of(count, datatype),
                   (const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm),
                   (sendbuf, recvbuf, count, datatype, op, comm))
#endif
#undef SHANCOLL_PMPI_INIT
#undef SHANCOLL_UNPAREN
#endif  // persistent collectives

// Every call: while no request is routed, one relaxed atomic load and a
// branch, then the PMPI_ call (a tail jump: read in the disassembly); the
// rest apart, never inlined there.

int MPI_Start(MPI_Request* request) {
  if (g_routed.empty()) return PMPI_Start(request);
  return shancoll::pmpi::routed_start(request);
}

int MPI_Startall(int count, MPI_Request requests[]) {
  if (g_routed.empty()) return PMPI_Startall(count, requests);
  return shancoll::pmpi::routed_startall(count, requests);
}

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  if (g_routed.empty()) return PMPI_Wait(request, status);
  return shancoll::pmpi::routed_wait(request, status);
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  if (g_routed.empty()) return PMPI_Test(request, flag, status);
  return shancoll::pmpi::routed_test(request, flag, status);
}

int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  if (g_routed.empty()) return PMPI_Request_get_status(request, flag, status);
  return shancoll::pmpi::routed_request_get_status(request, flag, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (g_routed.empty()) return PMPI_Waitall(count, requests, statuses);
  return shancoll::pmpi::routed_waitall(count, requests, statuses);
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  if (g_routed.empty()) return PMPI_Testall(count, requests, flag, statuses);
  return shancoll::pmpi::routed_testall(count, requests, flag, statuses);
}

int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  if (g_routed.empty()) return PMPI_Waitany(count, requests, index, status);
  return shancoll::pmpi::routed_waitany(count, requests, index, status);
}

int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  if (g_routed.empty()) return PMPI_Testany(count, requests, index, flag, status);
  return shancoll::pmpi::routed_testany(count, requests, index, flag, status);
}

int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  if (g_routed.empty()) return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  return shancoll::pmpi::routed_waitsome(incount, requests, outcount, indices, statuses);
}

int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  if (g_routed.empty()) return PMPI_Testsome(incount, requests, outcount, indices, statuses);
  return shancoll::pmpi::routed_testsome(incount, requests, outcount, indices, statuses);
}

int MPI_Request_free(MPI_Request* request) {
  if (g_routed.empty()) return PMPI_Request_free(request);
  return shancoll::pmpi::routed_request_free(request);
}

int MPI_Cancel(MPI_Request* request) {
  if (g_routed.empty()) return PMPI_Cancel(request);
  return shancoll::pmpi::routed_cancel(request);
}

}  // extern "C"
