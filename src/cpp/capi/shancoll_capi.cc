// The C API (shancoll.h): MPI arguments -> the core's byte/element arguments.
// Every check that can refuse a call runs before the first communication, so
// a refusal is the same on every rank and leaves nothing half done; no C++
// exception crosses the C boundary.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "capi_internal.h"
#include "shancoll.h"
#include "shancoll/call_options.h"
#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/alltoallv/alltoallv.h"
#include "shancoll/coll/barrier/barrier.h"
#include "shancoll/coll/check.h"
#include "shancoll/coll/gather/gather.h"
#include "shancoll/coll/reduce_scatter/reduce_scatter.h"
#include "shancoll/coll/registry.h"
#include "shancoll/coll/request/requests.h"
#include "shancoll/coll/rooted.h"
#include "shancoll/coll/rooted_tree.h"
#include "shancoll/coll/scan/scan.h"
#include "shancoll/coll/scatter/scatter.h"
#include "shancoll/comm.h"
#include "shancoll/environment.h"
#include "shancoll/progress.h"
#include "shancoll/rules.h"

namespace shancoll::capi {
namespace {

thread_local std::string t_last_error;  // why this thread's last call failed (ThreadState)

// What was found out about the last few datatypes, per thread. Only facts
// about predefined datatypes are remembered: those never change and their
// handles are never freed, so a handle cannot come back meaning another
// type. A loop of calls then asks MPI nothing about its datatype.
template <class Fact>
class TypeMemo {
 public:
  const Fact* find(MPI_Datatype type) const {
    if (type == MPI_DATATYPE_NULL) return nullptr;  // the empty entries' type
    for (int i = 0; i < kSize; ++i)
      if (types_[i] == type) return &facts_[i];
    return nullptr;
  }
  const Fact& add(MPI_Datatype type, Fact fact) {
    const int i = next_++ % kSize;
    types_[i] = type;
    facts_[i] = fact;
    return facts_[i];
  }

 private:
  static constexpr int kSize = 4;
  MPI_Datatype types_[kSize] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL, MPI_DATATYPE_NULL,
                                MPI_DATATYPE_NULL};
  Fact facts_[kSize] = {};
  int next_ = 0;
};

struct RequestIntake;

// What the C API keeps per thread, in one constant-initialised object: each
// thread_local of a shared library costs a TLS descriptor call where a
// function uses it (-mtls-dialect=gnu2), and one with a constructor a guard
// too; the error text, a string, is touched only when a call fails.
struct ThreadState {
  bool inside = false;              // in a C API call (inside())
  bool failed = false;              // the last call failed: t_last_error says why
  const char* last_algorithm = "";  // a registry name (static)
  TreeUsed last_trees[2];           // bcast, reduce (plain data: a cheap copy per call)
  RequestIntake* intake = nullptr;  // a request form's (as_request)
  TypeMemo<std::int64_t> sizes;     // plain_size's
  TypeMemo<DType> reduction_types;  // reduction_type's
};
thread_local ThreadState t_state;

// A refusal with its MPI error class, raised before any communication.
struct Refusal : std::exception {
  int code;
  std::string why;
  Refusal(int c, std::string w) : code(c), why(std::move(w)) {}
  const char* what() const noexcept override { return why.c_str(); }
};

[[noreturn]] void refuse(int code, const std::string& why) { throw Refusal(code, why); }

// A gather's or scatter's block refused after the call's communication
// (rooted_tree.h): an error, but no refusal the MPI library may retry.
bool after_communication(const std::string& message) {
  const std::string end = kBlockNotWritten;
  return message.size() >= end.size() &&
         message.compare(message.size() - end.size(), end.size(), end) == 0;
}

// The core's ArgumentError messages start with the argument's name.
int class_of_argument_error(const std::string& message) {
  if (message.rfind("op:", 0) == 0) return MPI_ERR_OP;
  if (message.rfind("root:", 0) == 0) return MPI_ERR_ROOT;
  if (after_communication(message)) return MPI_ERR_TRUNCATE;
  return MPI_ERR_ARG;
}

// Runs one C API call: sets the "inside" flag, translates exceptions.
template <class F>
int guarded(F&& body) {
  ThreadState& t = t_state;
  struct Inside {
    ThreadState& t;
    bool saved = t.inside;
    explicit Inside(ThreadState& state) : t(state) { t.inside = true; }
    ~Inside() { t.inside = saved; }
  } inside_scope(t);
  t.failed = true;  // until the body returns
  try {
    body();
    t.failed = false;
    return MPI_SUCCESS;
  } catch (const Refusal& e) {
    t_last_error = e.why;
    return e.code;
  } catch (const ArgumentError& e) {
    t_last_error = e.what();
    return class_of_argument_error(t_last_error);
  } catch (const std::exception& e) {
    t_last_error = e.what();
  } catch (...) {
    t_last_error = "unknown C++ exception";
  }
  return MPI_ERR_OTHER;
}

void check_intracomm(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) refuse(MPI_ERR_COMM, "comm: MPI_COMM_NULL");
  if (Comm::find(comm)) return;  // set up already: only intra-communicators are
  int inter = 0;
  MPI_Comm_test_inter(comm, &inter);
  if (inter) refuse(MPI_ERR_COMM, "comm: an inter-communicator (not supported by the C API)");
}

int rank_in(MPI_Comm comm) {
  if (Comm* known = Comm::find(comm)) return known->rank();
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank;
}

int size_in(MPI_Comm comm) {
  if (Comm* known = Comm::find(comm)) return known->size();
  int size = 0;
  MPI_Comm_size(comm, &size);
  return size;
}

void check_count(MPI_Count count, const char* what) {
  if (count < 0) refuse(MPI_ERR_COUNT, std::string(what) + ": negative count");
}

std::int64_t checked_plain_size(MPI_Datatype type, const char* what);

// Bytes per element of a datatype shancoll can move as plain bytes: named
// (predefined), no holes (extent == size), lower bound 0.
std::int64_t plain_size(MPI_Datatype type, const char* what) {
  TypeMemo<std::int64_t>& memo = t_state.sizes;
  if (const std::int64_t* size = memo.find(type)) return *size;
  return memo.add(type, checked_plain_size(type, what));
}

std::int64_t checked_plain_size(MPI_Datatype type, const char* what) {
  if (type == MPI_DATATYPE_NULL) refuse(MPI_ERR_TYPE, std::string(what) + ": MPI_DATATYPE_NULL");
  int ints = 0, addresses = 0, types = 0, combiner = 0;
  MPI_Type_get_envelope(type, &ints, &addresses, &types, &combiner);
  if (combiner != MPI_COMBINER_NAMED)
    refuse(MPI_ERR_TYPE, std::string(what) + ": a derived datatype (only predefined ones)");
  int size = 0;
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_size(type, &size);
  MPI_Type_get_extent(type, &lb, &extent);
  if (size <= 0 || lb != 0 || extent != size)
    refuse(MPI_ERR_TYPE, std::string(what) + ": a predefined datatype with holes (size " +
                             std::to_string(size) + ", extent " + std::to_string(extent) + ")");
  return size;
}

DType checked_reduction_type(MPI_Datatype type);

// The core's element type of a predefined MPI datatype MPI can reduce with
// the arithmetic, logical or bitwise ops (C integer, floating point, complex,
// bool); MPI_CHAR, MPI_BYTE and pair types are left to the MPI library.
DType reduction_type(MPI_Datatype type) {
  TypeMemo<DType>& memo = t_state.reduction_types;
  if (const DType* known = memo.find(type)) return *known;
  return memo.add(type, checked_reduction_type(type));
}

DType checked_reduction_type(MPI_Datatype type) {
  struct Entry {
    MPI_Datatype mpi;
    char kind;
    int size;
  };
  static const Entry table[] = {
      {MPI_SIGNED_CHAR, 'i', 1},
      {MPI_UNSIGNED_CHAR, 'u', 1},
      {MPI_SHORT, 'i', sizeof(short)},
      {MPI_UNSIGNED_SHORT, 'u', sizeof(short)},
      {MPI_INT, 'i', sizeof(int)},
      {MPI_UNSIGNED, 'u', sizeof(int)},
      {MPI_LONG, 'i', sizeof(long)},
      {MPI_UNSIGNED_LONG, 'u', sizeof(long)},
      {MPI_LONG_LONG, 'i', sizeof(long long)},
      {MPI_UNSIGNED_LONG_LONG, 'u', sizeof(long long)},
      {MPI_INT8_T, 'i', 1},
      {MPI_UINT8_T, 'u', 1},
      {MPI_INT16_T, 'i', 2},
      {MPI_UINT16_T, 'u', 2},
      {MPI_INT32_T, 'i', 4},
      {MPI_UINT32_T, 'u', 4},
      {MPI_INT64_T, 'i', 8},
      {MPI_UINT64_T, 'u', 8},
      {MPI_AINT, 'i', sizeof(MPI_Aint)},
      {MPI_OFFSET, 'i', sizeof(MPI_Offset)},
      {MPI_COUNT, 'i', sizeof(MPI_Count)},
      {MPI_FLOAT, 'f', sizeof(float)},
      {MPI_DOUBLE, 'f', sizeof(double)},
      {MPI_LONG_DOUBLE, 'f', sizeof(long double)},
      {MPI_C_BOOL, 'b', 1},
      {MPI_C_FLOAT_COMPLEX, 'c', 2 * sizeof(float)},
      {MPI_C_DOUBLE_COMPLEX, 'c', 2 * sizeof(double)},
      {MPI_C_LONG_DOUBLE_COMPLEX, 'c', 2 * sizeof(long double)},
      // Fortran's, for programs calling from Fortran: their sizes depend on
      // the Fortran compiler's flags, so they are asked of MPI (size 0).
      {MPI_INTEGER, 'i', 0},
      {MPI_REAL, 'f', 0},
      {MPI_DOUBLE_PRECISION, 'f', 0},
      {MPI_COMPLEX, 'c', 0},
      {MPI_DOUBLE_COMPLEX, 'c', 0},
  };
  for (const Entry& e : table)
    if (e.mpi == type)
      return dtype_from_numpy(e.kind, e.size ? e.size : plain_size(type, "datatype"), "datatype");
  refuse(MPI_ERR_TYPE,
         "datatype: not a predefined C integer, floating-point, complex or bool "
         "type (shancoll reduces only those)");
}

// Where a call's own options are made, only when it has some (a
// CallOptions holds strings and vectors: not built on the plain call; an
// empty std::optional of one would zero its 400 bytes on every call).
using OptionsStorage = std::unique_ptr<CallOptions>;

// The options of a call: SHANCOLL_<COLL>_OPTIONS with `text` over it
// (completed in `storage`), or nullptr when there is no text (the door then
// takes the defaults, parsed once).
const CallOptions* call_options(Collective c, const char* text, OptionsStorage& storage) {
  if (!text || !*text) return nullptr;
  storage = std::make_unique<CallOptions>(default_options(c));
  CallOptions& options = *storage;
  options.set_text(c, text, "options");
  options.complete();
  return &options;
}

// Records what the door ran, for shancoll_last_algorithm and the PMPI
// library's verbose report.
void record(const Comm& comm) {
  ThreadState& t = t_state;
  t.last_algorithm = comm.last_algorithm;
  t.last_trees[0] = comm.last_stats.bcast_tree;
  t.last_trees[1] = comm.last_stats.reduce_tree;
}

// A request form (shancoll_i<coll>, shancoll_<coll>_init) runs its blocking
// function's argument handling with this set (as_request): where the
// blocking function calls its door, it makes the request instead.
struct RequestIntake {
  bool persistent = false;
  std::unique_ptr<Request> made;
};

// The door's call, or, inside a request form, the request of the same call.
template <class Door, class Make>
void run_or_request(Door&& door, Make&& make) {
  ThreadState& t = t_state;
  if (!t.intake) {
    door();
    return;
  }
  t.intake->made = make(t.intake->persistent);
  t.last_algorithm = t.intake->made->algorithm();
}

// A non-null receive pointer for an empty result (the core reads a null
// receive buffer as "leave the result in the node segment").
std::byte* receive_pointer(void* recvbuf) {
  static std::byte empty;
  return recvbuf ? static_cast<std::byte*>(recvbuf) : &empty;
}

// An allgather(v)'s layout in bytes, kept per thread: assign() keeps the
// arrays' capacity and the call borrows them, so a repeated call allocates
// nothing.
struct Layout {
  std::vector<std::int64_t> counts, displs;
};

Layout& thread_layout() {
  thread_local Layout layout;
  return layout;
}

// recvcounts and displs (in elements of `elem` bytes) checked, as bytes.
template <class Count, class Displ>
Layout& layout_of(const Count recvcounts[], const Displ displs[], std::int64_t elem, int size) {
  if (!recvcounts || !displs) refuse(MPI_ERR_ARG, "recvcounts/displs: NULL");
  Layout& layout = thread_layout();
  layout.counts.assign(static_cast<std::size_t>(size), 0);
  layout.displs.assign(static_cast<std::size_t>(size), 0);
  for (int r = 0; r < size; ++r) {
    check_count(recvcounts[r], "recvcounts");
    if (displs[r] < 0) refuse(MPI_ERR_ARG, "displs: negative displacement");
    layout.counts[r] = static_cast<std::int64_t>(recvcounts[r]) * elem;
    layout.displs[r] = static_cast<std::int64_t>(displs[r]) * elem;
  }
  return layout;
}

void allgatherv_bytes(Collective which, const void* sendbuf, MPI_Count sendcount,
                      MPI_Datatype sendtype, void* recvbuf, Layout& layout, MPI_Comm comm,
                      const char* algorithm, const char* options) {
  OptionsStorage storage;
  AllgathervCall call;
  call.comm = comm;
  call.allgather = which == Collective::allgather;
  call.options = call_options(which, options, storage);
  call.algorithm = algorithm ? algorithm : "";
  struct Borrowed {  // the layout's arrays, lent to the call and given back
    AllgathervArgs& args;
    Layout& layout;
    ~Borrowed() {
      args.counts.swap(layout.counts);
      args.displs.swap(layout.displs);
    }
  } borrowed{call.args, layout};
  call.args.counts.swap(layout.counts);
  call.args.displs.swap(layout.displs);
  if (sendbuf != MPI_IN_PLACE) {
    check_count(sendcount, "sendcount");
    call.send_bytes = sendcount * plain_size(sendtype, "sendtype");
    const int rank = rank_in(comm);
    const std::int64_t expected = call.args.counts[rank];
    if (call.send_bytes != expected)
      refuse(MPI_ERR_TRUNCATE, "sendcount: sends " + std::to_string(call.send_bytes) +
                                   " bytes, recvcounts[" + std::to_string(rank) + "] expects " +
                                   std::to_string(expected));
    call.args.send = static_cast<const std::byte*>(sendbuf);
  }
  if (!recvbuf && call.args.extent() > 0) refuse(MPI_ERR_BUFFER, "recvbuf: NULL");
  call.args.recv = receive_pointer(recvbuf);
  run_or_request([&] { record(allgatherv(call).comm); },
                 [&](bool persistent) { return request_of(call, persistent); });
}

// A reduction's call (allreduce, reduce, scan, exscan): the buffers, the
// element type and the op as the doors take them.
template <class Call>
Call reduction_call(MPI_Comm comm, const void* sendbuf, void* recvbuf, MPI_Count count,
                    MPI_Datatype datatype, MPI_Op op) {
  Call call;
  call.comm = comm;
  call.send = sendbuf == MPI_IN_PLACE ? nullptr : sendbuf;
  call.recv = recvbuf;
  call.count = count;
  call.type = reduction_type(datatype);
  call.datatype = datatype;
  call.op = op;
  return call;
}

// A bcast's call: the buffer, its bytes and the root as the door takes them.
BcastCall bcast_call(MPI_Comm comm, void* buffer, MPI_Count count, MPI_Datatype datatype,
                     int root) {
  BcastCall call;
  call.comm = comm;
  call.buf = buffer;
  call.bytes = count * plain_size(datatype, "datatype");
  call.root = root;
  return call;
}

// An allreduce's call, checked; `storage` holds its options.
AllreduceCall allreduce_call(Collective which, const void* sendbuf, void* recvbuf, MPI_Count count,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const char* algorithm,
                             const char* options, OptionsStorage& storage) {
  check_intracomm(comm);
  check_count(count, "count");
  if (!recvbuf && count > 0) refuse(MPI_ERR_BUFFER, "recvbuf: NULL");
  AllreduceCall call = reduction_call<AllreduceCall>(comm, sendbuf, recvbuf, count, datatype, op);
  call.algorithm = algorithm ? algorithm : "";
  call.options = call_options(which, options, storage);
  return call;
}

// A scan's or exscan's call, checked, run through its door.
void run_scan(bool exclusive, const void* sendbuf, void* recvbuf, MPI_Count count,
              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const char* algorithm,
              const char* options) {
  check_intracomm(comm);
  check_count(count, "count");
  if (!recvbuf && count > 0) refuse(MPI_ERR_BUFFER, "recvbuf: NULL");
  OptionsStorage storage;
  ScanCall call = reduction_call<ScanCall>(comm, sendbuf, recvbuf, count, datatype, op);
  call.algorithm = algorithm ? algorithm : "";
  call.options = call_options(exclusive ? Collective::exscan : Collective::scan, options, storage);
  run_or_request([&] { record(exclusive ? exscan(call) : scan(call)); },
                 [&](bool persistent) { return request_of(call, exclusive, persistent); });
}

// A reduce_scatter(_block)'s call, checked, run through its door: `counts`
// (null for the block form, whose count is `count`) copied into a per-thread
// array that only grows, so a repeated call allocates nothing.
template <class Count>
void run_reduce_scatter(const void* sendbuf, void* recvbuf, const Count* counts, MPI_Count count,
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const char* algorithm,
                        const char* options) {
  check_intracomm(comm);
  const bool block = counts == nullptr;
  thread_local std::vector<std::int64_t> wide;
  if (block) {
    check_count(count, "recvcount");
  } else {
    int size = 0;
    MPI_Comm_size(comm, &size);
    wide.resize(static_cast<std::size_t>(size));
    for (int q = 0; q < size; ++q) {
      check_count(counts[q], "recvcounts");
      wide[static_cast<std::size_t>(q)] = counts[q];
    }
  }
  OptionsStorage storage;
  ReduceScatterCall call;
  call.comm = comm;
  call.send = sendbuf == MPI_IN_PLACE ? nullptr : sendbuf;
  call.recv = recvbuf;
  call.counts = block ? nullptr : wide.data();
  call.count = count;
  call.type = reduction_type(datatype);
  call.datatype = datatype;
  call.op = op;
  call.algorithm = algorithm ? algorithm : "";
  const Collective which = block ? Collective::reduce_scatter_block : Collective::reduce_scatter;
  call.options = call_options(which, options, storage);
  run_or_request([&] { record(block ? reduce_scatter_block(call) : reduce_scatter(call)); },
                 [&](bool persistent) { return request_of(call, block, persistent); });
}

// An alltoall(v)'s two layouts in bytes, kept per thread and lent to the
// call as allgatherv's: a repeated call allocates nothing.
struct AlltoallLayout {
  Layout send, recv;
};

AlltoallLayout& thread_alltoall_layout() {
  thread_local AlltoallLayout layout;
  return layout;
}

// counts and displs (in elements of `elem` bytes) checked, as bytes in `out`.
template <class Count, class Displ>
void vector_layout(const Count counts[], const Displ displs[], std::int64_t elem, int size,
                   const char* side, Layout& out) {
  if (!counts || !displs) refuse(MPI_ERR_ARG, std::string(side) + "counts/displs: NULL");
  out.counts.resize(static_cast<std::size_t>(size));
  out.displs.resize(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    check_count(counts[r], (std::string(side) + "counts").c_str());
    if (displs[r] < 0) refuse(MPI_ERR_ARG, std::string(side) + "displs: negative displacement");
    out.counts[r] = static_cast<std::int64_t>(counts[r]) * elem;
    out.displs[r] = static_cast<std::int64_t>(displs[r]) * elem;
  }
}

// P blocks of `block` bytes, in rank order.
void regular_layout(std::int64_t block, int size, Layout& out) {
  out.counts.assign(static_cast<std::size_t>(size), block);
  out.displs.resize(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) out.displs[r] = r * block;
}

std::int64_t extent_of(const Layout& l) {
  std::int64_t e = 0;
  for (std::size_t r = 0; r < l.counts.size(); ++r)
    if (l.counts[r] > 0) e = std::max(e, l.displs[r] + l.counts[r]);
  return e;
}

// The call on the thread's layouts (send's unused in place).
void alltoallv_bytes(Collective which, const void* sendbuf, void* recvbuf, MPI_Comm comm,
                     const char* algorithm, const char* options) {
  AlltoallLayout& layout = thread_alltoall_layout();
  OptionsStorage storage;
  AlltoallvCall call;
  call.comm = comm;
  call.alltoall = which == Collective::alltoall;
  call.options = call_options(which, options, storage);
  call.algorithm = algorithm ? algorithm : "";
  AlltoallvArgs& a = call.args;
  a.regular = call.alltoall;
  if (!recvbuf && extent_of(layout.recv) > 0) refuse(MPI_ERR_BUFFER, "recvbuf: NULL");
  a.recv = receive_pointer(recvbuf);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (!in_place) {
    if (!sendbuf && extent_of(layout.send) > 0) refuse(MPI_ERR_BUFFER, "sendbuf: NULL");
    a.send = receive_pointer(const_cast<void*>(sendbuf));  // non-null: null means in place
  }
  struct Borrowed {  // the layouts' arrays, lent to the call and given back
    AlltoallvArgs& args;
    AlltoallLayout& layout;
    bool send;
    void swap() {
      args.recv_counts.swap(layout.recv.counts);
      args.recv_displs.swap(layout.recv.displs);
      if (!send) return;
      args.send_counts.swap(layout.send.counts);
      args.send_displs.swap(layout.send.displs);
    }
    ~Borrowed() { swap(); }
  } borrowed{a, layout, !in_place};
  borrowed.swap();
  run_or_request([&] { record(alltoallv(call)); },
                 [&](bool persistent) { return request_of(call, persistent); });
}

// The rank and size of an intra-communicator, and whether it is the root
// (a root out of range is nobody's: the door refuses it on every rank).
struct Place {
  int rank = 0, size = 0;
  bool root = false;
};

Place place_of(MPI_Comm comm, int root) {
  check_intracomm(comm);
  Place p;
  if (Comm* known = Comm::find(comm)) {
    p.rank = known->rank();
    p.size = known->size();
  } else {
    MPI_Comm_rank(comm, &p.rank);
    MPI_Comm_size(comm, &p.size);
  }
  p.root = p.rank == root;
  return p;
}

// ---------------------------------------------------------------------------
// Gather(v) and scatter(v). Each rank alone sees its own block's datatype
// (a gather's sendtype, a scatter's recvtype), and the root alone its
// layout's (recvtype, sendtype): refusing a derived one there would send
// that rank to the MPI library while the others wait in shancoll. So a
// datatype that is not plain bytes is staged: packed into (or unpacked from)
// this thread's staging memory by the MPI library (MPI_Pack, MPI_Unpack; on
// the homogeneous nodes shancoll runs on, the packed form of elements
// without holes is their bytes, which is what the plain side sends or
// expects), and the call runs in shancoll all the same.

// Bytes per element of `type`, and whether they lie in memory as they are
// (plain_size's test: named, no holes).
struct TypeBytes {
  std::int64_t size = 0;
  bool plain = true;
};

TypeBytes type_bytes(MPI_Datatype type, const char* what) {
  try {
    return {plain_size(type, what), true};
  } catch (const Refusal&) {
    if (type == MPI_DATATYPE_NULL) throw;
    MPI_Count size = 0;
    MPI_Type_size_x(type, &size);
    return {static_cast<std::int64_t>(size), false};
  }
}

MPI_Aint extent_of(MPI_Datatype type) {
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(type, &lb, &extent);
  return extent;
}

// This thread's staging memory: [0] a rank's own block, [1] the root's layout.
// A request's schedule (a request under `mpi` passes datatypes to MPI, as
// typed_request does) cannot use it: the next call of the thread reuses it.
std::byte* stage(int which, std::int64_t bytes, const char* type_name, int rank) {
  if (t_state.intake)
    refuse(MPI_ERR_TYPE, std::string(type_name) + ": a datatype whose bytes do not lie as they " +
                             "are (derived, holes) on rank " + std::to_string(rank) +
                             ": a request's shancoll schedule moves plain bytes; algorithm "
                             "'mpi' (or auto) passes the datatype to MPI");
  thread_local std::vector<std::byte> memory[2];
  std::vector<std::byte>& m = memory[which];
  if (m.size() < static_cast<std::size_t>(bytes)) m.resize(static_cast<std::size_t>(bytes));
  return m.data();
}

void pack(const void* typed, MPI_Count count, MPI_Datatype type, std::byte* out,
          std::int64_t bytes) {
#if MPI_VERSION >= 4
  MPI_Count at = 0;
  check_mpi(PMPI_Pack_c(typed, count, type, out, bytes, &at, MPI_COMM_SELF), "MPI_Pack_c");
#else
  int at = 0;
  check_mpi(PMPI_Pack(typed, static_cast<int>(count), type, out, static_cast<int>(bytes), &at,
                      MPI_COMM_SELF),
            "MPI_Pack");
#endif
}

void unpack(const std::byte* in, std::int64_t bytes, void* typed, MPI_Count count,
            MPI_Datatype type) {
#if MPI_VERSION >= 4
  MPI_Count at = 0;
  check_mpi(PMPI_Unpack_c(in, bytes, &at, typed, count, type, MPI_COMM_SELF), "MPI_Unpack_c");
#else
  int at = 0;
  check_mpi(PMPI_Unpack(in, static_cast<int>(bytes), &at, typed, static_cast<int>(count), type,
                        MPI_COMM_SELF),
            "MPI_Unpack");
#endif
}

// This rank's block: `count` elements of `type` at `buf`, as bytes (staged
// when the type is not plain); MPI_IN_PLACE (the root only) leaves `bytes`
// at -1. `outgoing`: a gather's (packed now), else a scatter's (unpack()
// after the call).
struct OwnBlock {
  std::byte* data = nullptr;
  std::int64_t bytes = -1;
  void* typed = nullptr;  // the caller's buffer when staged
  MPI_Count count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;

  void unpack_staged() const {
    if (typed) unpack(data, bytes, typed, count, type);
  }
};

OwnBlock own_block(const void* buf, MPI_Count count, MPI_Datatype type, const Place& p,
                   bool outgoing, const char* name, const char* type_name) {
  if (buf == MPI_IN_PLACE) {
    if (!p.root)
      refuse(MPI_ERR_BUFFER, std::string(name) + ": MPI_IN_PLACE is only valid at the root");
    return {};
  }
  check_count(count, name);
  const TypeBytes t = type_bytes(type, type_name);
  OwnBlock b;
  b.data = static_cast<std::byte*>(const_cast<void*>(buf));
  b.bytes = count * t.size;
  if (!buf && b.bytes > 0) refuse(MPI_ERR_BUFFER, std::string(name) + ": NULL");
  if (t.plain) return b;
  b.data = stage(0, b.bytes, type_name, p.rank);
  if (outgoing) {
    pack(buf, count, type, b.data, b.bytes);
  } else {
    b.typed = const_cast<void*>(buf), b.count = count, b.type = type;
  }
  return b;
}

// The root's layout: counts and displacements in elements of `type` over
// `buf` (regular: `count` each, in rank order), as bytes; staged when the
// type is not plain, the blocks then back to back in rank order.
template <class Count, class Displ>
struct RootLayout {
  const Count* counts;  // null: regular
  const Displ* displs;
  MPI_Count count;  // regular
  MPI_Datatype type;
  std::byte* typed;  // the caller's buffer
  std::byte* buf;    // the bytes the core reads or writes: `typed`, or the staging memory
  bool staged = false;
  Layout* layout = nullptr;

  MPI_Count count_of(int r) const { return counts ? static_cast<MPI_Count>(counts[r]) : count; }
  MPI_Aint displ_of(int r) const {
    return counts ? static_cast<MPI_Aint>(displs[r]) : static_cast<MPI_Aint>(r * count);
  }
  std::byte* typed_block(int r) const { return typed + displ_of(r) * extent_of(type); }

  // Checks and makes the byte layout; `in_place_root`: the root's own block
  // is already in `buf` (a gather in place), staged too when the rest is.
  void make(int size, int root, bool in_place_root, const char* what, const char* type_name) {
    if (!counts) check_count(count, what);
    const TypeBytes t = type_bytes(type, type_name);
    staged = !t.plain;
    layout = &thread_layout();
    layout->counts.assign(static_cast<std::size_t>(size), 0);
    layout->displs.assign(static_cast<std::size_t>(size), 0);
    std::int64_t packed = 0;
    for (int r = 0; r < size; ++r) {
      check_count(count_of(r), what);
      if (displ_of(r) < 0) refuse(MPI_ERR_ARG, "displs: negative displacement");
      layout->counts[r] = count_of(r) * t.size;
      layout->displs[r] = staged ? packed : displ_of(r) * t.size;
      packed += layout->counts[r];
    }
    if (!staged) return;
    std::byte* staging = stage(1, packed, type_name, root);  // make() runs at the root
    if (in_place_root)
      pack(typed_block(root), count_of(root), type, staging + layout->displs[root],
           layout->counts[root]);
    buf = staging;
  }
};

// Counts and displacements as given (int or MPI_Count/MPI_Aint), or none.
template <class Count, class Displ>
RootLayout<Count, Displ> root_layout(const Count counts[], const Displ displs[], MPI_Count count,
                                     MPI_Datatype type, const void* buf) {
  std::byte* const typed = static_cast<std::byte*>(const_cast<void*>(buf));
  return {counts, displs, count, type, typed, typed};
}

// The gather(v) of `which`: every rank's `mine`, the root's `root`.
template <class Count, class Displ>
void gather_bytes(Collective which, const OwnBlock& mine, RootLayout<Count, Displ>* root_side,
                  int root, MPI_Comm comm, const char* algorithm, const char* options) {
  OptionsStorage storage;
  GathervCall call;
  call.comm = comm;
  call.args.root = root;
  call.args.regular = which == Collective::gather;
  call.args.send = mine.bytes >= 0 ? mine.data : nullptr;
  call.args.send_bytes = mine.bytes;
  if (root_side) {
    call.args.counts = root_side->layout->counts.data();
    call.args.displs = root_side->layout->displs.data();
    call.args.recv = root_side->buf;
    if (mine.bytes < 0) call.args.send_bytes = root_side->layout->counts[root];
  }
  call.algorithm = algorithm ? algorithm : "";
  call.options = call_options(which, options, storage);
  run_or_request([&] { record(gatherv(call)); },
                 [&](bool persistent) { return request_of(call, persistent); });
  if (!root_side || !root_side->staged) return;
  for (std::size_t r = 0; r < root_side->layout->counts.size(); ++r)
    unpack(root_side->buf + root_side->layout->displs[r], root_side->layout->counts[r],
           root_side->typed_block(static_cast<int>(r)), root_side->count_of(static_cast<int>(r)),
           root_side->type);
}

template <class Count, class Displ>
void scatter_bytes(Collective which, const OwnBlock& mine, RootLayout<Count, Displ>* root_side,
                   int root, MPI_Comm comm, const char* algorithm, const char* options) {
  OptionsStorage storage;
  ScattervCall call;
  call.comm = comm;
  call.args.root = root;
  call.args.regular = which == Collective::scatter;
  call.args.recv = mine.bytes >= 0 ? mine.data : nullptr;
  call.args.recv_bytes = mine.bytes;
  if (root_side) {
    call.args.counts = root_side->layout->counts.data();
    call.args.displs = root_side->layout->displs.data();
    call.args.send = root_side->buf;
    if (mine.bytes < 0) call.args.recv_bytes = root_side->layout->counts[root];
  }
  call.algorithm = algorithm ? algorithm : "";
  call.options = call_options(which, options, storage);
  run_or_request([&] { record(scatterv(call)); },
                 [&](bool persistent) { return request_of(call, persistent); });
  mine.unpack_staged();
}

// Whether `type` is one the doors take as bytes (plain_size); false for
// any other, MPI_DATATYPE_NULL included (the typed path refuses it).
bool plain_type(MPI_Datatype type) {
  try {
    return type_bytes(type, "datatype").plain;
  } catch (const Refusal&) {
    return false;
  }
}

// Inside a request form: whether the request takes the caller's datatypes
// as they are (TypedRooted): one that runs `mpi` (by name: the call's
// algorithm, else SHANCOLL_I<COLL>_ALGORITHM; or a nonblocking `auto`), and
// a persistent `auto` where this rank's datatypes are not `plain` (the
// door's persistent engines take plain bytes only; its ranks agree there,
// at _init, on `mpi` when any rank's call is typed). A name without a
// request form is refused here, before any datatype is looked at.
bool typed_request(const char* collective, const char* algorithm, bool plain) {
  if (!t_state.intake) return false;
  const char* given = algorithm ? algorithm : "";
  if (std::string_view(request_algorithm(given, collective)) != "mpi") return false;
  if (t_state.intake->persistent && request_asks_auto(given, collective)) return !plain;
  return true;
}

// A gather's or scatter's request under `mpi` (or a persistent `auto`,
// typed_request): the caller's buffers and datatypes as they are
// (TypedRooted), whatever the datatypes.
template <class Call, class Count, class Displ>
void request_typed(Collective which, MPI_Comm comm, int root, const char* algorithm,
                   const char* options, const Place& p, const void* block, MPI_Count block_count,
                   MPI_Datatype block_type, const void* layout_buf, const Count* counts,
                   const Displ* displs, MPI_Count count, MPI_Datatype layout_type,
                   const char* block_name, const char* counts_name) {
  OptionsStorage storage;
  Call call;
  call.comm = comm;
  call.args.root = root;
  call.args.regular = which == Collective::gather || which == Collective::scatter;
  call.algorithm = algorithm ? algorithm : "";  // as the caller named it (typed_request)
  call.options = call_options(which, options, storage);
  TypedRooted t;
  if (block == MPI_IN_PLACE && !p.root)
    refuse(MPI_ERR_BUFFER, std::string(block_name) + ": MPI_IN_PLACE is only valid at the root");
  if (block != MPI_IN_PLACE) check_count(block_count, block_name);
  t.block = block, t.block_count = block_count, t.block_type = block_type;
  t.layout_buf = const_cast<void*>(layout_buf), t.layout_type = layout_type;
  if (p.root && counts) {
    for (int r = 0; r < p.size; ++r) {
      check_count(counts[r], counts_name);
      t.counts.push_back(counts[r]);
      t.displs.push_back(displs[r]);
    }
  } else if (p.root) {
    check_count(count, counts_name);
    t.count = count;
  }
  call.typed = &t;
  t_state.intake->made = request_of(call, t_state.intake->persistent);
  t_state.last_algorithm = t_state.intake->made->algorithm();
}

// One gather(v): `counts` null for a gather of `count` each.
template <class Count, class Displ>
void gather_call(Collective which, const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                 void* recvbuf, const Count* counts, const Displ* displs, MPI_Count count,
                 MPI_Datatype recvtype, int root, MPI_Comm comm, const char* algorithm,
                 const char* options) {
  const Place p = place_of(comm, root);
  if (which == Collective::gatherv && p.root && (!counts || !displs))
    refuse(MPI_ERR_ARG, "recvcounts/displs: NULL at the root");
  const bool plain =
      !t_state.intake ||  // read by request forms only
      ((sendbuf == MPI_IN_PLACE || plain_type(sendtype)) && (!p.root || plain_type(recvtype)));
  if (typed_request(which == Collective::gather ? "gather" : "gatherv", algorithm, plain)) {
    request_typed<GathervCall>(which, comm, root, algorithm, options, p, sendbuf, sendcount,
                               sendtype, recvbuf, counts, displs, count, recvtype, "sendbuf",
                               "recvcounts");
    return;
  }
  const OwnBlock mine = own_block(sendbuf, sendcount, sendtype, p, true, "sendbuf", "sendtype");
  RootLayout<Count, Displ> side = root_layout(counts, displs, count, recvtype, recvbuf);
  if (p.root) {
    side.make(p.size, root, mine.bytes < 0, "recvcounts", "recvtype");
  }
  gather_bytes(which, mine, p.root ? &side : nullptr, root, comm, algorithm, options);
}

template <class Count, class Displ>
void scatter_call(Collective which, const void* sendbuf, const Count* counts, const Displ* displs,
                  MPI_Count count, MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount,
                  MPI_Datatype recvtype, int root, MPI_Comm comm, const char* algorithm,
                  const char* options) {
  const Place p = place_of(comm, root);
  if (which == Collective::scatterv && p.root && (!counts || !displs))
    refuse(MPI_ERR_ARG, "sendcounts/displs: NULL at the root");
  const bool plain =
      !t_state.intake ||  // read by request forms only
      ((recvbuf == MPI_IN_PLACE || plain_type(recvtype)) && (!p.root || plain_type(sendtype)));
  if (typed_request(which == Collective::scatter ? "scatter" : "scatterv", algorithm, plain)) {
    request_typed<ScattervCall>(which, comm, root, algorithm, options, p, recvbuf, recvcount,
                                recvtype, sendbuf, counts, displs, count, sendtype, "recvbuf",
                                "sendcounts");
    return;
  }
  const OwnBlock mine = own_block(recvbuf, recvcount, recvtype, p, false, "recvbuf", "recvtype");
  RootLayout<Count, Displ> side = root_layout(counts, displs, count, sendtype, sendbuf);
  if (p.root) {
    side.make(p.size, root, false, "sendcounts", "sendtype");
    if (side.staged) {  // every block packed, in rank order
      for (int r = 0; r < p.size; ++r)
        pack(side.typed_block(r), side.count_of(r), sendtype, side.buf + side.layout->displs[r],
             side.layout->counts[r]);
    }
  }
  scatter_bytes(which, mine, p.root ? &side : nullptr, root, comm, algorithm, options);
}

// `door_repeat()` (a door's <coll>_repeat) as a C API call: true when it
// ran the call or failed in it, with `rc` set as guarded() sets it.
template <class DoorRepeat>
bool repeat(Comm& comm, int& rc, DoorRepeat&& door_repeat) {
  bool taken = false;
  rc = guarded([&] {
    taken = door_repeat();
    if (taken) record(comm);
  });
  return taken || rc != MPI_SUCCESS;
}

}  // namespace

bool repeat_bcast(Comm& comm, MPI_Comm user, void* buffer, MPI_Count count, MPI_Datatype datatype,
                  int root, int& rc) {
  return repeat(comm, rc, [&] {
    return bcast_repeat(comm, bcast_call(user, buffer, count, datatype, root));
  });
}

bool repeat_reduce(Comm& comm, MPI_Comm user, const void* sendbuf, void* recvbuf, MPI_Count count,
                   MPI_Datatype datatype, MPI_Op op, int root, int& rc) {
  return repeat(comm, rc, [&] {
    ReduceCall call = reduction_call<ReduceCall>(user, sendbuf, recvbuf, count, datatype, op);
    call.root = root;
    return reduce_repeat(comm, call);
  });
}

bool repeat_allreduce(Comm& comm, MPI_Comm user, const void* sendbuf, void* recvbuf,
                      MPI_Count count, MPI_Datatype datatype, MPI_Op op, int& rc) {
  return repeat(comm, rc, [&] {
    return allreduce_repeat(
        comm, reduction_call<AllreduceCall>(user, sendbuf, recvbuf, count, datatype, op));
  });
}

bool repeat_barrier(Comm& comm, MPI_Comm user, int& rc) {
  return repeat(comm, rc, [&] {
    BarrierCall call;
    call.comm = user;
    return barrier_repeat(comm, call);
  });
}

// A block as the repeat paths read it: `count` elements of `type`, a
// predefined datatype this thread has sized before (plain_size's memo); -1
// for any other, which goes the long way (a derived one is staged or left
// to the library there).
std::int64_t known_bytes(MPI_Count count, MPI_Datatype type) {
  const std::int64_t* size = t_state.sizes.find(type);
  return size ? count * *size : -1;
}

// Allgather and alltoall: the route's key held the send side that passed
// before (its bytes equal to the block's, or in place); a null buffer where
// bytes move goes the long way, which refuses it.
template <class Call, class Repeat>
bool repeat_exchange(Comm& comm, const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                     MPI_Datatype recvtype, int& rc, Repeat&& door_repeat) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const std::int64_t block = known_bytes(recvcount, recvtype);
  if (block < 0 || (block > 0 && (!recvbuf || (!in_place && !sendbuf)))) return false;
  return repeat(comm, rc, [&] {
    Call call;
    call.send = in_place ? nullptr : static_cast<const std::byte*>(sendbuf);
    call.recv = receive_pointer(recvbuf);
    call.block = block;
    return door_repeat(call);
  });
}

bool repeat_allgather(Comm& comm, const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                      MPI_Datatype recvtype, int& rc) {
  return repeat_exchange<AllgatherRepeat>(
      comm, sendbuf, recvbuf, recvcount, recvtype, rc,
      [&](const AllgatherRepeat& call) { return allgather_repeat(comm, call); });
}

bool repeat_alltoall(Comm& comm, const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                     MPI_Datatype recvtype, int& rc) {
  return repeat_exchange<AlltoallRepeat>(
      comm, sendbuf, recvbuf, recvcount, recvtype, rc,
      [&](const AlltoallRepeat& call) { return alltoall_repeat(comm, call); });
}

bool repeat_reduce_scatter_block(Comm& comm, MPI_Comm user, const void* sendbuf, void* recvbuf,
                                 MPI_Count recvcount, MPI_Datatype datatype, MPI_Op op, int& rc) {
  return repeat(comm, rc, [&] {
    ReduceScatterCall call =
        reduction_call<ReduceScatterCall>(user, sendbuf, recvbuf, recvcount, datatype, op);
    return reduce_scatter_block_repeat(comm, call);
  });
}

bool repeat_scan(Comm& comm, MPI_Comm user, const void* sendbuf, void* recvbuf, MPI_Count count,
                 MPI_Datatype datatype, MPI_Op op, bool exclusive, int& rc) {
  return repeat(comm, rc, [&] {
    const ScanCall call = reduction_call<ScanCall>(user, sendbuf, recvbuf, count, datatype, op);
    return exclusive ? exscan_repeat(comm, call) : scan_repeat(comm, call);
  });
}

// Gather and scatter: `block` bytes on every rank, and the root's other side
// (`layout`: the root's receive or send buffer and its count and type) of
// the same bytes, unless the root's own block is in place; a null buffer
// where bytes move, or a datatype not sized before, goes the long way.
struct RootedRepeat {
  std::int64_t block = -1;
  bool in_place = false;
};
RootedRepeat rooted_repeat(bool at_root, const void* own, MPI_Count own_count,
                           MPI_Datatype own_type, const void* layout, MPI_Count layout_count,
                           MPI_Datatype layout_type) {
  RootedRepeat r;
  r.in_place = at_root && own == MPI_IN_PLACE;
  const std::int64_t mine = r.in_place ? -1 : known_bytes(own_count, own_type);
  const std::int64_t root_side = at_root ? known_bytes(layout_count, layout_type) : -1;
  if (at_root && (root_side < 0 || (!r.in_place && mine != root_side))) return {};
  r.block = r.in_place ? root_side : mine;
  const bool empty = r.block == 0;
  if (r.block < 0 || (!empty && ((!r.in_place && !own) || (at_root && !layout)))) return {};
  return r;
}

bool repeat_gather(Comm& comm, const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                   void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root, int& rc) {
  const bool at_root = comm.rank() == root;
  const RootedRepeat r =
      rooted_repeat(at_root, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
  if (r.block < 0) return false;
  return repeat(comm, rc, [&] {
    GatherRepeat call;
    call.send = r.in_place ? nullptr : static_cast<const std::byte*>(sendbuf);
    call.recv = at_root ? receive_pointer(recvbuf) : nullptr;
    call.block = r.block;
    call.root = root;
    return gather_repeat(comm, call);
  });
}

bool repeat_scatter(Comm& comm, const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                    void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root, int& rc) {
  const bool at_root = comm.rank() == root;
  const RootedRepeat r =
      rooted_repeat(at_root, recvbuf, recvcount, recvtype, sendbuf, sendcount, sendtype);
  if (r.block < 0) return false;
  return repeat(comm, rc, [&] {
    ScatterRepeat call;
    call.send = at_root ? static_cast<const std::byte*>(sendbuf) : nullptr;
    call.recv = r.in_place ? nullptr : receive_pointer(recvbuf);
    call.block = r.block;
    call.root = root;
    return scatter_repeat(comm, call);
  });
}

bool inside() { return t_state.inside; }

// A checked-mode disagreement ("check: ...", coll/check.h) is refused too,
// but the MPI library must not run the call either: its arguments disagree.
bool refused(int code) {
  return code != MPI_SUCCESS && code != MPI_ERR_OTHER && t_last_error.rfind("check:", 0) != 0 &&
         !after_communication(t_last_error);
}

std::string last_trees() {
  std::string out;
  for (const char* phase : {"reduce", "bcast"}) {
    const std::string tree = describe(t_state.last_trees[phase[0] == 'b' ? 0 : 1]);
    if (tree.empty()) continue;
    out += (out.empty() ? "" : "; ") + std::string(phase) + " tree: " + tree;
  }
  return out;
}

}  // namespace shancoll::capi

using namespace shancoll;
using namespace shancoll::capi;

// A request (nonblocking or persistent) and the timeout of its waits.
struct shancoll_request_s {
  std::unique_ptr<Request> request;
  double timeout;
};

// Frees the request and nulls the caller's handle on scope exit, unless told
// to keep it (still running, timed out and resumable, or persistent: freed
// by shancoll_request_free only).
struct Release {
  shancoll_request* request;
  bool keep = false;
  ~Release() {
    if (keep || (*request)->request->persistent()) return;
    delete *request;
    *request = SHANCOLL_REQUEST_NULL;
  }
};

namespace {

// Runs `blocking_form` (the blocking C function on the same arguments) in
// request mode and hands the request it made to the caller. A refusal
// before the core's door (this rank's own arguments) is every rank's where
// the ranks compare the call (refuse_before_door: checked mode, _init, the
// call that sets the communicator up).
template <class F>
int as_request(shancoll_request* request, bool persistent, MPI_Comm comm, F&& blocking_form) {
  if (!request) return guarded([] { refuse(MPI_ERR_REQUEST, "request: NULL"); });
  *request = SHANCOLL_REQUEST_NULL;
  RequestIntake intake;
  intake.persistent = persistent;
  t_state.intake = &intake;
  door_compared() = false;
  const int rc = blocking_form();
  t_state.intake = nullptr;
  if (rc != MPI_SUCCESS && refused(rc) && !door_compared()) {
    const std::string why = t_last_error;
    const int everywhere =
        guarded([&] { refuse_before_door(comm, "the request", why, persistent); });
    if (everywhere != MPI_SUCCESS) return everywhere;
    t_state.failed = true;  // no comparison: this rank's own refusal stands
    return rc;
  }
  if (rc != MPI_SUCCESS) return rc;
  auto made = std::make_unique<shancoll_request_s>();
  made->timeout = intake.made->timeout();
  made->request = std::move(intake.made);
  *request = made.release();
  return MPI_SUCCESS;
}

}  // namespace

namespace shancoll::capi {

bool request_progress(shancoll_request request, std::size_t& rounds, double& timeout) {
  if (!request) return false;
  timeout = request->timeout;
  return request->request->rounds_done(rounds);
}

void free_request(shancoll_request* request) {
  delete *request;
  *request = SHANCOLL_REQUEST_NULL;
}

}  // namespace shancoll::capi

extern "C" {

// The int-count functions forward to the large-count ones (MPI_Count,
// MPI_Aint displacements), which do the work.

int shancoll_allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm,
                       const char* options) {
  return shancoll_allgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                              algorithm, options);
}

int shancoll_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                        MPI_Comm comm, const char* algorithm, const char* options) {
  return guarded([&] {
    check_intracomm(comm);
    const std::int64_t elem = plain_size(recvtype, "recvtype");
    int size = 0;
    MPI_Comm_size(comm, &size);
    allgatherv_bytes(Collective::allgatherv, sendbuf, sendcount, sendtype, recvbuf,
                     layout_of(recvcounts, displs, elem, size), comm, algorithm, options);
  });
}

int shancoll_allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options) {
  return shancoll_allreduce_c(sendbuf, recvbuf, count, datatype, op, comm, algorithm, options);
}

int shancoll_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm,
                      const char* options) {
  return shancoll_alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                             algorithm, options);
}

int shancoll_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                       MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                       const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                       const char* algorithm, const char* options) {
  return guarded([&] {
    check_intracomm(comm);
    int size = 0;
    MPI_Comm_size(comm, &size);
    AlltoallLayout& layout = thread_alltoall_layout();
    vector_layout(recvcounts, rdispls, plain_size(recvtype, "recvtype"), size, "recv", layout.recv);
    if (sendbuf != MPI_IN_PLACE)
      vector_layout(sendcounts, sdispls, plain_size(sendtype, "sendtype"), size, "send",
                    layout.send);
    alltoallv_bytes(Collective::alltoallv, sendbuf, recvbuf, comm, algorithm, options);
  });
}

int shancoll_barrier(MPI_Comm comm, const char* algorithm, const char* options) {
  return guarded([&] {
    check_intracomm(comm);
    OptionsStorage storage;
    BarrierCall call;
    call.comm = comm;
    call.algorithm = algorithm ? algorithm : "";
    call.options = call_options(Collective::barrier, options, storage);
    run_or_request([&] { record(barrier(call)); },
                   [&](bool persistent) { return request_of(call, persistent); });
  });
}

int shancoll_bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                   const char* algorithm, const char* options) {
  return shancoll_bcast_c(buffer, count, datatype, root, comm, algorithm, options);
}

int shancoll_reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                    int root, MPI_Comm comm, const char* algorithm, const char* options) {
  return shancoll_reduce_c(sendbuf, recvbuf, count, datatype, op, root, comm, algorithm, options);
}

int shancoll_allgather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                         void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                         const char* algorithm, const char* options) {
  return guarded([&] {
    check_intracomm(comm);
    check_count(recvcount, "recvcount");
    const std::int64_t block = recvcount * plain_size(recvtype, "recvtype");
    const int size = size_in(comm);
    Layout& layout = thread_layout();
    layout.counts.assign(static_cast<std::size_t>(size), block);
    layout.displs.resize(static_cast<std::size_t>(size));
    for (int r = 0; r < size; ++r) layout.displs[r] = r * block;
    allgatherv_bytes(Collective::allgather, sendbuf, sendcount, sendtype, recvbuf, layout, comm,
                     algorithm, options);
  });
}

int shancoll_allgatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                          void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                          MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm,
                          const char* options) {
  return guarded([&] {
    check_intracomm(comm);
    const std::int64_t elem = plain_size(recvtype, "recvtype");
    int size = 0;
    MPI_Comm_size(comm, &size);
    allgatherv_bytes(Collective::allgatherv, sendbuf, sendcount, sendtype, recvbuf,
                     layout_of(recvcounts, displs, elem, size), comm, algorithm, options);
  });
}

int shancoll_alltoall_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                        const char* algorithm, const char* options) {
  return guarded([&] {
    check_intracomm(comm);
    check_count(recvcount, "recvcount");
    int size = 0;
    MPI_Comm_size(comm, &size);
    const std::int64_t block = recvcount * plain_size(recvtype, "recvtype");
    AlltoallLayout& layout = thread_alltoall_layout();
    regular_layout(block, size, layout.recv);
    if (sendbuf != MPI_IN_PLACE) {
      check_count(sendcount, "sendcount");
      const std::int64_t sent = sendcount * plain_size(sendtype, "sendtype");
      if (sent != block)
        refuse(MPI_ERR_TRUNCATE, "sendcount: sends " + std::to_string(sent) +
                                     " bytes per rank, recvcount expects " + std::to_string(block));
      regular_layout(block, size, layout.send);
    }
    alltoallv_bytes(Collective::alltoall, sendbuf, recvbuf, comm, algorithm, options);
  });
}

int shancoll_alltoallv_c(const void* sendbuf, const MPI_Count sendcounts[],
                         const MPI_Aint sdispls[], MPI_Datatype sendtype, void* recvbuf,
                         const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                         MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm,
                         const char* options) {
  return guarded([&] {
    check_intracomm(comm);
    int size = 0;
    MPI_Comm_size(comm, &size);
    AlltoallLayout& layout = thread_alltoall_layout();
    vector_layout(recvcounts, rdispls, plain_size(recvtype, "recvtype"), size, "recv", layout.recv);
    if (sendbuf != MPI_IN_PLACE)
      vector_layout(sendcounts, sdispls, plain_size(sendtype, "sendtype"), size, "send",
                    layout.send);
    alltoallv_bytes(Collective::alltoallv, sendbuf, recvbuf, comm, algorithm, options);
  });
}

int shancoll_allreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options) {
  return guarded([&] {
    OptionsStorage storage;
    const AllreduceCall call = allreduce_call(Collective::allreduce, sendbuf, recvbuf, count,
                                              datatype, op, comm, algorithm, options, storage);
    run_or_request([&] { record(allreduce(call)); },
                   [&](bool persistent) { return iallreduce(call, persistent); });
  });
}

// The request forms: the blocking function's argument handling and checks in
// request mode (as_request); one macro line per collective, so the forms
// cannot drift from the blocking calls.
#define SHANCOLL_UNPAREN(...) __VA_ARGS__
#define SHANCOLL_REQUEST_FORMS(nonblocking, persistent, blocking, params, args)        \
  int shancoll_##nonblocking(SHANCOLL_UNPAREN params, shancoll_request* request) {     \
    return as_request(request, false, comm, [&] { return shancoll_##blocking args; }); \
  }                                                                                    \
  int shancoll_##persistent(SHANCOLL_UNPAREN params, shancoll_request* request) {      \
    return as_request(request, true, comm, [&] { return shancoll_##blocking args; });  \
  }
SHANCOLL_REQUEST_FORMS(ibarrier, barrier_init, barrier,
                       (MPI_Comm comm, const char* algorithm, const char* options),
                       (comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(ibcast, bcast_init, bcast,
                       (void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                        const char* algorithm, const char* options),
                       (buffer, count, datatype, root, comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(ibcast_c, bcast_init_c, bcast_c,
                       (void* buffer, MPI_Count count, MPI_Datatype datatype, int root,
                        MPI_Comm comm, const char* algorithm, const char* options),
                       (buffer, count, datatype, root, comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(ireduce, reduce_init, reduce,
                       (const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, int root, MPI_Comm comm, const char* algorithm,
                        const char* options),
                       (sendbuf, recvbuf, count, datatype, op, root, comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(ireduce_c, reduce_init_c, reduce_c,
                       (const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                        MPI_Op op, int root, MPI_Comm comm, const char* algorithm,
                        const char* options),
                       (sendbuf, recvbuf, count, datatype, op, root, comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(iallreduce, allreduce_init, allreduce,
                       (const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options),
                       (sendbuf, recvbuf, count, datatype, op, comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(iallreduce_c, allreduce_init_c, allreduce_c,
                       (const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options),
                       (sendbuf, recvbuf, count, datatype, op, comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(igather, gather_init, gather,
                       (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                        const char* algorithm, const char* options),
                       (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                        algorithm, options))
SHANCOLL_REQUEST_FORMS(igather_c, gather_init_c, gather_c,
                       (const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                        MPI_Comm comm, const char* algorithm, const char* options),
                       (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                        algorithm, options))
SHANCOLL_REQUEST_FORMS(igatherv, gatherv_init, gatherv,
                       (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                        MPI_Comm comm, const char* algorithm, const char* options),
                       (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                        comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(igatherv_c, gatherv_init_c, gatherv_c,
                       (const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                        MPI_Datatype recvtype, int root, MPI_Comm comm, const char* algorithm,
                        const char* options),
                       (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                        comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(iscatter, scatter_init, scatter,
                       (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                        const char* algorithm, const char* options),
                       (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                        algorithm, options))
SHANCOLL_REQUEST_FORMS(iscatter_c, scatter_init_c, scatter_c,
                       (const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                        MPI_Comm comm, const char* algorithm, const char* options),
                       (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                        algorithm, options))
SHANCOLL_REQUEST_FORMS(iscatterv, scatterv_init, scatterv,
                       (const void* sendbuf, const int sendcounts[], const int displs[],
                        MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                        int root, MPI_Comm comm, const char* algorithm, const char* options),
                       (sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                        comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(iscatterv_c, scatterv_init_c, scatterv_c,
                       (const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                        MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount,
                        MPI_Datatype recvtype, int root, MPI_Comm comm, const char* algorithm,
                        const char* options),
                       (sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                        comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(iallgather, allgather_init, allgather,
                       (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm,
                        const char* options),
                       (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, algorithm,
                        options))
SHANCOLL_REQUEST_FORMS(iallgather_c, allgather_init_c, allgather_c,
                       (const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                        const char* algorithm, const char* options),
                       (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, algorithm,
                        options))
SHANCOLL_REQUEST_FORMS(iallgatherv, allgatherv_init, allgatherv,
                       (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                        MPI_Comm comm, const char* algorithm, const char* options),
                       (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                        algorithm, options))
SHANCOLL_REQUEST_FORMS(iallgatherv_c, allgatherv_init_c, allgatherv_c,
                       (const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                        MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm,
                        const char* options),
                       (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                        algorithm, options))
SHANCOLL_REQUEST_FORMS(ialltoall, alltoall_init, alltoall,
                       (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm,
                        const char* options),
                       (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, algorithm,
                        options))
SHANCOLL_REQUEST_FORMS(ialltoall_c, alltoall_init_c, alltoall_c,
                       (const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                        const char* algorithm, const char* options),
                       (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, algorithm,
                        options))
SHANCOLL_REQUEST_FORMS(ialltoallv, alltoallv_init, alltoallv,
                       (const void* sendbuf, const int sendcounts[], const int sdispls[],
                        MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                        const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                        const char* algorithm, const char* options),
                       (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                        recvtype, comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(ialltoallv_c, alltoallv_init_c, alltoallv_c,
                       (const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                        MPI_Datatype sendtype, void* recvbuf, const MPI_Count recvcounts[],
                        const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                        const char* algorithm, const char* options),
                       (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                        recvtype, comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(ireduce_scatter, reduce_scatter_init, reduce_scatter,
                       (const void* sendbuf, void* recvbuf, const int recvcounts[],
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const char* algorithm,
                        const char* options),
                       (sendbuf, recvbuf, recvcounts, datatype, op, comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(ireduce_scatter_c, reduce_scatter_init_c, reduce_scatter_c,
                       (const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[],
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const char* algorithm,
                        const char* options),
                       (sendbuf, recvbuf, recvcounts, datatype, op, comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(ireduce_scatter_block, reduce_scatter_block_init, reduce_scatter_block,
                       (const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options),
                       (sendbuf, recvbuf, recvcount, datatype, op, comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(ireduce_scatter_block_c, reduce_scatter_block_init_c, reduce_scatter_block_c,
                       (const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const char* algorithm,
                        const char* options),
                       (sendbuf, recvbuf, recvcount, datatype, op, comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(iscan, scan_init, scan,
                       (const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options),
                       (sendbuf, recvbuf, count, datatype, op, comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(iscan_c, scan_init_c, scan_c,
                       (const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options),
                       (sendbuf, recvbuf, count, datatype, op, comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(iexscan, exscan_init, exscan,
                       (const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options),
                       (sendbuf, recvbuf, count, datatype, op, comm, algorithm, options))
SHANCOLL_REQUEST_FORMS(iexscan_c, exscan_init_c, exscan_c,
                       (const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options),
                       (sendbuf, recvbuf, count, datatype, op, comm, algorithm, options))
#undef SHANCOLL_REQUEST_FORMS
#undef SHANCOLL_UNPAREN

int shancoll_start(shancoll_request* request) {
  return guarded([&] {
    if (!request || !*request) refuse(MPI_ERR_REQUEST, "request: NULL");
    (*request)->request->start();
  });
}

int shancoll_startall(int count, shancoll_request requests[]) {
  return guarded([&] {
    if (count < 0 || (count > 0 && !requests)) refuse(MPI_ERR_ARG, "requests: NULL or count < 0");
    for (int i = 0; i < count; ++i) {
      if (!requests[i]) refuse(MPI_ERR_REQUEST, "requests: a NULL request");
      requests[i]->request->start();
    }
  });
}

int shancoll_request_free(shancoll_request* request) {
  return guarded([&] {
    if (!request) refuse(MPI_ERR_REQUEST, "request: NULL");
    if (!*request) return;
    if (!(*request)->request->done())
      refuse(MPI_ERR_REQUEST,
             "request: still active (MPI: freeing an active collective request "
             "is erroneous); wait for it first");
    free_request(request);
  });
}

// A request that failed (not timed out) cannot continue: it is freed.
int shancoll_test(shancoll_request* request, int* flag) {
  return guarded([&] {
    if (!request || !flag) refuse(MPI_ERR_ARG, "request/flag: NULL");
    *flag = 0;
    if (*request) {
      Release release{request};
      const bool done = (*request)->request->test();
      if (!done) release.keep = true;  // still running
      *flag = done;
      return;
    }
    *flag = 1;
  });
}

int shancoll_wait(shancoll_request* request) {
  return guarded([&] {
    if (!request) refuse(MPI_ERR_ARG, "request: NULL");
    if (!*request) return;
    Release release{request};
    try {
      (*request)->request->wait((*request)->timeout);
    } catch (const TimeoutError&) {
      release.keep = true;  // resumable: the caller keeps the request
      throw;
    }
  });
}

int shancoll_bcast_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
                     const char* algorithm, const char* options) {
  return guarded([&] {
    check_intracomm(comm);
    check_count(count, "count");
    OptionsStorage storage;
    BcastCall call = bcast_call(comm, buffer, count, datatype, root);
    if (!buffer && call.bytes > 0) refuse(MPI_ERR_BUFFER, "buffer: NULL");
    call.algorithm = algorithm ? algorithm : "";
    call.options = call_options(Collective::bcast, options, storage);
    run_or_request([&] { record(bcast(call)); },
                   [&](bool persistent) { return request_of(call, persistent); });
  });
}

int shancoll_reduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                      MPI_Op op, int root, MPI_Comm comm, const char* algorithm,
                      const char* options) {
  return guarded([&] {
    check_intracomm(comm);
    check_count(count, "count");
    const int rank = rank_in(comm);
    if (sendbuf == MPI_IN_PLACE && rank != root)
      refuse(MPI_ERR_BUFFER, "sendbuf: MPI_IN_PLACE is only valid at the root");
    if (rank == root && !recvbuf && count > 0) refuse(MPI_ERR_BUFFER, "recvbuf: NULL at the root");
    OptionsStorage storage;
    ReduceCall call = reduction_call<ReduceCall>(comm, sendbuf, recvbuf, count, datatype, op);
    call.root = root;
    call.algorithm = algorithm ? algorithm : "";
    call.options = call_options(Collective::reduce, options, storage);
    run_or_request([&] { record(reduce(call)); },
                   [&](bool persistent) { return request_of(call, persistent); });
  });
}

int shancoll_scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm, const char* algorithm, const char* options) {
  return shancoll_scan_c(sendbuf, recvbuf, count, datatype, op, comm, algorithm, options);
}

int shancoll_exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                    MPI_Comm comm, const char* algorithm, const char* options) {
  return shancoll_exscan_c(sendbuf, recvbuf, count, datatype, op, comm, algorithm, options);
}

int shancoll_scan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options) {
  return guarded(
      [&] { run_scan(false, sendbuf, recvbuf, count, datatype, op, comm, algorithm, options); });
}

int shancoll_exscan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                      MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options) {
  return guarded(
      [&] { run_scan(true, sendbuf, recvbuf, count, datatype, op, comm, algorithm, options); });
}

int shancoll_reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                  const char* algorithm, const char* options) {
  return shancoll_reduce_scatter_block_c(sendbuf, recvbuf, recvcount, datatype, op, comm, algorithm,
                                         options);
}

int shancoll_reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const char* algorithm,
                            const char* options) {
  return guarded([&] {
    if (!recvcounts) refuse(MPI_ERR_ARG, "recvcounts: NULL");
    run_reduce_scatter(sendbuf, recvbuf, recvcounts, 0, datatype, op, comm, algorithm, options);
  });
}

int shancoll_reduce_scatter_block_c(const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                    const char* algorithm, const char* options) {
  return guarded([&] {
    run_reduce_scatter<MPI_Count>(sendbuf, recvbuf, nullptr, recvcount, datatype, op, comm,
                                  algorithm, options);
  });
}

int shancoll_reduce_scatter_c(const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[],
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                              const char* algorithm, const char* options) {
  return guarded([&] {
    if (!recvcounts) refuse(MPI_ERR_ARG, "recvcounts: NULL");
    run_reduce_scatter(sendbuf, recvbuf, recvcounts, 0, datatype, op, comm, algorithm, options);
  });
}

int shancoll_gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                    const char* algorithm, const char* options) {
  return shancoll_gather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                           algorithm, options);
}

int shancoll_gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                     const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                     MPI_Comm comm, const char* algorithm, const char* options) {
  return guarded([&] {
    gather_call(Collective::gatherv, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, 0,
                recvtype, root, comm, algorithm, options);
  });
}

int shancoll_scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                     int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                     const char* algorithm, const char* options) {
  return shancoll_scatter_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                            algorithm, options);
}

int shancoll_scatterv(const void* sendbuf, const int sendcounts[], const int displs[],
                      MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                      int root, MPI_Comm comm, const char* algorithm, const char* options) {
  return guarded([&] {
    scatter_call(Collective::scatterv, sendbuf, sendcounts, displs, 0, sendtype, recvbuf, recvcount,
                 recvtype, root, comm, algorithm, options);
  });
}

int shancoll_gather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                      void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                      MPI_Comm comm, const char* algorithm, const char* options) {
  return guarded([&] {
    gather_call<MPI_Count, MPI_Aint>(Collective::gather, sendbuf, sendcount, sendtype, recvbuf,
                                     nullptr, nullptr, recvcount, recvtype, root, comm, algorithm,
                                     options);
  });
}

int shancoll_gatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                       void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                       MPI_Datatype recvtype, int root, MPI_Comm comm, const char* algorithm,
                       const char* options) {
  return guarded([&] {
    gather_call(Collective::gatherv, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, 0,
                recvtype, root, comm, algorithm, options);
  });
}

int shancoll_scatter_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                       void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                       MPI_Comm comm, const char* algorithm, const char* options) {
  return guarded([&] {
    scatter_call<MPI_Count, MPI_Aint>(Collective::scatter, sendbuf, nullptr, nullptr, sendcount,
                                      sendtype, recvbuf, recvcount, recvtype, root, comm, algorithm,
                                      options);
  });
}

int shancoll_scatterv_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                        MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount,
                        MPI_Datatype recvtype, int root, MPI_Comm comm, const char* algorithm,
                        const char* options) {
  return guarded([&] {
    scatter_call(Collective::scatterv, sendbuf, sendcounts, displs, 0, sendtype, recvbuf, recvcount,
                 recvtype, root, comm, algorithm, options);
  });
}

const char* shancoll_last_error(void) { return t_state.failed ? t_last_error.c_str() : ""; }

const char* shancoll_last_algorithm(void) { return t_state.last_algorithm; }

const char* shancoll_rules_info(void) {
  thread_local std::string text;
  const int rc = guarded([&] {
    const RulesInfo info = rules_info();
    // Without a table, `how` says so ("no table: the built-in rules").
    text =
        (info.path.empty() ? "" : info.path + ": ") + info.how + " (machine: " + info.machine + ")";
  });
  return rc == MPI_SUCCESS ? text.c_str() : shancoll_last_error();
}

const char* shancoll_algorithms(const char* collective) {
  thread_local std::string listing;
  const int rc = guarded([&] {
    if (!collective) refuse(MPI_ERR_ARG, "collective: NULL");
    listing.clear();
    for (const AlgorithmInfo& a : algorithm_listing(collective))
      listing += (listing.empty() ? "" : ",") + a.name;
  });
  return rc == MPI_SUCCESS ? listing.c_str() : nullptr;
}

}  // extern "C"
