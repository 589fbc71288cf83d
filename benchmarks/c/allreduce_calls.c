/* allreduce_calls: N calls of an 8-byte MPI_Allreduce (one double, MPI_SUM,
 * MPI_COMM_WORLD) at the thread level asked, for instruction counts under
 * callgrind: the count of N calls minus that of none, / N, is the cost of
 * one call (the first call, which sets up shancoll's state, is made in both).
 *
 * Usage: allreduce_calls N [serialized|multiple]   (docs/performance.md, "Threads")
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 0;
  const int level =
      argc > 2 && strcmp(argv[2], "multiple") == 0 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, level, &provided);
  if (provided != level)
    fprintf(stderr, "allreduce_calls: thread level %d, not %d\n", provided, level);
  double x = 1, y = 0;
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < n; ++i) MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
