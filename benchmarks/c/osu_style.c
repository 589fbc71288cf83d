/* osu_style: a plain MPI collective benchmark in the manner of the OSU
 * micro-benchmarks. It knows nothing of shancoll: run it unchanged with and
 * without LD_PRELOAD=libshancoll_pmpi.so to compare (benchmarks/peers.py).
 *
 * Per collective and message size: warm-up calls, then timed calls each
 * preceded by MPI_Barrier (so no call overlaps the previous one), the mean
 * and the median time per call on each rank, and the maximum of each over
 * the ranks.
 * Sizes are bytes per rank: the buffer of allreduce, bcast, reduce, scan and
 * exscan (MPI_DOUBLE, MPI_SUM; root 0), each rank's block of allgather,
 * allgatherv, gather, scatter, alltoall (bytes per destination) and
 * reduce_scatter_block (MPI_BYTE, or MPI_DOUBLE where reducing; allgatherv
 * with equal counts, as OSU does); barrier runs once, as 0 bytes.
 *
 * allreduce_float (MPI_FLOAT, MPI_SUM) runs only when -c names it.
 * Usage: osu_style [-m max_bytes] [-i iterations] [-w warmup] [-c collective[,collective...]]
 *   defaults: sizes 8 B to 4 MiB doubling, 1000 iterations up to 8 KiB and 100
 *   above, a tenth of that as warm-up, every collective.
 * Output on rank 0: "# ..." header lines, then "collective bytes avg_us median_us".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*Call)(char* send, char* recv, int bytes, const int* counts, const int* displs);

static void allreduce(char* send, char* recv, int bytes, const int* c, const int* d) {
  (void)c, (void)d;
  MPI_Allreduce(send, recv, bytes / (int)sizeof(double), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

static void allreduce_float(char* send, char* recv, int bytes, const int* c, const int* d) {
  (void)c, (void)d;
  MPI_Allreduce(send, recv, bytes / (int)sizeof(float), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static void reduce(char* send, char* recv, int bytes, const int* c, const int* d) {
  (void)c, (void)d;
  MPI_Reduce(send, recv, bytes / (int)sizeof(double), MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
}

static void bcast(char* send, char* recv, int bytes, const int* c, const int* d) {
  (void)recv, (void)c, (void)d;
  MPI_Bcast(send, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

static void allgather(char* send, char* recv, int bytes, const int* c, const int* d) {
  (void)c, (void)d;
  MPI_Allgather(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, MPI_COMM_WORLD);
}

static void allgatherv(char* send, char* recv, int bytes, const int* counts, const int* displs) {
  MPI_Allgatherv(send, bytes, MPI_BYTE, recv, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
}

static void barrier(char* send, char* recv, int bytes, const int* c, const int* d) {
  (void)send, (void)recv, (void)bytes, (void)c, (void)d;
  MPI_Barrier(MPI_COMM_WORLD);
}

static void gather(char* send, char* recv, int bytes, const int* c, const int* d) {
  (void)c, (void)d;
  MPI_Gather(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

static void scatter(char* send, char* recv, int bytes, const int* c, const int* d) {
  (void)c, (void)d;
  MPI_Scatter(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

static void alltoall(char* send, char* recv, int bytes, const int* c, const int* d) {
  (void)c, (void)d;
  MPI_Alltoall(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, MPI_COMM_WORLD);
}

static void reduce_scatter_block(char* send, char* recv, int bytes, const int* c, const int* d) {
  (void)c, (void)d;
  MPI_Reduce_scatter_block(send, recv, bytes / (int)sizeof(double), MPI_DOUBLE, MPI_SUM,
                           MPI_COMM_WORLD);
}

static void scan(char* send, char* recv, int bytes, const int* c, const int* d) {
  (void)c, (void)d;
  MPI_Scan(send, recv, bytes / (int)sizeof(double), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

static void exscan(char* send, char* recv, int bytes, const int* c, const int* d) {
  (void)c, (void)d;
  MPI_Exscan(send, recv, bytes / (int)sizeof(double), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

/* sized: run at every size (barrier runs once, as 0 bytes); named: only
 * when -c names it (allreduce_float: MPI_FLOAT, MPI_SUM). */
static const struct {
  const char* name;
  Call call;
  int sized, named;
} kCollectives[] = {{"allgather", allgather, 1, 0},
                    {"allgatherv", allgatherv, 1, 0},
                    {"allreduce", allreduce, 1, 0},
                    {"bcast", bcast, 1, 0},
                    {"reduce", reduce, 1, 0},
                    {"barrier", barrier, 0, 0},
                    {"gather", gather, 1, 0},
                    {"scatter", scatter, 1, 0},
                    {"alltoall", alltoall, 1, 0},
                    {"reduce_scatter_block", reduce_scatter_block, 1, 0},
                    {"scan", scan, 1, 0},
                    {"exscan", exscan, 1, 0},
                    {"allreduce_float", allreduce_float, 1, 1}};

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* The slowest rank's mean and median seconds per call (the median resists
 * the preemptions of a shared machine; OSU reports the mean). */
static void measure(Call call, char* send, char* recv, int bytes, int* counts, int* displs,
                    int iterations, int warmup, double* times, double slowest[2]) {
  for (int i = 0; i < warmup; ++i) call(send, recv, bytes, counts, displs);
  double mine[2] = {0, 0};
  for (int i = 0; i < iterations; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    call(send, recv, bytes, counts, displs);
    times[i] = MPI_Wtime() - start;
    mine[0] += times[i];
  }
  mine[0] /= iterations;
  qsort(times, (size_t)iterations, sizeof *times, by_value);
  mine[1] = times[iterations / 2];
  MPI_Allreduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
}

static int option(int argc, char** argv, const char* flag, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (strcmp(argv[i], flag) == 0) return atoi(argv[i + 1]);
  return fallback;
}

static const char* text_option(int argc, char** argv, const char* flag) {
  for (int i = 1; i + 1 < argc; ++i)
    if (strcmp(argv[i], flag) == 0) return argv[i + 1];
  return NULL;
}

/* Whether `name` is one of the comma-separated names in `list`. */
static int listed(const char* list, const char* name) {
  const size_t n = strlen(name);
  for (const char* p = list; p; p = strchr(p, ',')) {
    if (*p == ',') ++p;
    if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0')) return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int max_bytes = option(argc, argv, "-m", 4 << 20);
  const int iterations = option(argc, argv, "-i", 0), warmup = option(argc, argv, "-w", -1);
  const char* only = text_option(argc, argv, "-c");
  char* send = calloc((size_t)max_bytes * (size_t)size, 1); /* alltoall, scatter: one per rank */
  char* recv = calloc((size_t)max_bytes * (size_t)size, 1);
  int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
  double* times = malloc(sizeof(double) * (size_t)(iterations > 0 ? iterations : 1000));
  if (rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    printf("# osu_style: %d ranks, %.*s\n", size, (int)strcspn(version, "\n"), version);
    printf("# collective bytes avg_us median_us (per call; the slowest rank's)\n");
  }
  for (size_t c = 0; c < sizeof kCollectives / sizeof *kCollectives; ++c) {
    if (only ? !listed(only, kCollectives[c].name) : kCollectives[c].named) continue;
    const int first = kCollectives[c].sized ? 8 : 0, last = kCollectives[c].sized ? max_bytes : 0;
    for (int bytes = first; bytes <= last; bytes = bytes ? 2 * bytes : 1) {
      for (int r = 0; r < size; ++r) counts[r] = bytes, displs[r] = r * bytes;
      const int iters = iterations > 0 ? iterations : (bytes <= 8192 ? 1000 : 100);
      const int warm = warmup >= 0 ? warmup : iters / 10;
      double seconds[2];
      measure(kCollectives[c].call, send, recv, bytes, counts, displs, iters, warm, times, seconds);
      if (rank == 0)
        printf("%s %d %.3f %.3f\n", kCollectives[c].name, bytes, seconds[0] * 1e6,
               seconds[1] * 1e6);
      fflush(stdout);
    }
  }
  free(send), free(recv), free(counts), free(displs), free(times);
  MPI_Finalize();
  return 0;
}
