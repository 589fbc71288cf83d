/* calls: N calls of one 8-byte collective on MPI_COMM_WORLD, for instruction
 * counts under callgrind (benchmarks/c/callgrind_calls.sh): the count of N
 * calls minus that of none, / N, is the cost of one call (plus the loop's
 * indirect call, a few instructions). 64 calls are made before the loop in
 * both runs, so that shancoll's set-up, every per-shape memo and the inline
 * lines' first rounds are outside the difference.
 *
 * Usage: calls N COLL [pmpi|init|pmpi-init], COLL one of bcast, reduce,
 *   allreduce, allgather, barrier, alltoall, reduce_scatter_block, gather,
 *   scatter, scan, exscan: the rooted ones have root 0; the data is one
 *   double (MPI_SUM) per rank and block, or CALLS_COUNT doubles (at most
 *   1024) when that is set. "pmpi" calls the PMPI_ function directly: the
 *   MPI library's own call, even under the preload. "init": a call is
 *   MPI_Start + MPI_Wait of one persistent request made by MPI_<Coll>_init
 *   before the warm-up (routed to shancoll under the preload where it
 *   fits); "pmpi-init" the same through PMPI_ (the library's own).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kWarmUp = 64, kMaxRanks = 64, kMaxCount = 1024 };
static double x[kMaxCount] = {1}, y[kMaxRanks * kMaxCount];
static int k = 1; /* doubles per rank and block (CALLS_COUNT) */

static int bcast(void) { return MPI_Bcast(x, k, MPI_DOUBLE, 0, MPI_COMM_WORLD); }
static int reduce(void) { return MPI_Reduce(x, y, k, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); }
static int allreduce(void) { return MPI_Allreduce(x, y, k, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); }
static int allgather(void) {
  return MPI_Allgather(x, k, MPI_DOUBLE, y, k, MPI_DOUBLE, MPI_COMM_WORLD);
}
static int barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }
static int alltoall(void) {
  return MPI_Alltoall(y, k, MPI_DOUBLE, y + kMaxRanks / 2 * k, k, MPI_DOUBLE, MPI_COMM_WORLD);
}
static int reduce_scatter_block(void) {
  return MPI_Reduce_scatter_block(y, x, k, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}
static int gather(void) {
  return MPI_Gather(x, k, MPI_DOUBLE, y, k, MPI_DOUBLE, 0, MPI_COMM_WORLD);
}
static int scan(void) { return MPI_Scan(x, y, k, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); }
static int exscan(void) { return MPI_Exscan(x, y, k, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); }
static int scatter(void) {
  return MPI_Scatter(y, k, MPI_DOUBLE, x, k, MPI_DOUBLE, 0, MPI_COMM_WORLD);
}

static int p_bcast(void) { return PMPI_Bcast(x, k, MPI_DOUBLE, 0, MPI_COMM_WORLD); }
static int p_reduce(void) { return PMPI_Reduce(x, y, k, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); }
static int p_allreduce(void) {
  return PMPI_Allreduce(x, y, k, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}
static int p_allgather(void) {
  return PMPI_Allgather(x, k, MPI_DOUBLE, y, k, MPI_DOUBLE, MPI_COMM_WORLD);
}
static int p_barrier(void) { return PMPI_Barrier(MPI_COMM_WORLD); }
static int p_alltoall(void) {
  return PMPI_Alltoall(y, k, MPI_DOUBLE, y + kMaxRanks / 2 * k, k, MPI_DOUBLE, MPI_COMM_WORLD);
}
static int p_reduce_scatter_block(void) {
  return PMPI_Reduce_scatter_block(y, x, k, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}
static int p_gather(void) {
  return PMPI_Gather(x, k, MPI_DOUBLE, y, k, MPI_DOUBLE, 0, MPI_COMM_WORLD);
}
static int p_scan(void) { return PMPI_Scan(x, y, k, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); }
static int p_exscan(void) { return PMPI_Exscan(x, y, k, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); }
static int p_scatter(void) {
  return PMPI_Scatter(y, k, MPI_DOUBLE, x, k, MPI_DOUBLE, 0, MPI_COMM_WORLD);
}

/* The persistent forms: MPI_<Coll>_init or PMPI_<Coll>_init once. */
static MPI_Request g_request = MPI_REQUEST_NULL;
static int g_direct;
#define INIT(init, ...)                                                   \
  static int init_##init(void) {                                          \
    return g_direct ? PMPI_##init(__VA_ARGS__, MPI_INFO_NULL, &g_request) \
                    : MPI_##init(__VA_ARGS__, MPI_INFO_NULL, &g_request); \
  }
INIT(Bcast_init, x, k, MPI_DOUBLE, 0, MPI_COMM_WORLD)
INIT(Reduce_init, x, y, k, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD)
INIT(Allreduce_init, x, y, k, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD)
INIT(Allgather_init, x, k, MPI_DOUBLE, y, k, MPI_DOUBLE, MPI_COMM_WORLD)
INIT(Barrier_init, MPI_COMM_WORLD)
INIT(Alltoall_init, y, k, MPI_DOUBLE, y + kMaxRanks / 2 * k, k, MPI_DOUBLE, MPI_COMM_WORLD)
INIT(Reduce_scatter_block_init, y, x, k, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD)
INIT(Gather_init, x, k, MPI_DOUBLE, y, k, MPI_DOUBLE, 0, MPI_COMM_WORLD)
INIT(Scatter_init, y, k, MPI_DOUBLE, x, k, MPI_DOUBLE, 0, MPI_COMM_WORLD)
INIT(Scan_init, x, y, k, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD)
INIT(Exscan_init, x, y, k, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD)
#undef INIT

static int start_wait(void) {
  MPI_Start(&g_request);
  return MPI_Wait(&g_request, MPI_STATUS_IGNORE);
}
static int p_start_wait(void) {
  PMPI_Start(&g_request);
  return PMPI_Wait(&g_request, MPI_STATUS_IGNORE);
}

static const struct {
  const char* name;
  int (*call)(void);
  int (*direct)(void);
  int (*init)(void);
} kCalls[] = {
    {"bcast", bcast, p_bcast, init_Bcast_init},
    {"reduce", reduce, p_reduce, init_Reduce_init},
    {"allreduce", allreduce, p_allreduce, init_Allreduce_init},
    {"allgather", allgather, p_allgather, init_Allgather_init},
    {"barrier", barrier, p_barrier, init_Barrier_init},
    {"alltoall", alltoall, p_alltoall, init_Alltoall_init},
    {"reduce_scatter_block", reduce_scatter_block, p_reduce_scatter_block,
     init_Reduce_scatter_block_init},
    {"gather", gather, p_gather, init_Gather_init},
    {"scatter", scatter, p_scatter, init_Scatter_init},
    {"scan", scan, p_scan, init_Scan_init},
    {"exscan", exscan, p_exscan, init_Exscan_init},
};

int main(int argc, char** argv) {
  int (*call)(void) = NULL, (*init)(void) = NULL;
  const char* how = argc > 3 ? argv[3] : "";
  g_direct = strncmp(how, "pmpi", 4) == 0;
  for (size_t i = 0; argc > 2 && i < sizeof kCalls / sizeof kCalls[0]; ++i)
    if (strcmp(argv[2], kCalls[i].name) == 0) {
      call = g_direct ? kCalls[i].direct : kCalls[i].call;
      if (strstr(how, "init")) init = kCalls[i].init, call = g_direct ? p_start_wait : start_wait;
    }
  if (!call) {
    fprintf(stderr, "usage: calls N COLL [pmpi|init|pmpi-init] (see calls.c)\n");
    return 2;
  }
  const int n = atoi(argv[1]);
  if (getenv("CALLS_COUNT")) k = atoi(getenv("CALLS_COUNT"));
  if (k < 1 || k > kMaxCount) {
    fprintf(stderr, "calls: CALLS_COUNT must be 1..%d\n", kMaxCount);
    return 2;
  }
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > kMaxRanks / 2) MPI_Abort(MPI_COMM_WORLD, 2);
  if (init) init();
  for (int i = 0; i < kWarmUp; ++i) call();
  for (int i = 0; i < n; ++i) call();
  if (init) MPI_Request_free(&g_request);
  MPI_Finalize();
  return 0;
}
