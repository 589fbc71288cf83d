/* capi_check: the C API (shancoll.h, libshancoll.so) called directly.
 *
 * Every registered algorithm of every collective is compared with the MPI
 * library's collective on the same inputs (this program is not run under the
 * PMPI library, so MPI_* here is MPI's own), and every refusal returns its
 * MPI error class and a message.
 *
 * Output: one line per failure, then "capi_check: N checks, M failed" on rank 0;
 * the exit status is 1 when any check failed anywhere.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shancoll.h"

enum { N = 777 };
static int g_rank, g_size, g_checks, g_failed;

static void expect(int ok, const char* what, const char* algorithm) {
  ++g_checks;
  if (ok) return;
  ++g_failed;
  fprintf(stderr, "capi_check: rank %d: FAILED %s (%s): last error '%s'\n", g_rank, what,
          algorithm ? algorithm : "auto", shancoll_last_error());
}

/* The call succeeded and ran the algorithm asked for. */
static void expect_ran(int rc, const char* what, const char* algorithm) {
  expect(rc == MPI_SUCCESS, what, algorithm);
  if (algorithm) expect(strcmp(shancoll_last_algorithm(), algorithm) == 0, what, algorithm);
}

static void fill(double* x, int n, int seed) {
  for (int i = 0; i < n; ++i) x[i] = (double)((g_rank + seed + i) % 5);
}

static void allreduce_algorithms(void) {
  const char* names[] = {"dissemination",
                         "nway_dissemination",
                         "bruck",
                         "pairwise_exchange",
                         "binomial",
                         "ring",
                         "release_gather",
                         "shan",
                         "mpi",
                         NULL};
  double in[N], got[N], want[N];
  fill(in, N, 0);
  MPI_Allreduce(in, want, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (size_t a = 0; a < sizeof names / sizeof *names; ++a) {
    memset(got, 0, sizeof got);
    expect_ran(shancoll_allreduce(in, got, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, names[a]),
               "allreduce", names[a]);
    expect(memcmp(got, want, sizeof got) == 0, "allreduce result", names[a]);
  }
}

static void rooted_algorithms(void) {
  const char* names[] = {"release_gather", "binomial", "mpi", NULL};
  double in[N], got[N], want[N];
  for (size_t a = 0; a < sizeof names / sizeof *names; ++a)
    for (int root = 0; root < g_size; ++root) {
      fill(got, N, root), fill(want, N, root);
      expect_ran(shancoll_bcast(got, N, MPI_DOUBLE, root, MPI_COMM_WORLD, names[a]), "bcast",
                 names[a]);
      MPI_Bcast(want, N, MPI_DOUBLE, root, MPI_COMM_WORLD);
      expect(memcmp(got, want, sizeof got) == 0, "bcast result", names[a]);
      fill(in, N, 1);
      memset(got, 0, sizeof got), memset(want, 0, sizeof want);
      expect_ran(shancoll_reduce(in, got, N, MPI_DOUBLE, MPI_MAX, root, MPI_COMM_WORLD, names[a]),
                 "reduce", names[a]);
      MPI_Reduce(in, want, N, MPI_DOUBLE, MPI_MAX, root, MPI_COMM_WORLD);
      expect(memcmp(got, want, sizeof got) == 0, "reduce result", names[a]);
    }
}

static void allgather_algorithms(void) {
  const char* names[] = {"shan", "ring", "bruck", "recursive_doubling", "mpi", NULL};
  int mine[N], *got = calloc((size_t)g_size * N, sizeof(int)),
               *want = calloc((size_t)g_size * N, sizeof(int));
  int *counts = malloc(sizeof(int) * g_size), *displs = malloc(sizeof(int) * g_size);
  for (int r = 0; r < g_size; ++r) counts[r] = N - r, displs[r] = r * N;
  for (int i = 0; i < N; ++i) mine[i] = g_rank * N + i;
  for (size_t a = 0; a < sizeof names / sizeof *names; ++a) {
    memset(got, 0, sizeof(int) * g_size * N), memset(want, 0, sizeof(int) * g_size * N);
    expect_ran(shancoll_allgather(mine, N, MPI_INT, got, N, MPI_INT, MPI_COMM_WORLD, names[a]),
               "allgather", names[a]);
    MPI_Allgather(mine, N, MPI_INT, want, N, MPI_INT, MPI_COMM_WORLD);
    expect(memcmp(got, want, sizeof(int) * g_size * N) == 0, "allgather result", names[a]);
    expect_ran(shancoll_allgatherv(mine, counts[g_rank], MPI_INT, got, counts, displs, MPI_INT,
                                   MPI_COMM_WORLD, names[a]),
               "allgatherv", names[a]);
    MPI_Allgatherv(mine, counts[g_rank], MPI_INT, want, counts, displs, MPI_INT, MPI_COMM_WORLD);
    expect(memcmp(got, want, sizeof(int) * g_size * N) == 0, "allgatherv result", names[a]);
  }
  free(got), free(want), free(counts), free(displs);
}

/* x o y = x: associative, not commutative. */
static void first(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  memcpy(inout, in, (size_t)*len * sizeof(int));
}

/* Each refusal: its error class, a message naming the argument, and no
 * communication (so the ranks stay in step without a matching call). */
static void refusals(void) {
  MPI_Datatype vector;
  MPI_Type_vector(2, 1, 2, MPI_INT, &vector);
  MPI_Type_commit(&vector);
  MPI_Op first_op;
  MPI_Op_create(first, 0, &first_op);
  int in[8] = {0}, out[8 * 64] = {0};
  expect(shancoll_bcast(in, 1, vector, 0, MPI_COMM_WORLD, NULL) == MPI_ERR_TYPE, "derived type",
         NULL);
  expect(strstr(shancoll_last_error(), "derived") != NULL, "derived type message", NULL);
  expect(shancoll_allreduce(in, out, 1, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD, NULL) == MPI_ERR_TYPE,
         "MPI_CHAR reduction", NULL);
  expect(shancoll_allreduce(in, out, 1, MPI_INT, MPI_MAXLOC, MPI_COMM_WORLD, NULL) == MPI_ERR_OP,
         "MPI_MAXLOC", NULL);
  if (g_size > 1) /* on one rank every order is rank order */
    expect(shancoll_allreduce(in, out, 1, MPI_INT, first_op, MPI_COMM_WORLD, "ring") == MPI_ERR_OP,
           "non-commutative op on ring", NULL);
  expect(shancoll_allreduce(in, out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, "nope") == MPI_ERR_ARG,
         "unknown algorithm", NULL);
  expect(strstr(shancoll_last_error(), "nope") != NULL, "unknown algorithm message", NULL);
  expect(shancoll_bcast(in, 1, MPI_INT, g_size, MPI_COMM_WORLD, NULL) == MPI_ERR_ROOT, "bad root",
         NULL);
  expect(shancoll_allreduce(in, out, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, NULL) == MPI_ERR_COUNT,
         "negative count", NULL);
  expect(shancoll_allreduce(in, out, 1, MPI_INT, MPI_SUM, MPI_COMM_NULL, NULL) == MPI_ERR_COMM,
         "MPI_COMM_NULL", NULL);
  expect(
      shancoll_allgather(in, 1, MPI_INT, out, 2, MPI_INT, MPI_COMM_WORLD, NULL) == MPI_ERR_TRUNCATE,
      "allgather size mismatch", NULL);
  /* A good call after the refusals works and clears the error. */
  expect(shancoll_allreduce(in, out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, NULL) == MPI_SUCCESS,
         "call after refusals", NULL);
  expect(strcmp(shancoll_last_error(), "") == 0, "error cleared", NULL);
  MPI_Op_free(&first_op);
  MPI_Type_free(&vector);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  allreduce_algorithms();
  rooted_algorithms();
  allgather_algorithms();
  refusals();
  int failed = 0;
  MPI_Allreduce(&g_failed, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) printf("capi_check: %d checks, %d failed\n", g_checks, failed);
  MPI_Finalize();
  return failed ? 1 : 0;
}
