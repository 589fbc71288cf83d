/* rank_times: each rank's own median time of an 8-byte MPI_Bcast, MPI_Reduce
 * or MPI_Exscan (root 0), or of MPI_Barrier, each call preceded by a barrier
 * as in benchmarks/c/osu_style.c, which reports only the slowest rank's. It
 * shows where a barrier-separated loop's time goes: a barrier that releases
 * rank 0 first lets the root's call start before the reader's, and the
 * reader's time is then its call path plus the line's transfer.
 *
 *   mpicc -O2 -o rank_times benchmarks/c/rank_times.c
 *   mpiexec -n 2 ./rank_times bcast|reduce|exscan|barrier [pmpi]
 *
 * With "pmpi" the separating barrier is PMPI_Barrier: the MPI library's own,
 * not the preloaded one. Three runs of 20000 calls; per run on rank 0:
 * each rank's median and 10th percentile (us).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static void call(const char* what, char* buf, double* in, double* out) {
  if (strcmp(what, "bcast") == 0)
    MPI_Bcast(buf, 8, MPI_BYTE, 0, MPI_COMM_WORLD);
  else if (strcmp(what, "reduce") == 0)
    MPI_Reduce(in, out, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  else if (strcmp(what, "exscan") == 0)
    MPI_Exscan(in, out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  else
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* what = argc > 1 ? argv[1] : "bcast";
  const int library_barrier = argc > 2 && strcmp(argv[2], "pmpi") == 0;
  enum { kCalls = 20000 };
  double* times = malloc(sizeof(double) * kCalls);
  double* all = malloc(sizeof(double) * 2 * (size_t)size);
  char buf[8] = {0};
  double in = 1, out = 0;
  for (int run = 0; run < 3; ++run) {
    for (int i = 0; i < kCalls; ++i) {
      if (library_barrier)
        PMPI_Barrier(MPI_COMM_WORLD);
      else
        MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      call(what, buf, &in, &out);
      times[i] = MPI_Wtime() - start;
    }
    qsort(times, kCalls, sizeof *times, by_value);
    const double mine[2] = {times[kCalls / 2], times[kCalls / 10]};
    MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      printf("%s", what);
      for (int r = 0; r < size; ++r)
        printf(" | rank %d median %.3f p10 %.3f", r, all[2 * r] * 1e6, all[2 * r + 1] * 1e6);
      printf(" us\n");
    }
  }
  free(times);
  free(all);
  MPI_Finalize();
  return 0;
}
