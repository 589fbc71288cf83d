/* persistent_calls: time per call of the collectives, blocking and
 * persistent (MPI_<Coll>_init once, then MPI_Start + MPI_Wait per call), as
 * a plain MPI program: run it under LD_PRELOAD=libshancoll_pmpi.so and the
 * MPI_ series are shancoll's (the persistent ones routed to the inline
 * engines where they fit), the PMPI_ series the MPI library's own, in the
 * same job (docs/performance.md, "Persistent collectives, 8 bytes" and
 * "Persistent collectives, 64 KiB to 4 MiB").
 *
 * Per collective, REPEATS rounds; in each round every series runs N calls
 * back to back after a barrier (the series interleaved, so that the VM's
 * slow and fast phases fall on all of them alike), timed on every rank; a
 * round's value is the slowest rank's time per call. Printed per series:
 * the median and the range over the rounds, in microseconds.
 *
 * Usage: persistent_calls [N] [REPEATS] [collectives] [BYTES]
 *   defaults: 20000 calls, 7 repeats, bcast,reduce,allgather,allreduce,
 *   8 bytes (also: barrier, allgatherv, alltoall, gather, scatter,
 *   reduce_scatter_block, scan, exscan, and gatherv, scatterv, alltoallv,
 *   reduce_scatter with the regular layout). bcast, reduce, gather and scatter
 *   have root 0; BYTES / 8 doubles (MPI_SUM); allgather(v), gather and
 *   scatter BYTES per rank, alltoall and reduce_scatter_block per block. The buffers are
 * set once (the persistent requests' buffers stay the same), so the figures are of warm caches.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kMaxRanks = 64, kMaxRepeats = 64, kSeries = 4 };
static double *x, *y, *z;            /* BYTES; BYTES per rank; alltoall's send buffer */
static int count = 1;                /* doubles in x */
static MPI_Request g_own, g_library; /* MPI_<Coll>_init's, PMPI_<Coll>_init's */

typedef int (*Call)(int direct);

static int bcast(int d) {
  return (d ? PMPI_Bcast : MPI_Bcast)(x, count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
}
static int reduce(int d) {
  return (d ? PMPI_Reduce : MPI_Reduce)(x, y, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
}
static int allgather(int d) {
  return (d ? PMPI_Allgather : MPI_Allgather)(x, count, MPI_DOUBLE, y, count, MPI_DOUBLE,
                                              MPI_COMM_WORLD);
}
static int barrier(int d) { return (d ? PMPI_Barrier : MPI_Barrier)(MPI_COMM_WORLD); }
static int counts[kMaxRanks], displs[kMaxRanks]; /* allgatherv: count each, packed */
static int allgatherv(int d) {
  return (d ? PMPI_Allgatherv : MPI_Allgatherv)(x, count, MPI_DOUBLE, y, counts, displs, MPI_DOUBLE,
                                                MPI_COMM_WORLD);
}
static int alltoall(int d) {
  return (d ? PMPI_Alltoall : MPI_Alltoall)(z, count, MPI_DOUBLE, y, count, MPI_DOUBLE,
                                            MPI_COMM_WORLD);
}
static int allreduce(int d) {
  return (d ? PMPI_Allreduce : MPI_Allreduce)(x, y, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}
static int gather(int d) {
  return (d ? PMPI_Gather : MPI_Gather)(x, count, MPI_DOUBLE, y, count, MPI_DOUBLE, 0,
                                        MPI_COMM_WORLD);
}
static int scatter(int d) {
  return (d ? PMPI_Scatter : MPI_Scatter)(z, count, MPI_DOUBLE, x, count, MPI_DOUBLE, 0,
                                          MPI_COMM_WORLD);
}
static int reduce_scatter_block(int d) {
  return (d ? PMPI_Reduce_scatter_block : MPI_Reduce_scatter_block)(z, x, count, MPI_DOUBLE,
                                                                    MPI_SUM, MPI_COMM_WORLD);
}
static int scan(int d) {
  return (d ? PMPI_Scan : MPI_Scan)(x, y, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}
static int exscan(int d) {
  return (d ? PMPI_Exscan : MPI_Exscan)(x, y, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}
/* The v-forms with the regular layout (counts each, packed): their engines' cost beside the
 * regular forms'. */
static int gatherv(int d) {
  return (d ? PMPI_Gatherv : MPI_Gatherv)(x, count, MPI_DOUBLE, y, counts, displs, MPI_DOUBLE, 0,
                                          MPI_COMM_WORLD);
}
static int scatterv(int d) {
  return (d ? PMPI_Scatterv : MPI_Scatterv)(z, counts, displs, MPI_DOUBLE, x, count, MPI_DOUBLE, 0,
                                            MPI_COMM_WORLD);
}
static int alltoallv(int d) {
  return (d ? PMPI_Alltoallv : MPI_Alltoallv)(z, counts, displs, MPI_DOUBLE, y, counts, displs,
                                              MPI_DOUBLE, MPI_COMM_WORLD);
}
static int reduce_scatter(int d) {
  return (d ? PMPI_Reduce_scatter : MPI_Reduce_scatter)(z, x, counts, MPI_DOUBLE, MPI_SUM,
                                                        MPI_COMM_WORLD);
}
static void init_bcast(int d, MPI_Request* r) {
  (d ? PMPI_Bcast_init : MPI_Bcast_init)(x, count, MPI_DOUBLE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, r);
}
static void init_reduce(int d, MPI_Request* r) {
  (d ? PMPI_Reduce_init : MPI_Reduce_init)(x, y, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD,
                                           MPI_INFO_NULL, r);
}
static void init_allgather(int d, MPI_Request* r) {
  (d ? PMPI_Allgather_init : MPI_Allgather_init)(x, count, MPI_DOUBLE, y, count, MPI_DOUBLE,
                                                 MPI_COMM_WORLD, MPI_INFO_NULL, r);
}
static void init_barrier(int d, MPI_Request* r) {
  (d ? PMPI_Barrier_init : MPI_Barrier_init)(MPI_COMM_WORLD, MPI_INFO_NULL, r);
}
static void init_allgatherv(int d, MPI_Request* r) {
  (d ? PMPI_Allgatherv_init : MPI_Allgatherv_init)(x, count, MPI_DOUBLE, y, counts, displs,
                                                   MPI_DOUBLE, MPI_COMM_WORLD, MPI_INFO_NULL, r);
}
static void init_alltoall(int d, MPI_Request* r) {
  (d ? PMPI_Alltoall_init : MPI_Alltoall_init)(z, count, MPI_DOUBLE, y, count, MPI_DOUBLE,
                                               MPI_COMM_WORLD, MPI_INFO_NULL, r);
}
static void init_allreduce(int d, MPI_Request* r) {
  (d ? PMPI_Allreduce_init : MPI_Allreduce_init)(x, y, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                                                 MPI_INFO_NULL, r);
}

static void init_gather(int d, MPI_Request* r) {
  (d ? PMPI_Gather_init : MPI_Gather_init)(x, count, MPI_DOUBLE, y, count, MPI_DOUBLE, 0,
                                           MPI_COMM_WORLD, MPI_INFO_NULL, r);
}
static void init_scatter(int d, MPI_Request* r) {
  (d ? PMPI_Scatter_init : MPI_Scatter_init)(z, count, MPI_DOUBLE, x, count, MPI_DOUBLE, 0,
                                             MPI_COMM_WORLD, MPI_INFO_NULL, r);
}
static void init_reduce_scatter_block(int d, MPI_Request* r) {
  (d ? PMPI_Reduce_scatter_block_init : MPI_Reduce_scatter_block_init)(
      z, x, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, r);
}
static void init_scan(int d, MPI_Request* r) {
  (d ? PMPI_Scan_init : MPI_Scan_init)(x, y, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                                       MPI_INFO_NULL, r);
}
static void init_exscan(int d, MPI_Request* r) {
  (d ? PMPI_Exscan_init : MPI_Exscan_init)(x, y, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                                           MPI_INFO_NULL, r);
}

static void init_gatherv(int d, MPI_Request* r) {
  (d ? PMPI_Gatherv_init : MPI_Gatherv_init)(x, count, MPI_DOUBLE, y, counts, displs, MPI_DOUBLE, 0,
                                             MPI_COMM_WORLD, MPI_INFO_NULL, r);
}
static void init_scatterv(int d, MPI_Request* r) {
  (d ? PMPI_Scatterv_init : MPI_Scatterv_init)(z, counts, displs, MPI_DOUBLE, x, count, MPI_DOUBLE,
                                               0, MPI_COMM_WORLD, MPI_INFO_NULL, r);
}
static void init_alltoallv(int d, MPI_Request* r) {
  (d ? PMPI_Alltoallv_init : MPI_Alltoallv_init)(z, counts, displs, MPI_DOUBLE, y, counts, displs,
                                                 MPI_DOUBLE, MPI_COMM_WORLD, MPI_INFO_NULL, r);
}
static void init_reduce_scatter(int d, MPI_Request* r) {
  (d ? PMPI_Reduce_scatter_init : MPI_Reduce_scatter_init)(z, x, counts, MPI_DOUBLE, MPI_SUM,
                                                           MPI_COMM_WORLD, MPI_INFO_NULL, r);
}

static const struct {
  const char* name;
  Call call;
  void (*init)(int direct, MPI_Request* r);
} kColls[] = {
    {"bcast", bcast, init_bcast},
    {"reduce", reduce, init_reduce},
    {"allgather", allgather, init_allgather},
    {"allreduce", allreduce, init_allreduce},
    {"barrier", barrier, init_barrier},
    {"allgatherv", allgatherv, init_allgatherv},
    {"alltoall", alltoall, init_alltoall},
    {"gather", gather, init_gather},
    {"scatter", scatter, init_scatter},
    {"reduce_scatter_block", reduce_scatter_block, init_reduce_scatter_block},
    {"scan", scan, init_scan},
    {"exscan", exscan, init_exscan},
    {"gatherv", gatherv, init_gatherv},
    {"scatterv", scatterv, init_scatterv},
    {"alltoallv", alltoallv, init_alltoallv},
    {"reduce_scatter", reduce_scatter, init_reduce_scatter},
};

static const char* kNames[kSeries] = {"MPI_<Coll> (blocking)", "MPI_<Coll>_init start+wait",
                                      "PMPI_<Coll> (blocking)", "PMPI_<Coll>_init start+wait"};

/* One series: n calls; the slowest rank's seconds per call. */
static double series(int which, Call call, int n) {
  PMPI_Barrier(MPI_COMM_WORLD);
  const double t0 = PMPI_Wtime();
  for (int i = 0; i < n; ++i) {
    if (which == 0) call(0);
    if (which == 1) MPI_Start(&g_own), MPI_Wait(&g_own, MPI_STATUS_IGNORE);
    if (which == 2) call(1);
    if (which == 3) PMPI_Start(&g_library), PMPI_Wait(&g_library, MPI_STATUS_IGNORE);
  }
  double t = (PMPI_Wtime() - t0) / n, slowest = 0;
  PMPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

/* Whether `name` is one of the comma-separated `list`'s entries. */
static int listed(const char* list, const char* name) {
  const size_t n = strlen(name);
  for (const char* at = list; (at = strstr(at, name)); at += n)
    if ((at == list || at[-1] == ',') && (at[n] == ',' || at[n] == '\0')) return 1;
  return 0;
}

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 20000;
  int repeats = argc > 2 ? atoi(argv[2]) : 7;
  const char* which = argc > 3 ? argv[3] : "bcast,reduce,allgather,allreduce";
  const long bytes = argc > 4 ? atol(argv[4]) : 8;
  if (repeats > kMaxRepeats) repeats = kMaxRepeats;
  count = bytes < 8 ? 1 : (int)(bytes / 8);
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > kMaxRanks) MPI_Abort(MPI_COMM_WORLD, 2);
  x = malloc((size_t)count * sizeof *x);
  y = malloc((size_t)count * (size_t)size * sizeof *y);
  z = malloc((size_t)count * (size_t)size * sizeof *z);
  if (!x || !y || !z) MPI_Abort(MPI_COMM_WORLD, 2);
  for (int i = 0; i < count * size; ++i) z[i] = 1 + i % 5;
  for (int i = 0; i < count; ++i) x[i] = 1 + i % 7;
  memset(y, 0, (size_t)count * (size_t)size * sizeof *y);
  for (int r = 0; r < size; ++r) counts[r] = count, displs[r] = r * count;
  if (rank == 0)
    printf("# %d ranks, %ld bytes, %d calls per series, %d rounds: median [min, max] us\n", size,
           (long)count * 8, n, repeats);
  for (size_t c = 0; c < sizeof kColls / sizeof kColls[0]; ++c) {
    if (!listed(which, kColls[c].name)) continue;
    kColls[c].init(0, &g_own);
    kColls[c].init(1, &g_library);
    double us[kSeries][kMaxRepeats];
    for (int s = 0; s < kSeries; ++s) series(s, kColls[c].call, n / 10); /* warm-up */
    for (int r = 0; r < repeats; ++r)
      for (int s = 0; s < kSeries; ++s) us[s][r] = 1e6 * series(s, kColls[c].call, n);
    for (int s = 0; s < kSeries && rank == 0; ++s) {
      qsort(us[s], (size_t)repeats, sizeof(double), by_value);
      printf("%-10s %-28s %7.3f [%.3f, %.3f]\n", kColls[c].name, kNames[s], us[s][repeats / 2],
             us[s][0], us[s][repeats - 1]);
    }
    MPI_Request_free(&g_own);
    PMPI_Request_free(&g_library);
  }
  free(x);
  free(y);
  free(z);
  MPI_Finalize();
  return 0;
}
