/* MPI's progress rule through the PMPI library: a window of outstanding
 * nonblocking collectives, MPI_Iallreduce (shancoll's, under the preload)
 * and MPI_Ibcast (the MPI library's), on several communicators, completed by
 * every rank in an order of its own (MPI_Wait, or an MPI_Test loop) with
 * short random sleeps. A shancoll request that advanced only when the
 * program tested that very request would deadlock from 3 ranks on; every
 * result is checked.
 *
 * Usage: mpiexec -n N shancoll_pmpi_progress [windows]
 * Prints "pmpi_check: <checks> checks, <failed> failed" (tests/test_pmpi.py). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { WINDOW = 20, COMMS = 4, MAX_COUNT = 1000 };

typedef struct {
  MPI_Request request;
  long long got[MAX_COUNT];
  long long want[MAX_COUNT];
  int count;
  int by_test;
} Op;

static void start(Op* op, int i, MPI_Comm comm, int kind, int count) {
  int p, r;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  long long send[MAX_COUNT];
  op->count = count;
  op->by_test = i % 2;
  if (kind == 0) { /* allreduce: shancoll's under the preload */
    for (int k = 0; k < count; ++k) {
      send[k] = k + (long long)(r + 1) * (i + 1);
      op->want[k] = (long long)k * p + (long long)(i + 1) * p * (p + 1) / 2;
    }
    MPI_Iallreduce(send, op->got, count, MPI_LONG_LONG, MPI_SUM, comm, &op->request);
  } else { /* bcast: the MPI library's */
    const int root = i % p;
    for (int k = 0; k < count; ++k) {
      op->want[k] = k + (long long)(root + 1) * (i + 1);
      op->got[k] = r == root ? op->want[k] : -1;
    }
    MPI_Ibcast(op->got, count, MPI_LONG_LONG, root, comm, &op->request);
  }
}

static void complete(Op* op) {
  if (!op->by_test) {
    MPI_Wait(&op->request, MPI_STATUS_IGNORE);
    return;
  }
  for (int done = 0; !done;) MPI_Test(&op->request, &done, MPI_STATUS_IGNORE);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int windows = argc > 1 ? atoi(argv[1]) : 100;
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm comms[COMMS];
  for (int c = 0; c < COMMS; ++c) MPI_Comm_dup(MPI_COMM_WORLD, &comms[c]);
  static Op ops[WINDOW];
  int order[WINDOW];
  unsigned shared = 2026;                 /* the same starts on every rank */
  unsigned mine = 1000u + (unsigned)rank; /* this rank's completion order and sleeps */
  const int counts[] = {1, 7, 255, 1000};
  long checks = 0, failed = 0;
  for (int w = 0; w < windows; ++w) {
    for (int i = 0; i < WINDOW; ++i) {
      const int kind = rand_r(&shared) % 3 == 2; /* 2 allreduce : 1 bcast */
      start(&ops[i], i, comms[rand_r(&shared) % COMMS], kind, counts[rand_r(&shared) % 4]);
      order[i] = i;
    }
    for (int i = WINDOW - 1; i > 0; --i) { /* Fisher-Yates */
      const int j = rand_r(&mine) % (i + 1), t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    for (int i = 0; i < WINDOW; ++i) {
      Op* op = &ops[order[i]];
      if (rand_r(&mine) % 10 < 3) {
        struct timespec pause = {0, (long)(rand_r(&mine) % 200) * 1000};
        nanosleep(&pause, NULL);
      }
      complete(op);
      int ok = 1;
      for (int k = 0; k < op->count; ++k) ok &= op->got[k] == op->want[k];
      ++checks;
      if (!ok) {
        ++failed;
        if (failed <= 5)
          fprintf(stderr, "rank %d: window %d request %d wrong\n", rank, w, order[i]);
      }
    }
  }
  for (int c = 0; c < COMMS; ++c) MPI_Comm_free(&comms[c]);
  long all[2] = {checks, failed};
  MPI_Allreduce(MPI_IN_PLACE, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("pmpi_check: %ld checks, %ld failed\n", all[0], all[1]);
  MPI_Finalize();
  return 0;
}
