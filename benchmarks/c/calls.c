/* calls: N calls of one 8-byte collective on MPI_COMM_WORLD, for instruction
 * counts under callgrind (benchmarks/c/callgrind_calls.sh): the count of N
 * calls minus that of none, / N, is the cost of one call (plus the loop's
 * indirect call, a few instructions). 64 calls are made before the loop in
 * both runs, so that shancoll's set-up, every per-shape memo and the inline
 * lines' first rounds are outside the difference.
 *
 * Usage: calls N bcast|reduce|allreduce|allgather|barrier [pmpi]
 *   bcast and reduce have root 0; the data is one double (MPI_SUM);
 *   allgather gathers one double per rank. "pmpi" calls the PMPI_ function
 *   directly: the MPI library's own call, even under the preload.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kWarmUp = 64, kMaxRanks = 64 };
static double x[1] = {1}, y[kMaxRanks];

static int bcast(void) { return MPI_Bcast(x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); }
static int reduce(void) { return MPI_Reduce(x, y, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); }
static int allreduce(void) { return MPI_Allreduce(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); }
static int allgather(void) {
  return MPI_Allgather(x, 1, MPI_DOUBLE, y, 1, MPI_DOUBLE, MPI_COMM_WORLD);
}
static int barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }

static int p_bcast(void) { return PMPI_Bcast(x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); }
static int p_reduce(void) { return PMPI_Reduce(x, y, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); }
static int p_allreduce(void) {
  return PMPI_Allreduce(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}
static int p_allgather(void) {
  return PMPI_Allgather(x, 1, MPI_DOUBLE, y, 1, MPI_DOUBLE, MPI_COMM_WORLD);
}
static int p_barrier(void) { return PMPI_Barrier(MPI_COMM_WORLD); }

static const struct {
  const char* name;
  int (*call)(void);
  int (*direct)(void);
} kCalls[] = {
    {"bcast", bcast, p_bcast},
    {"reduce", reduce, p_reduce},
    {"allreduce", allreduce, p_allreduce},
    {"allgather", allgather, p_allgather},
    {"barrier", barrier, p_barrier},
};

int main(int argc, char** argv) {
  int (*call)(void) = NULL;
  for (size_t i = 0; argc > 2 && i < sizeof kCalls / sizeof kCalls[0]; ++i)
    if (strcmp(argv[2], kCalls[i].name) == 0)
      call = argc > 3 && strcmp(argv[3], "pmpi") == 0 ? kCalls[i].direct : kCalls[i].call;
  if (!call) {
    fprintf(stderr, "usage: calls N bcast|reduce|allreduce|allgather|barrier [pmpi]\n");
    return 2;
  }
  const int n = atoi(argv[1]);
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > kMaxRanks) MPI_Abort(MPI_COMM_WORLD, 2);
  for (int i = 0; i < kWarmUp; ++i) call();
  for (int i = 0; i < n; ++i) call();
  MPI_Finalize();
  return 0;
}
