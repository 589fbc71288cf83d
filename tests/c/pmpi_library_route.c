/* When shancoll's choice for a call is the MPI library's own (`mpi`), the
 * PMPI library calls PMPI_<Coll> on the user's communicator with the user's
 * arguments, once, and nothing else (capi/pmpi_library_route.h). This
 * program replaces the PMPI_ collectives it calls and the MPI queries a door
 * makes (the executable's definitions win over the MPI library's for the
 * preload, -rdynamic), counts them during a loop of calls, and checks:
 *   - each call whose choice is `mpi` made exactly one PMPI_<Coll> call, on
 *     MPI_COMM_WORLD (the user's communicator, not shancoll's dup), and no
 *     MPI query;
 *   - a call of another size that shancoll runs (an 8-byte allreduce, the
 *     rule table in tests/test_pmpi.py) in between made no library call;
 *   - the results, against the values every rank computes.
 * The non-root ranks pass an MPI_Gather a receive count that changes from
 * call to call (insignificant there): their route misses while the root's
 * holds, and every rank must still call the library on MPI_COMM_WORLD.
 *
 * Prints "pmpi_library_route: N checks, F failed" (tests/test_pmpi.py). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

enum Hooked {
  kAllreduce,
  kAllreduceC,
  kBcast,
  kBcastC,
  kReduce,
  kAllgather,
  kBarrier,
  kGather,
  kGatherv,
  kAlltoallv,
  kScan,
  kReduceScatter,
  kQueries,
  kHooked
};
static const char* kNames[kHooked] = {
    "MPI_Allreduce", "MPI_Allreduce_c",    "MPI_Bcast",    "MPI_Bcast_c", "MPI_Reduce",
    "MPI_Allgather", "MPI_Barrier",        "MPI_Gather",   "MPI_Gatherv", "MPI_Alltoallv",
    "MPI_Scan",      "MPI_Reduce_scatter", "(MPI queries)"};

static volatile int counting, count_queries = 1;
static long on_user[kHooked], on_other[kHooked];

static void note(enum Hooked which, MPI_Comm comm) {
  if (!counting || (which == kQueries && !count_queries)) return;
  if (comm == MPI_COMM_WORLD)
    ++on_user[which];
  else
    ++on_other[which];
}

/* PMPI_<name>, counted as `which` on `comm`, then the MPI library's. */
#define HOOK(which, name, comm, params, args)                     \
  int name params {                                               \
    static __typeof__(&name) real;                                \
    if (!real) real = (__typeof__(&name))dlsym(RTLD_NEXT, #name); \
    note(which, comm);                                            \
    return real args;                                             \
  }

HOOK(kAllreduce, PMPI_Allreduce, comm,
     (const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm),
     (s, r, n, t, op, comm))
#if MPI_VERSION >= 4 /* Open MPI 5.0 has no large-count functions */
HOOK(kAllreduceC, PMPI_Allreduce_c, comm,
     (const void* s, void* r, MPI_Count n, MPI_Datatype t, MPI_Op op, MPI_Comm comm),
     (s, r, n, t, op, comm))
HOOK(kBcastC, PMPI_Bcast_c, comm, (void* b, MPI_Count n, MPI_Datatype t, int root, MPI_Comm comm),
     (b, n, t, root, comm))
#endif
HOOK(kBcast, PMPI_Bcast, comm, (void* b, int n, MPI_Datatype t, int root, MPI_Comm comm),
     (b, n, t, root, comm))
HOOK(kReduce, PMPI_Reduce, comm,
     (const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm),
     (s, r, n, t, op, root, comm))
HOOK(kAllgather, PMPI_Allgather, comm,
     (const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, MPI_Comm comm),
     (s, sn, st, r, rn, rt, comm))
HOOK(kBarrier, PMPI_Barrier, comm, (MPI_Comm comm), (comm))
HOOK(kGather, PMPI_Gather, comm,
     (const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, int root,
      MPI_Comm comm),
     (s, sn, st, r, rn, rt, root, comm))
HOOK(kGatherv, PMPI_Gatherv, comm,
     (const void* s, int sn, MPI_Datatype st, void* r, const int rn[], const int d[],
      MPI_Datatype rt, int root, MPI_Comm comm),
     (s, sn, st, r, rn, d, rt, root, comm))
HOOK(kAlltoallv, PMPI_Alltoallv, comm,
     (const void* s, const int sn[], const int sd[], MPI_Datatype st, void* r, const int rn[],
      const int rd[], MPI_Datatype rt, MPI_Comm comm),
     (s, sn, sd, st, r, rn, rd, rt, comm))
HOOK(kScan, PMPI_Scan, comm,
     (const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm),
     (s, r, n, t, op, comm))
HOOK(kReduceScatter, PMPI_Reduce_scatter, comm,
     (const void* s, void* r, const int rn[], MPI_Datatype t, MPI_Op op, MPI_Comm comm),
     (s, r, rn, t, op, comm))
/* What a door asks MPI when it works a call out (its memos answer a repeat). */
HOOK(kQueries, PMPI_Comm_size, comm, (MPI_Comm comm, int* size), (comm, size))
HOOK(kQueries, PMPI_Comm_rank, comm, (MPI_Comm comm, int* rank), (comm, rank))
HOOK(kQueries, PMPI_Type_size, MPI_COMM_WORLD, (MPI_Datatype t, int* size), (t, size))
HOOK(kQueries, PMPI_Comm_get_attr, comm, (MPI_Comm comm, int key, void* value, int* flag),
     (comm, key, value, flag))

enum { kCalls = 50, kMaxRanks = 64, kBig = 128 /* doubles: 1 KiB, the library's by the rules */ };
static double send[kBig * kMaxRanks], recv[kBig * kMaxRanks], small_in, small_out;
static int ones[kMaxRanks], steps[kMaxRanks];

static int rank_, size_;

/* One round of every call; returns the number of wrong results. */
static int round_of_calls(int i) {
  int wrong = 0;
  for (int k = 0; k < kBig * size_; ++k) send[k] = rank_ + i + k;
  small_in = rank_ + i;
  MPI_Allreduce(&small_in, &small_out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* shancoll's */
  wrong += small_out != size_ * (size_ - 1) / 2.0 + size_ * i;
  MPI_Allreduce(send, recv, kBig, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  wrong += recv[3] != size_ * (size_ - 1) / 2.0 + size_ * (i + 3);
#if MPI_VERSION >= 4
  MPI_Allreduce_c(send, recv, kBig, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  wrong += recv[0] != size_ - 1 + i;
#endif
  double b[kBig];
  for (int k = 0; k < kBig; ++k) b[k] = rank_ == 0 ? i + k : -1;
  MPI_Bcast(b, kBig, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  wrong += b[5] != i + 5;
#if MPI_VERSION >= 4
  MPI_Bcast_c(b, kBig, MPI_DOUBLE, 0, MPI_COMM_WORLD);
#endif
  MPI_Reduce(send, recv, kBig, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  wrong += rank_ == 0 && recv[1] != size_ * (size_ - 1) / 2.0 + size_ * (i + 1);
  MPI_Allgather(send, kBig, MPI_DOUBLE, recv, kBig, MPI_DOUBLE, MPI_COMM_WORLD);
  wrong += recv[kBig * (size_ - 1)] != size_ - 1 + i;
  for (int r = 0; r < size_; ++r) steps[r] = r * kBig, ones[r] = kBig;
  MPI_Allgatherv(send, kBig, MPI_DOUBLE, recv, ones, steps, MPI_DOUBLE, MPI_COMM_WORLD);
  wrong += recv[kBig * (size_ - 1)] != size_ - 1 + i; /* regular: the library's MPI_Allgather */
  MPI_Barrier(MPI_COMM_WORLD);
  count_queries = 0; /* the non-roots' missed route: the gather door may ask MPI */
  MPI_Gather(send, kBig, MPI_DOUBLE, recv, rank_ == 0 ? kBig : i, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  count_queries = 1;
  wrong += rank_ == 0 && recv[kBig * (size_ - 1)] != size_ - 1 + i;
  for (int r = 0; r < size_; ++r) steps[r] = r * kBig, ones[r] = kBig;
  MPI_Gatherv(send, kBig, MPI_DOUBLE, recv, ones, steps, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Alltoallv(send, ones, steps, MPI_DOUBLE, recv, ones, steps, MPI_DOUBLE, MPI_COMM_WORLD);
  wrong += recv[kBig * (size_ - 1)] != size_ - 1 + i + kBig * rank_;
  MPI_Scan(send, recv, kBig, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  wrong += recv[0] != rank_ * (rank_ + 1) / 2.0 + (rank_ + 1) * i;
  MPI_Reduce_scatter(send, recv, ones, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  wrong += recv[0] != size_ * (size_ - 1) / 2.0 + size_ * (i + kBig * rank_);
  return wrong;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  if (size_ > kMaxRanks) MPI_Abort(MPI_COMM_WORLD, 2);
  int wrong = round_of_calls(0); /* shancoll's set-up and the first call of each shape */
  counting = 1;
  for (int i = 1; i <= kCalls; ++i) wrong += round_of_calls(i);
  counting = 0;
  int checks = 0, failed = 0;
  for (int which = 0; which < kHooked; ++which) {
    const int large_count = which == kAllreduceC || which == kBcastC;
    long expected = which == kQueries || (large_count && MPI_VERSION < 4) ? 0 : kCalls;
    if (which == kAllgather) expected = 2 * kCalls; /* MPI_Allgather and MPI_Allgatherv */
    int bad = on_user[which] != expected || on_other[which] != 0;
    if (bad)
      printf(
          "pmpi_library_route: rank %d: %s: %ld calls on the user's communicator, %ld on "
          "others, in %d calls (expected %ld and 0)\n",
          rank_, kNames[which], on_user[which], on_other[which], kCalls, expected);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    ++checks;
    failed += bad;
  }
  if (wrong) printf("pmpi_library_route: rank %d: %d wrong results\n", rank_, wrong);
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  ++checks;
  failed += wrong != 0;
  if (rank_ == 0) printf("pmpi_library_route: %d checks, %d failed\n", checks, failed);
  fflush(stdout);
  MPI_Finalize();
  return failed != 0;
}
