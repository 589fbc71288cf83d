/* capi_check: the C API (shancoll.h, libshancoll.so) called directly.
 *
 * Every registered algorithm of every collective (and every split-phase
 * allreduce) is compared with the MPI library's collective on the same inputs (this program is not
 * run under the PMPI library, so MPI_* here is MPI's own), and every refusal returns its MPI error
 * class and a message.
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
    expect_ran(shancoll_allreduce(in, got, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, names[a], NULL),
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
      expect_ran(shancoll_bcast(got, N, MPI_DOUBLE, root, MPI_COMM_WORLD, names[a], NULL), "bcast",
                 names[a]);
      MPI_Bcast(want, N, MPI_DOUBLE, root, MPI_COMM_WORLD);
      expect(memcmp(got, want, sizeof got) == 0, "bcast result", names[a]);
      fill(in, N, 1);
      memset(got, 0, sizeof got), memset(want, 0, sizeof want);
      expect_ran(
          shancoll_reduce(in, got, N, MPI_DOUBLE, MPI_MAX, root, MPI_COMM_WORLD, names[a], NULL),
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
    expect_ran(
        shancoll_allgather(mine, N, MPI_INT, got, N, MPI_INT, MPI_COMM_WORLD, names[a], NULL),
        "allgather", names[a]);
    MPI_Allgather(mine, N, MPI_INT, want, N, MPI_INT, MPI_COMM_WORLD);
    expect(memcmp(got, want, sizeof(int) * g_size * N) == 0, "allgather result", names[a]);
    expect_ran(shancoll_allgatherv(mine, counts[g_rank], MPI_INT, got, counts, displs, MPI_INT,
                                   MPI_COMM_WORLD, names[a], NULL),
               "allgatherv", names[a]);
    MPI_Allgatherv(mine, counts[g_rank], MPI_INT, want, counts, displs, MPI_INT, MPI_COMM_WORLD);
    expect(memcmp(got, want, sizeof(int) * g_size * N) == 0, "allgatherv result", names[a]);
  }
  free(got), free(want), free(counts), free(displs);
}

/* Split-phase allreduce: every split-phase algorithm, progressed by
 * shancoll_test on some requests and finished by shancoll_wait on others;
 * three requests outstanding at once, one of them in place. */
static void iallreduce_algorithms(void) {
  const char* names[] = {
      "dissemination", "nway_dissemination", "bruck", "pairwise_exchange", "binomial", "mpi", NULL};
  double in[N], want[N], got[3][N];
  fill(in, N, 2);
  MPI_Allreduce(in, want, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (size_t a = 0; a < sizeof names / sizeof *names; ++a) {
    shancoll_request req[3];
    memcpy(got[2], in, sizeof in);
    for (int i = 0; i < 3; ++i) {
      const void* send = i == 2 ? MPI_IN_PLACE : in;
      if (i < 2) memset(got[i], 0, sizeof got[i]);
      expect_ran(shancoll_iallreduce(send, got[i], N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, names[a],
                                     NULL, &req[i]),
                 "iallreduce start", names[a]);
    }
    int flag = 0, rc = MPI_SUCCESS;
    while (!flag && rc == MPI_SUCCESS) rc = shancoll_test(&req[1], &flag);
    expect(rc == MPI_SUCCESS, "test", names[a]);
    expect(req[1] == SHANCOLL_REQUEST_NULL, "test frees the request", names[a]);
    expect(shancoll_wait(&req[0]) == MPI_SUCCESS, "wait", names[a]);
    expect(shancoll_wait(&req[2]) == MPI_SUCCESS, "wait in place", names[a]);
    expect(req[0] == SHANCOLL_REQUEST_NULL, "wait frees the request", names[a]);
    for (int i = 0; i < 3; ++i)
      expect(memcmp(got[i], want, sizeof want) == 0, "iallreduce result", names[a]);
  }
  shancoll_request none = SHANCOLL_REQUEST_NULL;
  int flag = 0;
  expect(shancoll_test(&none, &flag) == MPI_SUCCESS && flag, "test of a null request", NULL);
  expect(shancoll_wait(&none) == MPI_SUCCESS, "wait of a null request", NULL);
}

/* Fortran's types, as a Fortran program passes them (their C handles). */
static void fortran_types(void) {
  double in[N], got[N], want[N];
  int iin[N], igot[N], iwant[N];
  fill(in, N, 5);
  for (int i = 0; i < N; ++i) iin[i] = (int)in[i] - 2;
  expect_ran(
      shancoll_allreduce(in, got, N, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, NULL, NULL),
      "allreduce MPI_DOUBLE_PRECISION", NULL);
  MPI_Allreduce(in, want, N, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD);
  expect(memcmp(got, want, sizeof got) == 0, "MPI_DOUBLE_PRECISION result", NULL);
  expect_ran(shancoll_allreduce(iin, igot, N, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, NULL, NULL),
             "allreduce MPI_INTEGER", NULL);
  MPI_Allreduce(iin, iwant, N, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD);
  expect(memcmp(igot, iwant, sizeof igot) == 0, "MPI_INTEGER result", NULL);
}

/* Options reach the algorithms (the results stay right) and bad ones are refused. */
static void options(void) {
  double in[N], got[N], want[N];
  fill(in, N, 3);
  MPI_Allreduce(in, want, N, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  expect_ran(shancoll_allreduce(in, got, N, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD,
                                "nway_dissemination", "ports=3,timeout=30"),
             "allreduce with options", "nway_dissemination");
  expect(memcmp(got, want, sizeof got) == 0, "allreduce with options result", NULL);
  expect_ran(shancoll_allreduce(in, got, N, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, "shan",
                                "ranks_per_node=1"),
             "allreduce on virtual nodes", "shan");
  expect(memcmp(got, want, sizeof got) == 0, "allreduce on virtual nodes result", NULL);
  fill(got, N, 4), fill(want, N, 4);
  expect_ran(shancoll_bcast(got, N, MPI_DOUBLE, g_size - 1, MPI_COMM_WORLD, "release_gather",
                            "tree=kary,k=2,buffer_size=4096,buffers=2,inline=1"),
             "bcast with options", "release_gather");
  MPI_Bcast(want, N, MPI_DOUBLE, g_size - 1, MPI_COMM_WORLD);
  expect(memcmp(got, want, sizeof got) == 0, "bcast with options result", NULL);
  int mine[N], *all_got = calloc((size_t)g_size * N, sizeof(int)),
               *all_want = calloc((size_t)g_size * N, sizeof(int));
  for (int i = 0; i < N; ++i) mine[i] = g_rank * N + i;
  expect_ran(shancoll_allgather(mine, N, MPI_INT, all_got, N, MPI_INT, MPI_COMM_WORLD, "shan",
                                "block_size=512,transport=rma,ranks_per_node=1"),
             "allgather with options", "shan");
  MPI_Allgather(mine, N, MPI_INT, all_want, N, MPI_INT, MPI_COMM_WORLD);
  expect(memcmp(all_got, all_want, sizeof(int) * g_size * N) == 0, "allgather options result",
         NULL);
  free(all_got), free(all_want);
  const char* bad[][2] = {{"ports=2", "ports: unknown option of bcast"},
                          {"timeout=-1", "timeout"},
                          {"tree=oak", "unknown tree"},
                          {"k=2", "needs tree=kary"},
                          {"buffers", "expected key=value"}};
  for (size_t b = 0; b < sizeof bad / sizeof *bad; ++b) {
    expect(shancoll_bcast(got, N, MPI_DOUBLE, 0, MPI_COMM_WORLD, NULL, bad[b][0]) == MPI_ERR_ARG,
           bad[b][0], NULL);
    expect(strstr(shancoll_last_error(), bad[b][1]) != NULL, bad[b][1], NULL);
  }
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
  expect(shancoll_bcast(in, 1, vector, 0, MPI_COMM_WORLD, NULL, NULL) == MPI_ERR_TYPE,
         "derived type", NULL);
  expect(strstr(shancoll_last_error(), "derived") != NULL, "derived type message", NULL);
  expect(
      shancoll_allreduce(in, out, 1, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD, NULL, NULL) == MPI_ERR_TYPE,
      "MPI_CHAR reduction", NULL);
  expect(
      shancoll_allreduce(in, out, 1, MPI_INT, MPI_MAXLOC, MPI_COMM_WORLD, NULL, NULL) == MPI_ERR_OP,
      "MPI_MAXLOC", NULL);
  if (g_size > 1) /* on one rank every order is rank order */
    expect(shancoll_allreduce(in, out, 1, MPI_INT, first_op, MPI_COMM_WORLD, "ring", NULL) ==
               MPI_ERR_OP,
           "non-commutative op on ring", NULL);
  expect(
      shancoll_allreduce(in, out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, "nope", NULL) == MPI_ERR_ARG,
      "unknown algorithm", NULL);
  expect(strstr(shancoll_last_error(), "nope") != NULL, "unknown algorithm message", NULL);
  expect(shancoll_bcast(in, 1, MPI_INT, g_size, MPI_COMM_WORLD, NULL, NULL) == MPI_ERR_ROOT,
         "bad root", NULL);
  expect(shancoll_allreduce(in, out, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, NULL, NULL) ==
             MPI_ERR_COUNT,
         "negative count", NULL);
  expect(
      shancoll_allreduce(in, out, 1, MPI_INT, MPI_SUM, MPI_COMM_NULL, NULL, NULL) == MPI_ERR_COMM,
      "MPI_COMM_NULL", NULL);
  expect(shancoll_allgather(in, 1, MPI_INT, out, 2, MPI_INT, MPI_COMM_WORLD, NULL, NULL) ==
             MPI_ERR_TRUNCATE,
         "allgather size mismatch", NULL);
  /* A good call after the refusals works and clears the error. */
  expect(
      shancoll_allreduce(in, out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, NULL, NULL) == MPI_SUCCESS,
      "call after refusals", NULL);
  expect(strcmp(shancoll_last_error(), "") == 0, "error cleared", NULL);
  shancoll_request req;
  expect(shancoll_iallreduce(in, out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, "ring", NULL, &req) ==
                 MPI_ERR_ARG &&
             req == SHANCOLL_REQUEST_NULL,
         "iallreduce with a blocking-only algorithm", NULL);
  expect(shancoll_iallreduce(in, out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, NULL, NULL, NULL) ==
             MPI_ERR_REQUEST,
         "iallreduce without a request", NULL);
  MPI_Op_free(&first_op);
  MPI_Type_free(&vector);
}

/* Every barrier algorithm, named and listed; a bad option or algorithm is refused. */
static void barrier_algorithms(void) {
  const char* names[] = {"release_gather", "dissemination", "mpi", NULL};
  for (size_t a = 0; a < sizeof names / sizeof *names; ++a)
    for (int round = 0; round < 3; ++round)
      expect_ran(shancoll_barrier(MPI_COMM_WORLD, names[a], NULL), "barrier", names[a]);
  expect_ran(shancoll_barrier(MPI_COMM_WORLD, NULL, "ranks_per_node=1,timeout=30"),
             "barrier on nodes of one rank", "release_gather");
  expect(strcmp(shancoll_algorithms("barrier"), "release_gather,dissemination,mpi") == 0,
         "barrier listing", NULL);
  expect(shancoll_barrier(MPI_COMM_WORLD, "nope", NULL) == MPI_ERR_ARG &&
             strstr(shancoll_last_error(), "algorithm: unknown barrier algorithm 'nope'"),
         "barrier: unknown algorithm", NULL);
  expect(shancoll_barrier(MPI_COMM_WORLD, NULL, "tree=flat") == MPI_ERR_ARG &&
             strstr(shancoll_last_error(), "options: tree: unknown option of barrier"),
         "barrier: an option of another collective", NULL);
  expect(shancoll_barrier(MPI_COMM_NULL, NULL, NULL) == MPI_ERR_COMM &&
             strstr(shancoll_last_error(), "comm: MPI_COMM_NULL"),
         "barrier: MPI_COMM_NULL", NULL);
}

/* Every scan and exscan algorithm against MPI's, a non-commutative user op
 * among them; in place; the listing; refusals. */
static void first_int(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  memcpy(inout, in, (size_t)*len * sizeof(int)); /* x o y = x: any reordering shows */
}

static void scan_algorithms(void) {
  const char* names[] = {"shan", "recursive_doubling", "mpi", NULL};
  const char* options[] = {NULL, "ranks_per_node=1", "ranks_per_node=2"};
  MPI_Op first_op;
  MPI_Op_create(first_int, 0, &first_op);
  double in[N], got[N], want[N];
  int iin[N], igot[N], iwant[N];
  fill(in, N, 3);
  for (int i = 0; i < N; ++i) iin[i] = g_rank * 1000 + i;
  for (int exclusive = 0; exclusive < 2; ++exclusive) {
    int (*call)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm, const char*, const char*) =
        exclusive ? shancoll_exscan : shancoll_scan;
    int (*mpi)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm) =
        exclusive ? MPI_Exscan : MPI_Scan;
    const int compared = !exclusive || g_rank > 0; /* exscan's rank 0: undefined */
    mpi(in, want, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    mpi(iin, iwant, N, MPI_INT, first_op, MPI_COMM_WORLD);
    for (size_t a = 0; a < sizeof names / sizeof *names; ++a)
      for (size_t o = 0; o < sizeof options / sizeof *options; ++o) {
        memset(got, 0, sizeof got), memset(igot, 0, sizeof igot);
        expect_ran(call(in, got, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, names[a], options[o]),
                   "scan/exscan", names[a]);
        expect(!compared || memcmp(got, want, sizeof got) == 0, "scan/exscan result", names[a]);
        expect_ran(call(iin, igot, N, MPI_INT, first_op, MPI_COMM_WORLD, names[a], options[o]),
                   "scan/exscan user op", names[a]);
        expect(!compared || memcmp(igot, iwant, sizeof igot) == 0,
               "scan/exscan non-commutative op in rank order", names[a]);
        memcpy(got, in, sizeof in);
        expect_ran(
            call(MPI_IN_PLACE, got, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, names[a], options[o]),
            "scan/exscan in place", names[a]);
        expect(!compared || memcmp(got, want, sizeof got) == 0, "scan/exscan in place result",
               names[a]);
      }
  }
  MPI_Op_free(&first_op);
  expect(strcmp(shancoll_algorithms("scan"), "shan,recursive_doubling,mpi") == 0 &&
             strcmp(shancoll_algorithms("exscan"), "shan,recursive_doubling,mpi") == 0,
         "scan listing", NULL);
  expect(
      shancoll_scan(in, got, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, "nope", NULL) == MPI_ERR_ARG &&
          strstr(shancoll_last_error(), "algorithm: unknown scan algorithm 'nope'"),
      "scan: unknown algorithm", NULL);
  expect(shancoll_exscan(in, got, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, NULL, "ports=2") ==
                 MPI_ERR_ARG &&
             strstr(shancoll_last_error(), "options: ports: unknown option of exscan"),
         "exscan: an option of another collective", NULL);
  expect(
      shancoll_scan(in, got, -1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, NULL, NULL) == MPI_ERR_COUNT,
      "scan: negative count", NULL);
  expect(shancoll_exscan(in, got, 1, MPI_INT, MPI_MAXLOC, MPI_COMM_WORLD, NULL, NULL) == MPI_ERR_OP,
         "exscan: MAXLOC", NULL);
  expect(
      shancoll_scan(in, got, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_NULL, NULL, NULL) == MPI_ERR_COMM &&
          strstr(shancoll_last_error(), "comm: MPI_COMM_NULL"),
      "scan: MPI_COMM_NULL", NULL);
}

/* Every reduce_scatter(_block) algorithm against MPI's, a non-commutative
 * user op among them (not for ring, which refuses it); in place; refusals. */
static void reduce_scatter_algorithms(void) {
  enum { B = 5 };
  const char* names[] = {"shan", "ring", "pairwise", "mpi", NULL};
  const char* options[] = {NULL, "ranks_per_node=1", "ranks_per_node=2"};
  MPI_Op first_op;
  MPI_Op_create(first_int, 0, &first_op);
  int* counts = malloc(sizeof(int) * (size_t)g_size);
  int total = 0;
  for (int q = 0; q < g_size; ++q) total += counts[q] = (q * 3) % 4; /* zeros included */
  double* in = malloc(sizeof(double) * (size_t)(B * g_size + total));
  int* iin = malloc(sizeof(int) * (size_t)(B * g_size));
  double got[B], want[B], vgot[4], vwant[4];
  int igot[B], iwant[B];
  fill(in, B * g_size + total, 5);
  for (int i = 0; i < B * g_size; ++i) iin[i] = g_rank * 1000 + i;
  MPI_Reduce_scatter_block(in, want, B, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Reduce_scatter_block(iin, iwant, B, MPI_INT, first_op, MPI_COMM_WORLD);
  MPI_Reduce_scatter(in, vwant, counts, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  for (size_t a = 0; a < sizeof names / sizeof *names; ++a)
    for (size_t o = 0; o < sizeof options / sizeof *options; ++o) {
      memset(got, 0, sizeof got), memset(igot, 0, sizeof igot), memset(vgot, 0, sizeof vgot);
      expect_ran(shancoll_reduce_scatter_block(in, got, B, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                                               names[a], options[o]),
                 "reduce_scatter_block", names[a]);
      expect(memcmp(got, want, sizeof got) == 0, "reduce_scatter_block result", names[a]);
      expect_ran(shancoll_reduce_scatter(in, vgot, counts, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD,
                                         names[a], options[o]),
                 "reduce_scatter", names[a]);
      expect(memcmp(vgot, vwant, sizeof(double) * (size_t)counts[g_rank]) == 0,
             "reduce_scatter result", names[a]);
      if (names[a] && strcmp(names[a], "ring") == 0) continue;
      expect_ran(shancoll_reduce_scatter_block(iin, igot, B, MPI_INT, first_op, MPI_COMM_WORLD,
                                               names[a], options[o]),
                 "reduce_scatter_block user op", names[a]);
      expect(memcmp(igot, iwant, sizeof igot) == 0,
             "reduce_scatter_block non-commutative op in rank order", names[a]);
    }
  double* inplace = malloc(sizeof(double) * (size_t)(B * g_size));
  memcpy(inplace, in, sizeof(double) * (size_t)(B * g_size));
  expect_ran(shancoll_reduce_scatter_block(MPI_IN_PLACE, inplace, B, MPI_DOUBLE, MPI_SUM,
                                           MPI_COMM_WORLD, "shan", NULL),
             "reduce_scatter_block in place", "shan");
  expect(memcmp(inplace, want, sizeof want) == 0, "reduce_scatter_block in place result", NULL);
  expect(strcmp(shancoll_algorithms("reduce_scatter"), "shan,ring,pairwise,mpi") == 0 &&
             strcmp(shancoll_algorithms("reduce_scatter_block"), "shan,ring,pairwise,mpi") == 0,
         "reduce_scatter listing", NULL);
  if (g_size > 1)
    expect(shancoll_reduce_scatter_block(iin, igot, B, MPI_INT, first_op, MPI_COMM_WORLD, "ring",
                                         NULL) == MPI_ERR_OP &&
               strstr(shancoll_last_error(), "op: a non-commutative op"),
           "reduce_scatter_block: ring refuses a non-commutative op", NULL);
  expect(shancoll_reduce_scatter(in, got, NULL, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, NULL, NULL) ==
                 MPI_ERR_ARG &&
             strstr(shancoll_last_error(), "recvcounts: NULL"),
         "reduce_scatter: recvcounts NULL", NULL);
  expect(shancoll_reduce_scatter_block(in, got, -1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, NULL,
                                       NULL) == MPI_ERR_COUNT,
         "reduce_scatter_block: negative count", NULL);
  MPI_Op_free(&first_op);
  free(counts), free(in), free(iin), free(inplace);
}

/* Every alltoall(v) algorithm against MPI_Alltoall(v) (uneven counts with
 * zeros, gaps, in place, large-count forms, virtual nodes), the listing and
 * the refusals. */
static void alltoall_algorithms(void) {
  const char* names[] = {"shan", "pairwise", "bruck", "mpi", NULL};
  enum { B = 5, M = 64 };
  int in[M * B], got[M * B], want[M * B];
  int scounts[M], sdispls[M], rcounts[M], rdispls[M];
  MPI_Count sc[M], rc[M];
  MPI_Aint sd[M], rd[M];
  if (g_size > M) return;
  for (int i = 0; i < g_size * B; ++i) in[i] = 1000 * g_rank + i;
  for (int r = 0, s = 0, d = 1; r < g_size; ++r) { /* rank i sends rank j (i + j) % 3 ints */
    scounts[r] = (g_rank + r) % 3, rcounts[r] = (r + g_rank) % 3;
    sdispls[r] = s, rdispls[r] = d, s += scounts[r], d += rcounts[r] + 1;
    sc[r] = scounts[r], rc[r] = rcounts[r], sd[r] = sdispls[r], rd[r] = rdispls[r];
  }
  for (size_t a = 0; a < sizeof names / sizeof *names; ++a) {
    memset(got, 0, sizeof got), memset(want, 0, sizeof want);
    expect_ran(shancoll_alltoall(in, B, MPI_INT, got, B, MPI_INT, MPI_COMM_WORLD, names[a],
                                 "ranks_per_node=2"),
               "alltoall", names[a]);
    MPI_Alltoall(in, B, MPI_INT, want, B, MPI_INT, MPI_COMM_WORLD);
    expect(memcmp(got, want, sizeof got) == 0, "alltoall result", names[a]);
    memcpy(got, in, sizeof got), memcpy(want, in, sizeof want);
    expect_ran(shancoll_alltoall_c(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got, B, MPI_INT,
                                   MPI_COMM_WORLD, names[a], NULL),
               "alltoall_c in place", names[a]);
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, want, B, MPI_INT, MPI_COMM_WORLD);
    expect(memcmp(got, want, sizeof got) == 0, "alltoall_c in place result", names[a]);
    memset(got, 0, sizeof got), memset(want, 0, sizeof want);
    expect_ran(shancoll_alltoallv(in, scounts, sdispls, MPI_INT, got, rcounts, rdispls, MPI_INT,
                                  MPI_COMM_WORLD, names[a], NULL),
               "alltoallv", names[a]);
    MPI_Alltoallv(in, scounts, sdispls, MPI_INT, want, rcounts, rdispls, MPI_INT, MPI_COMM_WORLD);
    expect(memcmp(got, want, sizeof got) == 0, "alltoallv result", names[a]);
    memset(got, 0, sizeof got);
    expect_ran(shancoll_alltoallv_c(in, sc, sd, MPI_INT, got, rc, rd, MPI_INT, MPI_COMM_WORLD,
                                    names[a], "ranks_per_node=1"),
               "alltoallv_c", names[a]);
    expect(memcmp(got, want, sizeof got) == 0, "alltoallv_c result", names[a]);
  }
  expect(strcmp(shancoll_algorithms("alltoallv"), "shan,pairwise,bruck,mpi") == 0 &&
             strcmp(shancoll_algorithms("alltoall"), "shan,pairwise,bruck,mpi") == 0,
         "alltoall listing", NULL);
  expect(shancoll_alltoall(in, B, MPI_INT, got, B, MPI_INT, MPI_COMM_WORLD, "nope", NULL) ==
                 MPI_ERR_ARG &&
             strstr(shancoll_last_error(), "algorithm: unknown alltoallv algorithm 'nope'"),
         "alltoall: unknown algorithm", NULL);
  expect(shancoll_alltoall(in, B, MPI_INT, got, B - 1, MPI_INT, MPI_COMM_WORLD, NULL, NULL) ==
                 MPI_ERR_TRUNCATE &&
             strstr(shancoll_last_error(), "sendcount: sends"),
         "alltoall: send and receive blocks differ", NULL);
  expect(shancoll_alltoall(in, B, MPI_INT, got, B, MPI_INT, MPI_COMM_WORLD, NULL, "tree=flat") ==
                 MPI_ERR_ARG &&
             strstr(shancoll_last_error(), "options: tree: unknown option of alltoall"),
         "alltoall: an option of another collective", NULL);
  rcounts[0] = -1;
  expect(shancoll_alltoallv(in, scounts, sdispls, MPI_INT, got, rcounts, rdispls, MPI_INT,
                            MPI_COMM_WORLD, NULL, NULL) == MPI_ERR_COUNT,
         "alltoallv: negative count", NULL);
  rcounts[0] = scounts[0];
  expect(shancoll_alltoallv(in, NULL, sdispls, MPI_INT, got, rcounts, rdispls, MPI_INT,
                            MPI_COMM_WORLD, NULL, NULL) == MPI_ERR_ARG &&
             strstr(shancoll_last_error(), "sendcounts/displs: NULL"),
         "alltoallv: NULL counts", NULL);
  expect(
      shancoll_alltoall(in, B, MPI_INT, got, B, MPI_INT, MPI_COMM_NULL, NULL, NULL) == MPI_ERR_COMM,
      "alltoall: MPI_COMM_NULL", NULL);
}

/* Gather(v) and scatter(v), every algorithm and root, against the MPI
 * library's: uneven counts (rank r sends N - r ints, rank 1 none), a gap of one int between
 * blocks, in place at the root, the large-count forms; then the refusals
 * and a count that differs from the root's (refused where it lands, after
 * the messages). */
static void gather_scatter_algorithms(void) {
  const char* names[] = {"shan", "binomial", "mpi", NULL};
  const int total = g_size * (N + 1);
  int mine[N], *got = calloc((size_t)total, sizeof(int)),
               *want = calloc((size_t)total, sizeof(int));
  int *counts = malloc(sizeof(int) * g_size), *displs = malloc(sizeof(int) * g_size);
  MPI_Count* big_counts = malloc(sizeof(MPI_Count) * g_size);
  MPI_Aint* big_displs = malloc(sizeof(MPI_Aint) * g_size);
  for (int r = 0; r < g_size; ++r) {
    counts[r] = r == 1 ? 0 : N - r, displs[r] = r * (N + 1);
    big_counts[r] = counts[r], big_displs[r] = displs[r];
  }
  for (int i = 0; i < N; ++i) mine[i] = g_rank * N + i;
  for (size_t a = 0; a < sizeof names / sizeof *names; ++a)
    for (int root = 0; root < g_size; ++root) {
      memset(got, 0, sizeof(int) * total), memset(want, 0, sizeof(int) * total);
      expect_ran(shancoll_gatherv(mine, counts[g_rank], MPI_INT, got, counts, displs, MPI_INT, root,
                                  MPI_COMM_WORLD, names[a], NULL),
                 "gatherv", names[a]);
      MPI_Gatherv(mine, counts[g_rank], MPI_INT, want, counts, displs, MPI_INT, root,
                  MPI_COMM_WORLD);
      expect(memcmp(got, want, sizeof(int) * total) == 0, "gatherv result", names[a]);
      memset(got, 0, sizeof(int) * total);
      expect_ran(shancoll_gather_c(mine, N, MPI_INT, got, N, MPI_INT, root, MPI_COMM_WORLD,
                                   names[a], NULL),
                 "gather_c", names[a]);
      MPI_Gather(mine, N, MPI_INT, want, N, MPI_INT, root, MPI_COMM_WORLD);
      expect(g_rank != root || memcmp(got, want, sizeof(int) * N * g_size) == 0, "gather result",
             names[a]);
      if (g_rank == root) memcpy(got + root * N, mine, sizeof mine);
      expect_ran(shancoll_gather(g_rank == root ? MPI_IN_PLACE : mine, N, MPI_INT, got, N, MPI_INT,
                                 root, MPI_COMM_WORLD, names[a], NULL),
                 "gather in place", names[a]);
      expect(g_rank != root || memcmp(got, want, sizeof(int) * N * g_size) == 0,
             "gather in place result", names[a]);
      /* scatter(v): the root sends what it gathered back */
      int back[N], back_want[N];
      memset(back, 0, sizeof back), memset(back_want, 0, sizeof back_want);
      expect_ran(shancoll_scatterv_c(want, big_counts, big_displs, MPI_INT, back, counts[g_rank],
                                     MPI_INT, root, MPI_COMM_WORLD, names[a], NULL),
                 "scatterv_c", names[a]);
      MPI_Scatterv(want, counts, displs, MPI_INT, back_want, counts[g_rank], MPI_INT, root,
                   MPI_COMM_WORLD);
      expect(memcmp(back, back_want, sizeof back) == 0, "scatterv result", names[a]);
      memset(back, 0, sizeof back);
      expect_ran(shancoll_scatter(want, N, MPI_INT, g_rank == root ? MPI_IN_PLACE : back, N,
                                  MPI_INT, root, MPI_COMM_WORLD, names[a], NULL),
                 "scatter", names[a]);
      MPI_Scatter(want, N, MPI_INT, back_want, N, MPI_INT, root, MPI_COMM_WORLD);
      expect(g_rank == root || memcmp(back, back_want, sizeof back) == 0, "scatter result",
             names[a]);
    }
  expect(strcmp(shancoll_algorithms("gatherv"), "shan,binomial,mpi") == 0 &&
             strcmp(shancoll_algorithms("scatter"), "shan,binomial,mpi") == 0,
         "gather/scatter listing", NULL);
  expect(shancoll_gather(mine, 1, MPI_INT, got, 1, MPI_INT, 0, MPI_COMM_WORLD, "nope", NULL) ==
                 MPI_ERR_ARG &&
             strstr(shancoll_last_error(), "algorithm: unknown gatherv algorithm 'nope'"),
         "gather: unknown algorithm", NULL);
  expect(shancoll_scatter(got, 1, MPI_INT, mine, 1, MPI_INT, g_size, MPI_COMM_WORLD, NULL, NULL) ==
                 MPI_ERR_ROOT &&
             strstr(shancoll_last_error(), "root:"),
         "scatter: root out of range", NULL);
  expect(shancoll_gatherv(mine, 1, MPI_INT, got, counts, displs, MPI_INT, 0, MPI_COMM_WORLD, NULL,
                          "tree=flat") == MPI_ERR_ARG &&
             strstr(shancoll_last_error(), "options: tree: unknown option of gatherv"),
         "gatherv: an option of another collective", NULL);
  expect(shancoll_scatterv(got, counts, displs, MPI_INT, mine, 1, MPI_INT, 0, MPI_COMM_NULL, NULL,
                           NULL) == MPI_ERR_COMM,
         "scatterv: MPI_COMM_NULL", NULL);
  /* The last rank sends one int more than the root's count: refused at the
   * root after the messages, MPI_SUCCESS elsewhere, and the next call runs. */
  for (size_t a = 0; a < 2 && g_size > 1; ++a) {
    const int liar = g_size - 1, rc = shancoll_gather(mine, N + (g_rank == liar), MPI_INT, got, N,
                                                      MPI_INT, 0, MPI_COMM_WORLD, names[a], NULL);
    expect(g_rank == 0 ? rc == MPI_ERR_TRUNCATE && strstr(shancoll_last_error(), "recvcounts: rank")
                       : rc == MPI_SUCCESS,
           "gather: a block longer than the root's count", names[a]);
    expect_ran(
        shancoll_gather(mine, N, MPI_INT, got, N, MPI_INT, 0, MPI_COMM_WORLD, names[a], NULL),
        "gather after a refused block", names[a]);
  }
  free(got), free(want), free(counts), free(displs), free(big_counts), free(big_displs);
}

/* Datatypes only one rank sees: the root gathers into (and scatters from)
 * every other int of its buffer with a derived vector type while the
 * others send and receive plain ints, and the other way round (the senders'
 * blocks strided, the root's plain). Staged by MPI_Pack/MPI_Unpack, run by
 * shancoll, compared with the MPI library's. */
static void gather_scatter_derived(void) {
  enum { K = 50 };
  MPI_Datatype strided;
  MPI_Type_vector(K, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  const size_t all = (size_t)g_size * 2 * K;
  int mine[2 * K], *got = calloc(all, sizeof(int)), *want = calloc(all, sizeof(int));
  int back[2 * K], back_want[2 * K];
  for (int i = 0; i < 2 * K; ++i) mine[i] = g_rank * 1000 + i;
  const char* names[] = {"shan", "binomial", NULL};
  for (size_t a = 0; a < sizeof names / sizeof *names; ++a)
    for (int root = 0; root < g_size; ++root) {
      int *counts = malloc(sizeof(int) * g_size), *displs = malloc(sizeof(int) * g_size);
      for (int r = 0; r < g_size; ++r) counts[r] = 1, displs[r] = r;
      memset(got, 0, all * sizeof(int)), memset(want, 0, all * sizeof(int));
      /* one strided element per rank, each at its own place: rank r's at r * 2K ints */
      MPI_Datatype placed;
      MPI_Type_create_resized(strided, 0, (MPI_Aint)(2 * K * sizeof(int)), &placed);
      MPI_Type_commit(&placed);
      expect_ran(shancoll_gatherv(mine, K, MPI_INT, got, counts, displs, placed, root,
                                  MPI_COMM_WORLD, names[a], NULL),
                 "gatherv into a derived type at the root", names[a]);
      MPI_Gatherv(mine, K, MPI_INT, want, counts, displs, placed, root, MPI_COMM_WORLD);
      expect(g_rank != root || memcmp(got, want, all * sizeof(int)) == 0,
             "gatherv into a derived type: result", names[a]);
      memset(back, 0, sizeof back), memset(back_want, 0, sizeof back_want);
      expect_ran(
          shancoll_scatter(want, 1, placed, back, K, MPI_INT, root, MPI_COMM_WORLD, names[a], NULL),
          "scatter from a derived type at the root", names[a]);
      MPI_Scatter(want, 1, placed, back_want, K, MPI_INT, root, MPI_COMM_WORLD);
      expect(memcmp(back, back_want, sizeof back) == 0, "scatter from a derived type: result",
             names[a]);
      /* the senders strided, the root plain */
      memset(got, 0, all * sizeof(int)), memset(want, 0, all * sizeof(int));
      expect_ran(
          shancoll_gather(mine, 1, strided, got, K, MPI_INT, root, MPI_COMM_WORLD, names[a], NULL),
          "gather of derived blocks", names[a]);
      MPI_Gather(mine, 1, strided, want, K, MPI_INT, root, MPI_COMM_WORLD);
      expect(g_rank != root || memcmp(got, want, all * sizeof(int)) == 0,
             "gather of derived blocks: result", names[a]);
      memset(back, 0, sizeof back), memset(back_want, 0, sizeof back_want);
      expect_ran(shancoll_scatter(want, K, MPI_INT, back, 1, strided, root, MPI_COMM_WORLD,
                                  names[a], NULL),
                 "scatter into derived blocks", names[a]);
      MPI_Scatter(want, K, MPI_INT, back_want, 1, strided, root, MPI_COMM_WORLD);
      expect(memcmp(back, back_want, sizeof back) == 0, "scatter into derived blocks: result",
             names[a]);
      MPI_Type_free(&placed);
      free(counts), free(displs);
    }
  MPI_Type_free(&strided);
  free(got), free(want);
}

/* igatherv and iscatterv `binomial` (the root's counts down the tree, then
 * the blocks): irregular counts with zeros, displacements in reverse rank
 * order with gaps, every root, against MPI_Gatherv / MPI_Scatterv. */
static void binomial_v_requests(void) {
  int *counts = malloc(sizeof(int) * g_size), *displs = malloc(sizeof(int) * g_size);
  int extent = 0;
  for (int r = g_size - 1; r >= 0; --r)
    counts[r] = (3 * r + 1) % 4, displs[r] = extent + 1, extent += counts[r] + 1;
  double mine[4], part[4], part_want[4];
  double *got = calloc((size_t)extent, sizeof(double)),
         *want = calloc((size_t)extent, sizeof(double));
  for (int root = 0; root < g_size; ++root) {
    for (int i = 0; i < 4; ++i) mine[i] = g_rank * 10 + i + root;
    for (int i = 0; i < extent; ++i) got[i] = want[i] = -1;
    shancoll_request req = SHANCOLL_REQUEST_NULL;
    expect(shancoll_igatherv(mine, counts[g_rank], MPI_DOUBLE, got, counts, displs, MPI_DOUBLE,
                             root, MPI_COMM_WORLD, "binomial", NULL, &req) == MPI_SUCCESS &&
               shancoll_wait(&req) == MPI_SUCCESS,
           "igatherv binomial", "binomial");
    MPI_Gatherv(mine, counts[g_rank], MPI_DOUBLE, want, counts, displs, MPI_DOUBLE, root,
                MPI_COMM_WORLD);
    expect(g_rank != root || memcmp(got, want, sizeof(double) * (size_t)extent) == 0,
           "igatherv binomial: result", "binomial");
    for (int i = 0; i < 4; ++i) part[i] = part_want[i] = -1;
    expect(shancoll_iscatterv(want, counts, displs, MPI_DOUBLE, part, counts[g_rank], MPI_DOUBLE,
                              root, MPI_COMM_WORLD, "binomial", NULL, &req) == MPI_SUCCESS &&
               shancoll_wait(&req) == MPI_SUCCESS,
           "iscatterv binomial", "binomial");
    MPI_Scatterv(want, counts, displs, MPI_DOUBLE, part_want, counts[g_rank], MPI_DOUBLE, root,
                 MPI_COMM_WORLD);
    expect(memcmp(part, part_want, sizeof part) == 0, "iscatterv binomial: result", "binomial");
  }
  free(got), free(want), free(counts), free(displs);
}

/* The request forms of gather(v) and scatter(v) with a datatype only one
 * side has (the root's strided layout, or strided blocks elsewhere): under
 * `mpi` (by name, and auto) every rank passes its datatypes to MPI as they
 * are, compared with the MPI library's blocking call, a persistent request
 * started twice with new contents; the binomial schedule by name is refused
 * with MPI_ERR_TYPE naming the datatype and the rank, on every rank (each
 * has a derived type here, so none starts). */
/* A persistent gather by auto whose root's datatypes are plain and the
 * others' derived: the root goes to the door's persistent engines, the others
 * take the typed path, and they agree at _init on the library's call (no
 * engine reads a derived type; tests/rules/persistent-engines.tsv names the
 * engine); two starts with new contents against MPI_Gather. */
static void derived_off_the_root(int root, MPI_Datatype strided, int* mine, int* got, int* want) {
  enum { K = 50 };
  const size_t all = (size_t)g_size * K;
  const int at_root = g_rank == root;
  int compact[K];
  shancoll_request req = SHANCOLL_REQUEST_NULL;
  expect(shancoll_gather_init(at_root ? (void*)compact : (void*)mine, at_root ? K : 1,
                              at_root ? MPI_INT : strided, got, K, MPI_INT, root, MPI_COMM_WORLD,
                              NULL, NULL, &req) == MPI_SUCCESS,
         "gather_init, derived off the root only", "auto");
  expect(strcmp(shancoll_last_algorithm(), "mpi") == 0, "gather_init, derived off the root: mpi",
         shancoll_last_algorithm());
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < 2 * K; ++i) mine[i] = g_rank * 1000 + i + 11 * k;
    for (int i = 0; i < K; ++i) compact[i] = mine[2 * i];
    memset(got, 0, all * sizeof(int)), memset(want, 0, all * sizeof(int));
    MPI_Gather(at_root ? (void*)compact : (void*)mine, at_root ? K : 1, at_root ? MPI_INT : strided,
               want, K, MPI_INT, root, MPI_COMM_WORLD);
    expect(shancoll_start(&req) == MPI_SUCCESS && shancoll_wait(&req) == MPI_SUCCESS,
           "gather_init, derived off the root only: start", "auto");
    expect(!at_root || memcmp(got, want, all * sizeof(int)) == 0,
           "gather_init, derived off the root only: result", "auto");
  }
  expect(shancoll_request_free(&req) == MPI_SUCCESS, "free", "auto");
}

static void request_forms_derived(void) {
  enum { K = 50 };
  MPI_Datatype strided, placed;
  MPI_Type_vector(K, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  MPI_Type_create_resized(strided, 0, (MPI_Aint)(2 * K * sizeof(int)), &placed);
  MPI_Type_commit(&placed);
  const size_t all = (size_t)g_size * 2 * K;
  int mine[2 * K], *got = calloc(all, sizeof(int)), *want = calloc(all, sizeof(int));
  int back[2 * K], back_want[2 * K];
  int *counts = malloc(sizeof(int) * g_size), *displs = malloc(sizeof(int) * g_size);
  int *k_counts = malloc(sizeof(int) * g_size), *k_displs = malloc(sizeof(int) * g_size);
  for (int r = 0; r < g_size; ++r)
    counts[r] = 1, displs[r] = r, k_counts[r] = K, k_displs[r] = r * K;
  const int root = g_size - 1;
  const char* names[] = {"mpi", NULL};
  for (size_t a = 0; a < sizeof names / sizeof *names; ++a) {
    shancoll_request req = SHANCOLL_REQUEST_NULL;
    for (int i = 0; i < 2 * K; ++i) mine[i] = g_rank * 1000 + i;
    memset(got, 0, all * sizeof(int)), memset(want, 0, all * sizeof(int));
    expect(shancoll_igatherv(mine, K, MPI_INT, got, counts, displs, placed, root, MPI_COMM_WORLD,
                             names[a], NULL, &req) == MPI_SUCCESS &&
               shancoll_wait(&req) == MPI_SUCCESS,
           "igatherv into a derived type at the root", names[a]);
    MPI_Gatherv(mine, K, MPI_INT, want, counts, displs, placed, root, MPI_COMM_WORLD);
    expect(g_rank != root || memcmp(got, want, all * sizeof(int)) == 0,
           "igatherv into a derived type: result", names[a]);
    memset(back, 0, sizeof back), memset(back_want, 0, sizeof back_want);
    expect(shancoll_iscatter(want, 1, placed, back, K, MPI_INT, root, MPI_COMM_WORLD, names[a],
                             NULL, &req) == MPI_SUCCESS &&
               shancoll_wait(&req) == MPI_SUCCESS,
           "iscatter from a derived type at the root", names[a]);
    MPI_Scatter(want, 1, placed, back_want, K, MPI_INT, root, MPI_COMM_WORLD);
    expect(memcmp(back, back_want, sizeof back) == 0, "iscatter from a derived type: result",
           names[a]);
    expect(shancoll_gather_init(mine, 1, strided, got, K, MPI_INT, root, MPI_COMM_WORLD, names[a],
                                NULL, &req) == MPI_SUCCESS,
           "gather_init of derived blocks", names[a]);
    for (int k = 0; k < 2; ++k) {
      for (int i = 0; i < 2 * K; ++i) mine[i] = g_rank * 1000 + i + 7 * k;
      memset(got, 0, all * sizeof(int)), memset(want, 0, all * sizeof(int));
      MPI_Gather(mine, 1, strided, want, K, MPI_INT, root, MPI_COMM_WORLD);
      expect(shancoll_start(&req) == MPI_SUCCESS && shancoll_wait(&req) == MPI_SUCCESS,
             "gather_init of derived blocks: start", names[a]);
      expect(g_rank != root || memcmp(got, want, all * sizeof(int)) == 0,
             "gather_init of derived blocks: result", names[a]);
    }
    expect(shancoll_request_free(&req) == MPI_SUCCESS, "free", names[a]);
    memset(back, 0, sizeof back), memset(back_want, 0, sizeof back_want);
    expect(shancoll_iscatterv(want, k_counts, k_displs, MPI_INT, back, 1, strided, root,
                              MPI_COMM_WORLD, names[a], NULL, &req) == MPI_SUCCESS &&
               shancoll_wait(&req) == MPI_SUCCESS,
           "iscatterv into derived blocks", names[a]);
    MPI_Scatterv(want, k_counts, k_displs, MPI_INT, back_want, 1, strided, root, MPI_COMM_WORLD);
    expect(memcmp(back, back_want, sizeof back) == 0, "iscatterv into derived blocks: result",
           names[a]);
  }
  derived_off_the_root(root, strided, mine, got, want);
  shancoll_request req = SHANCOLL_REQUEST_NULL;
  expect(shancoll_igather(mine, 1, strided, got, 1, strided, root, MPI_COMM_WORLD, "binomial", NULL,
                          &req) == MPI_ERR_TYPE &&
             req == SHANCOLL_REQUEST_NULL,
         "igather binomial of derived blocks refused", "binomial");
  char rank_text[32];
  snprintf(rank_text, sizeof rank_text, "on rank %d", g_rank);
  expect(strstr(shancoll_last_error(), "sendtype") != NULL &&
             strstr(shancoll_last_error(), rank_text) != NULL,
         "igather binomial refusal names the datatype and the rank", "binomial");
  MPI_Type_free(&placed);
  MPI_Type_free(&strided);
  free(got), free(want), free(counts), free(displs), free(k_counts), free(k_displs);
}

/* The request forms (shancoll_i<coll>, shancoll_<coll>_init): each against
 * the MPI library's blocking call on the same inputs; persistent requests
 * over three starts with the inputs changed between them, startall, and
 * the misuse refusals. */
static void request_forms(void) {
  enum { M = 5 };
  const int root = g_size - 1;
  double buf[M], want[M], in[M * 64], out[M * 64], ref[M * 64];
  const char* bcast_algorithms[] = {"binomial", "mpi", NULL};
  for (size_t a = 0; a < sizeof bcast_algorithms / sizeof *bcast_algorithms; ++a) {
    shancoll_request req = SHANCOLL_REQUEST_NULL;
    expect(shancoll_bcast_init_c(buf, M, MPI_DOUBLE, root, MPI_COMM_WORLD, bcast_algorithms[a],
                                 NULL, &req) == MPI_SUCCESS,
           "bcast_init_c", bcast_algorithms[a]);
    for (int k = 0; k < 3; ++k) {
      fill(buf, M, k);
      memcpy(want, buf, sizeof buf);
      MPI_Bcast(want, M, MPI_DOUBLE, root, MPI_COMM_WORLD);
      if (g_rank != root) memset(buf, 0, sizeof buf);
      expect(shancoll_start(&req) == MPI_SUCCESS, "start", bcast_algorithms[a]);
      expect(shancoll_wait(&req) == MPI_SUCCESS && req != SHANCOLL_REQUEST_NULL,
             "wait keeps a persistent request", bcast_algorithms[a]);
      expect(memcmp(buf, want, sizeof buf) == 0, "bcast_init result", bcast_algorithms[a]);
    }
    expect(shancoll_request_free(&req) == MPI_SUCCESS && req == SHANCOLL_REQUEST_NULL,
           "request_free", bcast_algorithms[a]);
  }
  const int n = g_size <= 64 ? g_size : 64;
  if (n == g_size) { /* alltoall and allgather: one block per rank */
    const char* algorithms[] = {"pairwise", "mpi", NULL};
    for (size_t a = 0; a < sizeof algorithms / sizeof *algorithms; ++a) {
      fill(in, M * n, (int)a);
      MPI_Alltoall(in, M, MPI_DOUBLE, ref, M, MPI_DOUBLE, MPI_COMM_WORLD);
      shancoll_request req;
      expect(shancoll_ialltoall(in, M, MPI_DOUBLE, out, M, MPI_DOUBLE, MPI_COMM_WORLD,
                                algorithms[a], NULL, &req) == MPI_SUCCESS,
             "ialltoall", algorithms[a]);
      int flag = 0, rc = MPI_SUCCESS;
      while (!flag && rc == MPI_SUCCESS) rc = shancoll_test(&req, &flag);
      expect(rc == MPI_SUCCESS && req == SHANCOLL_REQUEST_NULL, "test frees", algorithms[a]);
      expect(memcmp(out, ref, sizeof(double) * M * n) == 0, "ialltoall result", algorithms[a]);
    }
    shancoll_request reqs[2];
    double scan_in[M], scan_out[M], scan_ref[M];
    expect(shancoll_allgather_init(buf, M, MPI_DOUBLE, out, M, MPI_DOUBLE, MPI_COMM_WORLD, "ring",
                                   NULL, &reqs[0]) == MPI_SUCCESS,
           "allgather_init", "ring");
    expect(shancoll_scan_init(scan_in, scan_out, M, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, NULL, NULL,
                              &reqs[1]) == MPI_SUCCESS,
           "scan_init", "mpi");
    for (int k = 0; k < 2; ++k) {
      fill(buf, M, k + 7);
      fill(scan_in, M, k + 3);
      MPI_Allgather(buf, M, MPI_DOUBLE, ref, M, MPI_DOUBLE, MPI_COMM_WORLD);
      MPI_Scan(scan_in, scan_ref, M, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      expect(shancoll_startall(2, reqs) == MPI_SUCCESS, "startall", NULL);
      expect(shancoll_wait(&reqs[1]) == MPI_SUCCESS, "wait scan", NULL);
      expect(shancoll_wait(&reqs[0]) == MPI_SUCCESS, "wait allgather", NULL);
      expect(memcmp(out, ref, sizeof(double) * M * n) == 0, "allgather_init result", "ring");
      expect(memcmp(scan_out, scan_ref, sizeof scan_ref) == 0, "scan_init result", "mpi");
    }
    for (int i = 0; i < 2; ++i)
      expect(shancoll_request_free(&reqs[i]) == MPI_SUCCESS, "free", NULL);
  }
  /* misuse: a nonblocking request cannot be started; a persistent one not
   * twice; an active one not freed. Rank 0 starts first while the others
   * wait in a barrier, so its request is certainly active (size > 1). */
  shancoll_request req;
  expect(shancoll_iallreduce(buf, want, M, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, "binomial", NULL,
                             &req) == MPI_SUCCESS,
         "iallreduce", "binomial");
  expect(shancoll_start(&req) == MPI_ERR_ARG, "start of a nonblocking request", NULL);
  expect(shancoll_wait(&req) == MPI_SUCCESS, "wait", "binomial");
  expect(shancoll_allreduce_init(buf, want, M, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, "binomial",
                                 NULL, &req) == MPI_SUCCESS,
         "allreduce_init", "binomial");
  if (g_rank == 0) {
    expect(shancoll_start(&req) == MPI_SUCCESS, "start", "binomial");
    if (g_size > 1) {
      expect(shancoll_start(&req) == MPI_ERR_ARG, "start while active", NULL);
      expect(shancoll_request_free(&req) == MPI_ERR_REQUEST, "free while active", NULL);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank != 0) expect(shancoll_start(&req) == MPI_SUCCESS, "start", "binomial");
  expect(shancoll_wait(&req) == MPI_SUCCESS, "wait", "binomial");
  expect(shancoll_request_free(&req) == MPI_SUCCESS, "free after completion", NULL);
  expect(
      shancoll_ibcast(buf, M, MPI_DOUBLE, 0, MPI_COMM_WORLD, "ring", NULL, &req) == MPI_ERR_ARG &&
          req == SHANCOLL_REQUEST_NULL,
      "ibcast with an algorithm that has no request form", NULL);
}

/* Run with the argument "checked" under SHANCOLL_CHECK=1: a bad argument on
 * the last rank alone (MPI_IN_PLACE off the root of an ireduce and an
 * igather) is refused on every rank, naming that rank, and nothing waits;
 * the same calls then run with good arguments. */
static int finish(void) {
  int failed = 0;
  MPI_Allreduce(&g_failed, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) printf("capi_check: %d checks, %d failed\n", g_checks, failed);
  MPI_Finalize();
  return failed ? 1 : 0;
}

static void checked_refusals(void) {
  double x[2] = {1, 1}, y[2] = {0, 0}, *all = calloc((size_t)g_size * 2, sizeof(double));
  const int bad = g_size - 1;
  char named[48];
  snprintf(named, sizeof named, "rank %d refused", bad);
  for (int k = 0; k < 2; ++k) {
    const void* send = g_rank == bad && g_size > 1 ? MPI_IN_PLACE : x;
    shancoll_request req = SHANCOLL_REQUEST_NULL;
    const int rc = k == 0 ? shancoll_ireduce(send, y, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD,
                                             NULL, NULL, &req)
                          : shancoll_igather(send, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0,
                                             MPI_COMM_WORLD, NULL, NULL, &req);
    expect(g_size == 1 || (rc != MPI_SUCCESS && req == SHANCOLL_REQUEST_NULL &&
                           strstr(shancoll_last_error(), named) != NULL),
           k == 0 ? "ireduce: one rank's MPI_IN_PLACE refused everywhere"
                  : "igather: one rank's MPI_IN_PLACE refused everywhere",
           NULL);
    if (rc == MPI_SUCCESS) shancoll_wait(&req);
  }
  shancoll_request req = SHANCOLL_REQUEST_NULL;
  expect(shancoll_ireduce(x, y, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, NULL, NULL, &req) ==
                 MPI_SUCCESS &&
             shancoll_wait(&req) == MPI_SUCCESS && (g_rank != 0 || y[0] == g_size),
         "ireduce afterwards", NULL);
  free(all);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (argc > 1 && strcmp(argv[1], "checked") == 0) {
    checked_refusals();
    return finish();
  }
  allreduce_algorithms();
  rooted_algorithms();
  allgather_algorithms();
  iallreduce_algorithms();
  fortran_types();
  options();
  refusals();
  barrier_algorithms();
  scan_algorithms();
  reduce_scatter_algorithms();
  alltoall_algorithms();
  gather_scatter_algorithms();
  gather_scatter_derived();
  request_forms_derived();
  binomial_v_requests();
  request_forms();
  return finish();
}
