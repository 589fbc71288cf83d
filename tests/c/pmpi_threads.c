/* pmpi_threads: a plain MPI program whose threads call collectives at once,
 * each on a communicator of its own, at MPI_THREAD_MULTIPLE (MPI allows
 * concurrent collectives on different communicators).
 *
 * Each thread runs a mix of allreduce, allgather, allgatherv, bcast, reduce,
 * iallreduce (MPI_Wait or an MPI_Test loop) and a persistent allreduce (made,
 * started three times, freed: the PMPI library's table of routed requests
 * changes while the other threads look theirs up) of several sizes on its own
 * MPI_Comm_dup of MPI_COMM_WORLD, each call once through MPI_* (interposed
 * by libshancoll_pmpi.so when preloaded) and once through PMPI_* (the MPI
 * library's own), and compares the results bitwise (small integers: sums are
 * exact in any order). Every few iterations a thread also creates a
 * communicator (a dup or a reversed split of its own), runs an allreduce on
 * it and frees it, while the other threads keep calling collectives.
 *
 * Usage: pmpi_threads THREADS ITERATIONS
 * Output: one line per mismatch; on rank 0 "pmpi_threads: calls <collective>=<n> ..."
 * (the MPI_* calls each rank made, for the PMPI library's summary to be
 * compared with) and "pmpi_threads: N checks, M failed"; the exit status is
 * 1 when any check failed anywhere, 2 when MPI_THREAD_MULTIPLE is missing.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALLREDUCE, ALLGATHER, ALLGATHERV, BCAST, REDUCE, IALLREDUCE, PERSISTENT, KINDS };
/* PERSISTENT counts runs: the PMPI library's summary counts a routed one per run. */
static const char* const kNames[KINDS] = {"MPI_Allreduce",     "MPI_Allgather", "MPI_Allgatherv",
                                          "MPI_Bcast",         "MPI_Reduce",    "MPI_Iallreduce",
                                          "MPI_Allreduce_init"};
/* Elements per call: inline flags, medium and pipelined messages. */
static const int kSizes[] = {1, 9, 300, 2500, 20000};
enum { SIZES = sizeof kSizes / sizeof kSizes[0], MAX_N = 20000, MAX_THREADS = 16 };

static int g_rank, g_size, g_iterations;
/* The threads' first calls start together: shancoll's lazy set-up (its
 * keyvals, the first Comm of each communicator) then races if it can. */
static pthread_barrier_t g_start;

struct Worker {
  int index;
  MPI_Comm comm;
  long checks, failed, calls[KINDS];
  int *in, *got, *want, *counts, *displs; /* buffers of this thread */
};

static void expect_same(struct Worker* w, const void* got, const void* want, size_t bytes,
                        const char* what, int n, int iteration) {
  ++w->checks;
  if (memcmp(got, want, bytes) == 0) return;
  ++w->failed;
  fprintf(stderr, "pmpi_threads: rank %d thread %d: MISMATCH %s n=%d iteration %d\n", g_rank,
          w->index, what, n, iteration);
}

static void fill(int* buf, int n, int seed) {
  for (int i = 0; i < n; ++i) buf[i] = (g_rank + seed + i) % 7 + 1;
}

static void allreduce(struct Worker* w, MPI_Comm comm, int n, int it) {
  fill(w->in, n, it);
  MPI_Op op = it % 2 ? MPI_SUM : MPI_MAX;
  MPI_Allreduce(w->in, w->got, n, MPI_INT, op, comm);
  PMPI_Allreduce(w->in, w->want, n, MPI_INT, op, comm);
  expect_same(w, w->got, w->want, n * sizeof(int), "allreduce", n, it);
}

static void allgather(struct Worker* w, int n, int it) {
  const int each = n / g_size + 1;
  fill(w->in, each, it);
  MPI_Allgather(w->in, each, MPI_INT, w->got, each, MPI_INT, w->comm);
  PMPI_Allgather(w->in, each, MPI_INT, w->want, each, MPI_INT, w->comm);
  expect_same(w, w->got, w->want, (size_t)each * g_size * sizeof(int), "allgather", n, it);
}

/* Rank r sends n / size + r elements, placed with a gap of 3 before each. */
static void allgatherv(struct Worker* w, int n, int it) {
  int total = 0;
  for (int r = 0; r < g_size; ++r) {
    w->counts[r] = n / g_size + r;
    w->displs[r] = total + 3;
    total += w->counts[r] + 3;
  }
  fill(w->in, w->counts[g_rank], it);
  memset(w->got, 0, total * sizeof(int));
  memset(w->want, 0, total * sizeof(int));
  MPI_Allgatherv(w->in, w->counts[g_rank], MPI_INT, w->got, w->counts, w->displs, MPI_INT, w->comm);
  PMPI_Allgatherv(w->in, w->counts[g_rank], MPI_INT, w->want, w->counts, w->displs, MPI_INT,
                  w->comm);
  expect_same(w, w->got, w->want, total * sizeof(int), "allgatherv", n, it);
}

static void bcast(struct Worker* w, int n, int it) {
  const int root = it % g_size;
  fill(w->got, n, it);
  fill(w->want, n, it);
  MPI_Bcast(w->got, n, MPI_INT, root, w->comm);
  PMPI_Bcast(w->want, n, MPI_INT, root, w->comm);
  expect_same(w, w->got, w->want, n * sizeof(int), "bcast", n, it);
}

static void reduce(struct Worker* w, int n, int it) {
  const int root = (it + 1) % g_size;
  fill(w->in, n, it);
  memset(w->got, 0, n * sizeof(int));
  memset(w->want, 0, n * sizeof(int));
  MPI_Reduce(w->in, w->got, n, MPI_INT, MPI_SUM, root, w->comm);
  PMPI_Reduce(w->in, w->want, n, MPI_INT, MPI_SUM, root, w->comm);
  expect_same(w, w->got, w->want, n * sizeof(int), "reduce", n, it);
}

static void iallreduce(struct Worker* w, int n, int it) {
  fill(w->in, n, it);
  MPI_Request request;
  MPI_Iallreduce(w->in, w->got, n, MPI_INT, MPI_SUM, w->comm, &request);
  if (it % 2) {
    MPI_Wait(&request, MPI_STATUS_IGNORE);
  } else {
    for (int done = 0; !done;) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  }
  PMPI_Allreduce(w->in, w->want, n, MPI_INT, MPI_SUM, w->comm);
  expect_same(w, w->got, w->want, n * sizeof(int), "iallreduce", n, it);
}

/* At most 14 ints (56 bytes): shancoll's persistent engine under the preload. */
enum { RUNS = 3, PERSISTENT_MAX = 14 };

static void persistent(struct Worker* w, int n, int it) {
  n = n > PERSISTENT_MAX ? PERSISTENT_MAX : n;
  MPI_Request request;
  MPI_Allreduce_init(w->in, w->got, n, MPI_INT, MPI_SUM, w->comm, MPI_INFO_NULL, &request);
  for (int run = 0; run < RUNS; ++run) {
    fill(w->in, n, it + run);
    MPI_Start(&request);
    if (run % 2) {
      MPI_Wait(&request, MPI_STATUS_IGNORE);
    } else {
      for (int done = 0; !done;) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    }
    PMPI_Allreduce(w->in, w->want, n, MPI_INT, MPI_SUM, w->comm);
    expect_same(w, w->got, w->want, n * sizeof(int), "persistent allreduce", n, it);
  }
  MPI_Request_free(&request);
}

/* A communicator made and freed while the other threads run collectives:
 * shancoll sets up its state on the first call and frees it with it. */
static void new_communicator(struct Worker* w, int it) {
  MPI_Comm made;
  if (it % 2) {
    MPI_Comm_dup(w->comm, &made);
  } else {
    MPI_Comm_split(w->comm, 0, g_size - g_rank, &made); /* ranks reversed */
  }
  allreduce(w, made, kSizes[it % SIZES], it);
  ++w->calls[ALLREDUCE];
  MPI_Comm_free(&made);
}

static void* work(void* arg) {
  struct Worker* w = arg;
  pthread_barrier_wait(&g_start);
  for (int it = 0; it < g_iterations; ++it) {
    const int kind = (it + w->index) % KINDS;
    const int n = kSizes[(it / KINDS + w->index) % SIZES];
    switch (kind) {
      case ALLREDUCE:
        allreduce(w, w->comm, n, it);
        break;
      case ALLGATHER:
        allgather(w, n, it);
        break;
      case ALLGATHERV:
        allgatherv(w, n, it);
        break;
      case BCAST:
        bcast(w, n, it);
        break;
      case REDUCE:
        reduce(w, n, it);
        break;
      case IALLREDUCE:
        iallreduce(w, n, it);
        break;
      default:
        persistent(w, n, it);
        w->calls[kind] += RUNS - 1;
    }
    ++w->calls[kind];
    if (it % 40 == 39) new_communicator(w, it);
  }
  return NULL;
}

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (provided < MPI_THREAD_MULTIPLE || argc < 3) {
    if (g_rank == 0) fprintf(stderr, "pmpi_threads: needs MPI_THREAD_MULTIPLE and 2 arguments\n");
    MPI_Finalize();
    return 2;
  }
  int threads = atoi(argv[1]);
  threads = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
  g_iterations = atoi(argv[2]);
  struct Worker workers[MAX_THREADS];
  pthread_t ids[MAX_THREADS];
  const size_t room = (size_t)(MAX_N + 4 * g_size) * (size_t)g_size + 64;
  for (int t = 0; t < threads; ++t) { /* collective on MPI_COMM_WORLD: one thread */
    struct Worker* w = &workers[t];
    memset(w, 0, sizeof *w);
    w->index = t;
    MPI_Comm_dup(MPI_COMM_WORLD, &w->comm);
    w->in = malloc(room * sizeof(int));
    w->got = malloc(room * sizeof(int));
    w->want = malloc(room * sizeof(int));
    w->counts = malloc(g_size * sizeof(int));
    w->displs = malloc(g_size * sizeof(int));
  }
  pthread_barrier_init(&g_start, NULL, (unsigned)threads);
  for (int t = 0; t < threads; ++t) pthread_create(&ids[t], NULL, work, &workers[t]);
  long checks = 0, failed = 0, calls[KINDS] = {0};
  for (int t = 0; t < threads; ++t) {
    pthread_join(ids[t], NULL);
    struct Worker* w = &workers[t];
    checks += w->checks;
    failed += w->failed;
    for (int k = 0; k < KINDS; ++k) calls[k] += w->calls[k];
    MPI_Comm_free(&w->comm);
    free(w->in), free(w->got), free(w->want), free(w->counts), free(w->displs);
  }
  pthread_barrier_destroy(&g_start);
  long failed_anywhere = 0;
  PMPI_Allreduce(&failed, &failed_anywhere, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) {
    printf("pmpi_threads: calls");
    for (int k = 0; k < KINDS; ++k) printf(" %s=%ld", kNames[k], calls[k]);
    printf("\npmpi_threads: %ld checks, %ld failed\n", checks, failed_anywhere);
  }
  MPI_Finalize();
  return failed_anywhere ? 1 : 0;
}
