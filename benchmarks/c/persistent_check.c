/* persistent_check: whether the MPI library's own persistent collectives
 * give the blocking calls' results. Per collective (bcast, gather, scatter,
 * allgather, alltoall, their v-forms with the regular layout, allreduce,
 * reduce, reduce_scatter_block, scan, exscan; root 0, MPI_SUM on doubles),
 * PMPI_<Coll>_init once, then RUNS starts, the inputs changed before each
 * and the result compared with the blocking PMPI_ call's; prints the wrong
 * runs over all ranks. With a second argument, the nonblocking forms
 * (PMPI_I<coll> posted per run) of the first five instead.
 *
 * Usage: mpiexec -n 2 persistent_check DOUBLES [i]
 * Intel MPI 2021.18.1 (docs/performance.md): gather wrong in every run at
 * its root, scatter and allgather after the first run, some jobs ending in
 * a segmentation fault inside MPI_Start; MPICH 5.0.2 and Open MPI 5.0.11 right. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
enum { RUNS = 100 };
static int r, p, n;
static double *in, *out, *want;
static void fill(int k) {
  for (long i = 0; i < (long)n * p; ++i) in[i] = k * 1e6 + r * 1e3 + i;
}
static int nb = 0;
static int cnt[64], dsp[64];
enum { NC = 14 };
static int post(int c, MPI_Request* q) {
  MPI_Comm w = MPI_COMM_WORLD;
  MPI_Datatype d = MPI_DOUBLE;
  switch (c) {
    case 0:
      return PMPI_Ibcast(out, n, d, 0, w, q);
    case 1:
      return PMPI_Igather(in, n, d, out, n, d, 0, w, q);
    case 2:
      return PMPI_Iscatter(in, n, d, out, n, d, 0, w, q);
    case 3:
      return PMPI_Iallgather(in, n, d, out, n, d, w, q);
    default:
      return PMPI_Ialltoall(in, n, d, out, n, d, w, q);
  }
}
static int init(int c, MPI_Request* q) {
  MPI_Comm w = MPI_COMM_WORLD;
  MPI_Info f = MPI_INFO_NULL;
  MPI_Datatype d = MPI_DOUBLE;
  switch (c) {
    case 0:
      return PMPI_Bcast_init(out, n, d, 0, w, f, q);
    case 1:
      return PMPI_Gather_init(in, n, d, out, n, d, 0, w, f, q);
    case 2:
      return PMPI_Scatter_init(in, n, d, out, n, d, 0, w, f, q);
    case 3:
      return PMPI_Allgather_init(in, n, d, out, n, d, w, f, q);
    case 4:
      return PMPI_Alltoall_init(in, n, d, out, n, d, w, f, q);
    case 5:
      return PMPI_Gatherv_init(in, n, d, out, cnt, dsp, d, 0, w, f, q);
    case 6:
      return PMPI_Scatterv_init(in, cnt, dsp, d, out, n, d, 0, w, f, q);
    case 7:
      return PMPI_Allgatherv_init(in, n, d, out, cnt, dsp, d, w, f, q);
    case 8:
      return PMPI_Alltoallv_init(in, cnt, dsp, d, out, cnt, dsp, d, w, f, q);
    case 9:
      return PMPI_Allreduce_init(in, out, n, d, MPI_SUM, w, f, q);
    case 10:
      return PMPI_Reduce_init(in, out, n, d, MPI_SUM, 0, w, f, q);
    case 11:
      return PMPI_Reduce_scatter_block_init(in, out, n, d, MPI_SUM, w, f, q);
    case 12:
      return PMPI_Scan_init(in, out, n, d, MPI_SUM, w, f, q);
    default:
      return PMPI_Exscan_init(in, out, n, d, MPI_SUM, w, f, q);
  }
}
static void blocking(int c) {
  MPI_Comm w = MPI_COMM_WORLD;
  MPI_Datatype d = MPI_DOUBLE;
  switch (c) {
    case 0:
      memcpy(want, in, sizeof(double) * n);
      PMPI_Bcast(want, n, d, 0, w);
      break;
    case 1:
      PMPI_Gather(in, n, d, want, n, d, 0, w);
      break;
    case 2:
      PMPI_Scatter(in, n, d, want, n, d, 0, w);
      break;
    case 3:
      PMPI_Allgather(in, n, d, want, n, d, w);
      break;
    case 4:
      PMPI_Alltoall(in, n, d, want, n, d, w);
      break;
    case 5:
      PMPI_Gatherv(in, n, d, want, cnt, dsp, d, 0, w);
      break;
    case 6:
      PMPI_Scatterv(in, cnt, dsp, d, want, n, d, 0, w);
      break;
    case 7:
      PMPI_Allgatherv(in, n, d, want, cnt, dsp, d, w);
      break;
    case 8:
      PMPI_Alltoallv(in, cnt, dsp, d, want, cnt, dsp, d, w);
      break;
    case 9:
      PMPI_Allreduce(in, want, n, d, MPI_SUM, w);
      break;
    case 10:
      PMPI_Reduce(in, want, n, d, MPI_SUM, 0, w);
      break;
    case 11:
      PMPI_Reduce_scatter_block(in, want, n, d, MPI_SUM, w);
      break;
    case 12:
      PMPI_Scan(in, want, n, d, MPI_SUM, w);
      break;
    default:
      PMPI_Exscan(in, want, n, d, MPI_SUM, w);
  }
}
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  n = atoi(argv[1]);
  nb = argc > 2;
  in = malloc(sizeof(double) * n * p);
  out = malloc(sizeof(double) * n * p);
  want = malloc(sizeof(double) * n * p);
  for (int j = 0; j < p; ++j) cnt[j] = n, dsp[j] = j * n;
  const char* names[] = {"bcast",     "gather",    "scatter",  "allgather",
                         "alltoall",  "gatherv",   "scatterv", "allgatherv",
                         "alltoallv", "allreduce", "reduce",   "reduce_scatter_block",
                         "scan",      "exscan"};
  const long len[] = {n,           (long)n * p, n, (long)n * p, (long)n * p, (long)n * p, n,
                      (long)n * p, (long)n * p, n, n,           n,           n,           n};
  for (int c = 0; c < (nb ? 5 : NC); ++c) {
    MPI_Request q = MPI_REQUEST_NULL;
    if (!nb) init(c, &q);
    int bad = 0;
    for (int k = 0; k < RUNS; ++k) {
      fill(k);
      blocking(c);
      memset(out, 0, sizeof(double) * n * p);
      if (c == 0 && r == 0) memcpy(out, in, sizeof(double) * n);
      if (nb)
        post(c, &q);
      else
        PMPI_Start(&q);
      PMPI_Wait(&q, MPI_STATUS_IGNORE);
      if (c == 13 && r == 0) continue; /* exscan: rank 0's result undefined */
      if (!((c == 1 || c == 5 || c == 10) && r != 0) && memcmp(out, want, sizeof(double) * len[c]))
        bad++;
    }
    int all = 0;
    PMPI_Reduce(&bad, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (r == 0) printf("%-21s n=%d: %d wrong runs of %d (all ranks)\n", names[c], n, all, RUNS * p);
    if (!nb) PMPI_Request_free(&q);
  }
  MPI_Finalize();
}
