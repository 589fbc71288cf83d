/* The PMPI library's repeated-call path allocates nothing and reads no
 * environment variable (issue 24, item 2): once a communicator is set up and
 * a call of one shape has been made, the same call again must not call
 * malloc (or new), calloc, realloc, the aligned allocators, getenv or
 * secure_getenv; nor, for allreduce, bcast, reduce, allgather and barrier,
 * ask MPI what it already knows (below). This program replaces those functions (the executable's
 * definitions win over every shared library's), counts them during a loop
 * of repeated calls of each interposed collective, and checks that each
 * call was routed to shancoll (shancoll_last_algorithm, looked up at run
 * time: without the preload the check fails rather than passing vacuously;
 * MPI_Scan, MPI_Exscan and MPI_Reduce_scatter(_block), whose auto is the MPI
 * library's, run the algorithms tests/test_pmpi.py names in their
 * SHANCOLL_<COLL>_ALGORITHM).
 * Allocations made by the MPI library itself (its pools grow now and then
 * under shancoll's point-to-point messages, as under its own) are told apart
 * by their caller's object and not held against shancoll.
 *
 * Prints "pmpi_repeat_path: N checks, F failed" (tests/test_pmpi.py). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void* __libc_memalign(size_t, size_t);

static volatile int counting;
static long allocations, mpi_allocations, environment_reads;
static void* mpi_base; /* where the MPI library is loaded */

/* The MPI library's own allocations (its request pools and unexpected-message
 * queues grow now and then) are counted apart: they are not shancoll's. */
static int called_by_mpi(const void* caller) {
  Dl_info info;
  if (!dladdr(caller, &info)) return 0;
  if (info.dli_fbase == mpi_base) return 1;
  return info.dli_fname &&
         (strstr(info.dli_fname, "/libuc") || strstr(info.dli_fname, "libfabric"));
}

static void count_allocation(const void* caller) {
  if (!counting) return;
  counting = 0; /* dladdr may allocate */
  if (called_by_mpi(caller))
    ++mpi_allocations;
  else
    ++allocations;
  counting = 1;
}

void* malloc(size_t n) {
  count_allocation(__builtin_return_address(0));
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t size) {
  count_allocation(__builtin_return_address(0));
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t n) {
  count_allocation(__builtin_return_address(0));
  return __libc_realloc(p, n);
}
void* memalign(size_t alignment, size_t n) {
  count_allocation(__builtin_return_address(0));
  return __libc_memalign(alignment, n);
}
void* aligned_alloc(size_t alignment, size_t n) {
  count_allocation(__builtin_return_address(0));
  return __libc_memalign(alignment, n);
}
int posix_memalign(void** out, size_t alignment, size_t n) {
  count_allocation(__builtin_return_address(0));
  *out = __libc_memalign(alignment, n);
  return *out ? 0 : 12; /* ENOMEM */
}

typedef char* (*getenv_fn)(const char*);
static char* forward_getenv(const char* symbol, const char* name) {
  getenv_fn real = (getenv_fn)dlsym(RTLD_NEXT, symbol);
  return real ? real(name) : NULL;
}
char* getenv(const char* name) {
  if (counting) ++environment_reads;
  return forward_getenv("getenv", name);
}
char* secure_getenv(const char* name) {
  if (counting) ++environment_reads;
  return forward_getenv("secure_getenv", name);
}

/* What a repeated call must not ask MPI again (issue 24, item 2: a
 * per-communicator plan holds it): an op's commutativity, a datatype's size
 * or kind, the communicator's rank, size, kind or shancoll's attribute. The
 * executable exports these (ENABLE_EXPORTS), so they win over the MPI
 * library's for the preloaded library as malloc does. Waits may still poke
 * MPI's progress engine (MPI_Iprobe), which is not counted. */
static long mpi_queries;
#define COUNTED(call) (counting ? ++mpi_queries : 0, call)
int MPI_Op_commutative(MPI_Op op, int* commute) {
  return COUNTED(PMPI_Op_commutative(op, commute));
}
int MPI_Type_size(MPI_Datatype type, int* size) { return COUNTED(PMPI_Type_size(type, size)); }
int MPI_Type_get_extent(MPI_Datatype type, MPI_Aint* lb, MPI_Aint* extent) {
  return COUNTED(PMPI_Type_get_extent(type, lb, extent));
}
int MPI_Type_get_envelope(MPI_Datatype type, int* ints, int* addresses, int* types, int* combiner) {
  return COUNTED(PMPI_Type_get_envelope(type, ints, addresses, types, combiner));
}
int MPI_Comm_rank(MPI_Comm comm, int* rank) { return COUNTED(PMPI_Comm_rank(comm, rank)); }
int MPI_Comm_size(MPI_Comm comm, int* size) { return COUNTED(PMPI_Comm_size(comm, size)); }
int MPI_Comm_test_inter(MPI_Comm comm, int* flag) {
  return COUNTED(PMPI_Comm_test_inter(comm, flag));
}
int MPI_Comm_get_attr(MPI_Comm comm, int keyval, void* value, int* flag) {
  return COUNTED(PMPI_Comm_get_attr(comm, keyval, value, flag));
}

/* The collectives whose repeated call asks MPI nothing: allreduce, bcast,
 * reduce, allgather, barrier (the `which` of call() below). */
static int asks_nothing(int which) { return which <= 4; }

enum { kRepeats = 2000, kWarm = 3 };

static double send_buf[512], recv_buf[1024], a2a_send[1024];
static int block_counts[64]; /* MPI_Reduce_scatter's: the count of the case, per rank */
static int v_counts[1024], v_displs[1024]; /* gatherv/scatterv: `count` each, in rank order */

static void call(int which, int count) {
  switch (which) {
    case 0:
      MPI_Allreduce(send_buf, recv_buf, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      break;
    case 1:
      MPI_Bcast(send_buf, count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      break;
    case 2:
      MPI_Reduce(send_buf, recv_buf, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
      break;
    case 3:
      MPI_Allgather(send_buf, count, MPI_DOUBLE, recv_buf, count, MPI_DOUBLE, MPI_COMM_WORLD);
      break;
    case 5:
      MPI_Scan(send_buf, recv_buf, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      break;
    case 6:
      MPI_Exscan(send_buf, recv_buf, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      break;
    case 7:
      MPI_Reduce_scatter_block(send_buf, recv_buf, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      break;
    case 8:
      MPI_Reduce_scatter(send_buf, recv_buf, block_counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      break;
    case 9:
      MPI_Alltoall(a2a_send, count, MPI_DOUBLE, recv_buf, count, MPI_DOUBLE, MPI_COMM_WORLD);
      break;
    case 10:
      MPI_Gather(send_buf, count, MPI_DOUBLE, recv_buf, count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      break;
    case 11:
      MPI_Gatherv(send_buf, count, MPI_DOUBLE, recv_buf, v_counts, v_displs, MPI_DOUBLE, 0,
                  MPI_COMM_WORLD);
      break;
    case 12:
      MPI_Scatter(recv_buf, count, MPI_DOUBLE, send_buf, count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      break;
    case 13:
      MPI_Scatterv(recv_buf, v_counts, v_displs, MPI_DOUBLE, send_buf, count, MPI_DOUBLE, 0,
                   MPI_COMM_WORLD);
      break;
    default:
      MPI_Barrier(MPI_COMM_WORLD);
      break;
  }
}

int main(int argc, char** argv) {
  int provided = 0, rank = 0, size = 1;
  /* auto leaves an alltoall on virtual nodes to the MPI library: shan's
   * repeated path is the one to check (set before MPI_Init: nothing counts yet). */
  setenv("SHANCOLL_ALLTOALL_ALGORITHM", "shan", 0);
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Dl_info mpi;
  if (dladdr((void*)&PMPI_Send, &mpi)) mpi_base = mpi.dli_fbase;
  const char* (*last_algorithm)(void) =
      (const char* (*)(void))dlsym(RTLD_DEFAULT, "shancoll_last_algorithm");
  static const char* names[] = {
      "MPI_Allreduce",      "MPI_Bcast",    "MPI_Reduce", "MPI_Allgather",
      "MPI_Barrier",        "MPI_Scan",     "MPI_Exscan", "MPI_Reduce_scatter_block",
      "MPI_Reduce_scatter", "MPI_Alltoall", "MPI_Gather", "MPI_Gatherv",
      "MPI_Scatter",        "MPI_Scatterv"};
  static const int counts[] = {1, 64, 512 / 2}; /* 8 B, 512 B, 2 KiB (allgather: per rank) */
  int checks = 0, failed = 0;
  for (int which = 0; which < 14; ++which) {
    for (int c = 0; c < (which == 4 ? 1 : 3); ++c) { /* a barrier has no size */
      /* allgather, alltoall, gather(v), scatter(v): a block per rank in recv_buf */
      const int per_rank = which == 3 || which >= 9;
      int count = per_rank && counts[c] * size > 1024 ? 1024 / size : counts[c];
      if (which >= 7 && count * size > 512) count = 512 / size; /* P blocks in send_buf */
      for (int r = 0; r < size && r < 64; ++r) block_counts[r] = count;
      for (int r = 0; r < size && r < 1024; ++r) v_counts[r] = count, v_displs[r] = r * count;
      for (int i = 0; i < kWarm; ++i) call(which, count);
      allocations = mpi_allocations = environment_reads = mpi_queries = 0;
      counting = 1;
      for (int i = 0; i < kRepeats; ++i) call(which, count);
      counting = 0;
      const char* algorithm = last_algorithm ? last_algorithm() : "";
      const int routed = algorithm && *algorithm && strcmp(algorithm, "mpi") != 0;
      const long queries = asks_nothing(which) ? mpi_queries : 0;
      int bad = !routed || allocations != 0 || environment_reads != 0 || queries != 0;
      if (bad)
        printf(
            "pmpi_repeat_path: rank %d: %s of %d doubles: %s, %ld allocations (and %ld by MPI), "
            "%ld environment reads, %ld MPI queries in %d repeated calls\n",
            rank, names[which], count, routed ? algorithm : "not routed to shancoll", allocations,
            mpi_allocations, environment_reads, queries, kRepeats);
      MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      ++checks;
      failed += bad;
    }
  }
  if (rank == 0) printf("pmpi_repeat_path: %d checks, %d failed\n", checks, failed);
  fflush(stdout);
  MPI_Finalize();
  return failed != 0;
}
