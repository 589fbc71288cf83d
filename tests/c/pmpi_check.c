/* pmpi_check: a plain MPI program that checks itself under a PMPI library.
 *
 * Each case runs a collective twice on the same inputs: once through MPI_*
 * (interposed by libshancoll_pmpi.so when preloaded) and once through PMPI_*
 * (always the MPI library's own), and compares the bytes of the results.
 * Covered: allgather, allgatherv, allreduce, iallreduce (MPI_Wait, MPI_Test,
 * MPI_Waitall), bcast, reduce, barrier (as a barrier: a shared counter),
 * scan, exscan (rank 0's exscan result, undefined in MPI, not compared),
 * reduce_scatter, reduce_scatter_block;
 * alltoall and alltoallv;
 * gather(v) and scatter(v) (and their _c forms);
 * several datatypes
 * (one a derived vector type, one a pair type: both must fall back), the
 * predefined ops, a commutative and a non-commutative user op, MPI_IN_PLACE,
 * every root, an inter-communicator (falls back), a loop of repeated calls. Values are small
 * integers, so floating-point sums are exact in any order and results compare bitwise.
 *
 * Usage: pmpi_check [--thread-multiple]
 * Output: one line per mismatch, then "pmpi_check: N checks, M failed" on
 * rank 0; the exit status is 1 when any check failed anywhere.
 */
#include <complex.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank, g_size, g_checks, g_failed;
/* Derived types, which must fall back: 2 ints with a one-int hole (data
 * movement) and 2 contiguous ints (reductions, with a user op: MPICH
 * defines no predefined op on derived types). */
static MPI_Datatype g_vector, g_contig;

/* Fills count elements of type (g_vector: its ints, holes included) with
 * small values that depend on rank, seed and index. */
static void fill(void* buf, int count, MPI_Datatype type, int rank, int seed) {
  MPI_Aint lb, extent;
  MPI_Type_get_extent(type, &lb, &extent);
  const size_t n = (size_t)count * (size_t)extent;
  for (size_t i = 0; i < n; ++i) {
    const int v = (int)((rank + seed + i) % 3) + 1;
    if (type == MPI_DOUBLE && i % sizeof(double) == 0) ((double*)buf)[i / sizeof(double)] = v;
    if (type == MPI_FLOAT && i % sizeof(float) == 0) ((float*)buf)[i / sizeof(float)] = (float)v;
    if (type == MPI_C_DOUBLE_COMPLEX && i % 16 == 0) ((double complex*)buf)[i / 16] = v + I * v;
    if ((type == MPI_INT || type == g_vector || type == g_contig) && i % sizeof(int) == 0)
      ((int*)buf)[i / sizeof(int)] = v;
    if (type == MPI_LONG_LONG && i % sizeof(long long) == 0)
      ((long long*)buf)[i / sizeof(long long)] = v;
    if (type == MPI_UNSIGNED_CHAR || type == MPI_BYTE || type == MPI_CHAR)
      ((unsigned char*)buf)[i] = (unsigned char)v;
  }
}

static size_t bytes_of(int count, MPI_Datatype type) {
  MPI_Aint lb, extent;
  MPI_Type_get_extent(type, &lb, &extent);
  return (size_t)count * (size_t)extent;
}

static void expect_same(const void* got, const void* want, size_t n, const char* what) {
  ++g_checks;
  if (memcmp(got, want, n) == 0) return;
  ++g_failed;
  fprintf(stderr, "pmpi_check: rank %d: MISMATCH %s\n", g_rank, what);
}

/* A commutative user op on ints: the larger absolute value. */
static void abs_max(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  for (int i = 0; i < *len; ++i) {
    const int a = abs(((int*)in)[i]), b = abs(((int*)inout)[i]);
    if (a > b) ((int*)inout)[i] = ((int*)in)[i];
  }
}

/* A non-commutative, associative user op on ints: x o y = x (the lowest
 * rank's value wins, so any reordering shows). */
static void first(void* in, void* inout, int* len, MPI_Datatype* type) {
  if (*type != MPI_INT) abort(); /* the datatype handle must be the caller's */
  memcpy(inout, in, (size_t)*len * sizeof(int));
}

static void check_allreduce(int count, MPI_Datatype type, MPI_Op op, int in_place,
                            const char* what) {
  const size_t n = bytes_of(count, type) + 1;
  char *send = malloc(n), *got = malloc(n), *want = malloc(n);
  fill(send, count, type, g_rank, 0);
  memcpy(got, send, n), memcpy(want, send, n);
  const void* s = in_place ? MPI_IN_PLACE : send;
  if (!in_place) memset(got, 0x5a, n), memset(want, 0x5a, n);
  MPI_Allreduce(s, got, count, type, op, MPI_COMM_WORLD);
  PMPI_Allreduce(s, want, count, type, op, MPI_COMM_WORLD);
  expect_same(got, want, n, what);
  free(send), free(got), free(want);
}

/* Iallreduce completed by MPI_Wait (mode 0), an MPI_Test loop (1), or
 * MPI_Waitall together with a second iallreduce and a blocking MPI_Allreduce
 * in between (2), against the MPI library's blocking PMPI_Allreduce. */
static void check_iallreduce(int count, MPI_Datatype type, MPI_Op op, int in_place, int mode,
                             const char* what) {
  const size_t n = bytes_of(count, type) + 1;
  char *send = malloc(n), *got = malloc(n), *want = malloc(n), *got2 = malloc(n);
  fill(send, count, type, g_rank, 5);
  memcpy(got, send, n), memcpy(want, send, n);
  const void* s = in_place ? MPI_IN_PLACE : send;
  if (!in_place) memset(got, 0x5a, n), memset(want, 0x5a, n);
  memset(got2, 0x5a, n);
  PMPI_Allreduce(s, want, count, type, op, MPI_COMM_WORLD);
  MPI_Request req[2];
  MPI_Iallreduce(s, got, count, type, op, MPI_COMM_WORLD, &req[0]);
  if (mode == 0) MPI_Wait(&req[0], MPI_STATUS_IGNORE);
  for (int flag = 0; mode == 1 && !flag;) MPI_Test(&req[0], &flag, MPI_STATUS_IGNORE);
  if (mode == 2) {
    int x = g_rank, sum = 0;
    MPI_Iallreduce(send, got2, count, type, op, MPI_COMM_WORLD, &req[1]);
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    expect_same(got2, want, n - 1, what);
    expect_same(&sum, &(int){g_size * (g_size - 1) / 2}, sizeof sum, "allreduce during iallreduce");
  }
  expect_same(got, want, n, what);
  free(send), free(got), free(want), free(got2);
}

static void check_reduce(int count, MPI_Datatype type, MPI_Op op, int root, int in_place,
                         const char* what) {
  const size_t n = bytes_of(count, type) + 1;
  char *send = malloc(n), *got = malloc(n), *want = malloc(n);
  fill(send, count, type, g_rank, 1);
  memset(got, 0x5a, n), memset(want, 0x5a, n);
  const int here = in_place && g_rank == root;
  if (here) memcpy(got, send, n), memcpy(want, send, n);
  const void* s = here ? MPI_IN_PLACE : send;
  MPI_Reduce(s, got, count, type, op, root, MPI_COMM_WORLD);
  PMPI_Reduce(s, want, count, type, op, root, MPI_COMM_WORLD);
  expect_same(got, want, n, what);
  free(send), free(got), free(want);
}

static void check_bcast(int count, MPI_Datatype type, int root, const char* what) {
  const size_t n = bytes_of(count, type) + 1;
  char *got = malloc(n), *want = malloc(n);
  fill(got, count, type, g_rank, 2);
  memcpy(want, got, n);
  MPI_Bcast(got, count, type, root, MPI_COMM_WORLD);
  PMPI_Bcast(want, count, type, root, MPI_COMM_WORLD);
  expect_same(got, want, n, what);
  free(got), free(want);
}

/* Allgatherv with rank r sending (r % 3 + 1) * k elements, a gap of one
 * element between blocks; k == 0 with stride: allgather of `stride` each. */
static void check_allgatherv(int k, MPI_Datatype type, int in_place, int regular,
                             const char* what) {
  int *counts = malloc(sizeof(int) * g_size), *displs = malloc(sizeof(int) * g_size), total = 0;
  for (int r = 0; r < g_size; ++r) {
    counts[r] = regular ? k : (r % 3 + 1) * k;
    displs[r] = total;
    total += counts[r] + (regular ? 0 : 1);
  }
  const size_t n = bytes_of(total, type) + 1, mine = bytes_of(counts[g_rank], type);
  char *send = malloc(mine + 1), *got = malloc(n), *want = malloc(n);
  fill(send, counts[g_rank], type, g_rank, 3);
  memset(got, 0x5a, n), memset(want, 0x5a, n);
  const size_t at = bytes_of(displs[g_rank], type);
  if (in_place) memcpy(got + at, send, mine), memcpy(want + at, send, mine);
  const void* s = in_place ? MPI_IN_PLACE : send;
  if (regular) {
    MPI_Allgather(s, k, type, got, k, type, MPI_COMM_WORLD);
    PMPI_Allgather(s, k, type, want, k, type, MPI_COMM_WORLD);
  } else {
    MPI_Allgatherv(s, counts[g_rank], type, got, counts, displs, type, MPI_COMM_WORLD);
    PMPI_Allgatherv(s, counts[g_rank], type, want, counts, displs, type, MPI_COMM_WORLD);
  }
  expect_same(got, want, n, what);
  free(counts), free(displs), free(send), free(got), free(want);
}

/* Gatherv (regular: gather) to `root` with rank r sending (r % 3) * k
 * elements, a gap of one element between blocks, then the mirror scatterv
 * (scatter) of the gathered buffer; in place at the root when asked. */
static void check_gather_scatter(int k, MPI_Datatype type, int root, int in_place, int regular,
                                 const char* what) {
  int *counts = malloc(sizeof(int) * g_size), *displs = malloc(sizeof(int) * g_size), total = 0;
  for (int r = 0; r < g_size; ++r) {
    counts[r] = regular ? k : (r % 3) * k;
    displs[r] = total;
    total += counts[r] + (regular ? 0 : 1);
  }
  const size_t n = bytes_of(total, type) + 1, mine = bytes_of(counts[g_rank], type);
  char *send = malloc(mine + 1), *got = malloc(n), *want = malloc(n);
  fill(send, counts[g_rank], type, g_rank, 5);
  memset(got, 0x5a, n), memset(want, 0x5a, n);
  const size_t at = bytes_of(displs[g_rank], type);
  const int root_in_place = in_place && g_rank == root;
  if (root_in_place) memcpy(got + at, send, mine), memcpy(want + at, send, mine);
  const void* s = root_in_place ? MPI_IN_PLACE : send;
  if (regular) {
    MPI_Gather(s, k, type, got, k, type, root, MPI_COMM_WORLD);
    PMPI_Gather(s, k, type, want, k, type, root, MPI_COMM_WORLD);
  } else {
    MPI_Gatherv(s, counts[g_rank], type, got, counts, displs, type, root, MPI_COMM_WORLD);
    PMPI_Gatherv(s, counts[g_rank], type, want, counts, displs, type, root, MPI_COMM_WORLD);
  }
  expect_same(got, want, g_rank == root ? n : 0, what);
  char *back = malloc(mine + 1), *back_want = malloc(mine + 1);
  memset(back, 0x33, mine + 1), memset(back_want, 0x33, mine + 1);
  void* r = root_in_place ? MPI_IN_PLACE : back;
  if (regular) {
    MPI_Scatter(want, k, type, r, k, type, root, MPI_COMM_WORLD);
    PMPI_Scatter(want, k, type, root_in_place ? MPI_IN_PLACE : back_want, k, type, root,
                 MPI_COMM_WORLD);
  } else {
    MPI_Scatterv(want, counts, displs, type, r, counts[g_rank], type, root, MPI_COMM_WORLD);
    PMPI_Scatterv(want, counts, displs, type, root_in_place ? MPI_IN_PLACE : back_want,
                  counts[g_rank], type, root, MPI_COMM_WORLD);
  }
  expect_same(back, back_want, mine + 1, what);
  free(counts), free(displs), free(send), free(got), free(want), free(back), free(back_want);
}

static const char* type_name(MPI_Datatype type) {
  static char name[MPI_MAX_OBJECT_NAME];
  int len = 0;
  if (type == g_vector) return "vector(2 MPI_INT, stride 2)";
  if (type == g_contig) return "contiguous(2 MPI_INT)";
  MPI_Type_get_name(type, name, &len);
  return name;
}

/* A commutative user op on g_contig: the elementwise sum of the int pairs. */
static void pair_sum(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  for (int i = 0; i < 2 * *len; ++i) ((int*)inout)[i] += ((int*)in)[i];
}

static void reductions(MPI_Op abs_max_op, MPI_Op first_op, MPI_Op pair_sum_op) {
  const MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE, MPI_FLOAT, MPI_LONG_LONG, MPI_UNSIGNED_CHAR};
  const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD};
  const int counts[] = {1, 7, 3000};
  char what[160];
  for (size_t t = 0; t < sizeof types / sizeof *types; ++t)
    for (size_t o = 0; o < sizeof ops / sizeof *ops; ++o)
      for (size_t c = 0; c < sizeof counts / sizeof *counts; ++c)
        for (int in_place = 0; in_place < 2; ++in_place) {
          snprintf(what, sizeof what, "allreduce %s op %zu count %d in_place %d",
                   type_name(types[t]), o, counts[c], in_place);
          check_allreduce(counts[c], types[t], ops[o], in_place, what);
          for (int root = 0; root < g_size; ++root) {
            snprintf(what, sizeof what, "reduce %s op %zu count %d root %d in_place %d",
                     type_name(types[t]), o, counts[c], root, in_place);
            check_reduce(counts[c], types[t], ops[o], root, in_place, what);
          }
        }
  const MPI_Op int_ops[] = {MPI_BAND, MPI_BOR, MPI_LXOR, abs_max_op, first_op};
  for (size_t o = 0; o < sizeof int_ops / sizeof *int_ops; ++o)
    for (int root = 0; root < g_size; ++root) {
      snprintf(what, sizeof what, "int op %zu root %d", o, root);
      check_allreduce(100, MPI_INT, int_ops[o], root % 2, what);
      check_reduce(100, MPI_INT, int_ops[o], root, root % 2, what);
    }
  check_allreduce(5, MPI_C_DOUBLE_COMPLEX, MPI_SUM, 0, "allreduce complex sum");
  check_allreduce(0, MPI_INT, MPI_SUM, 0, "allreduce count 0");
  check_allreduce(50, g_contig, pair_sum_op, 0, "allreduce derived type, user op");
  check_reduce(50, g_contig, pair_sum_op, g_size - 1, 1, "reduce derived type, user op");
}

static void check_scan(int exclusive, int count, MPI_Datatype type, MPI_Op op, int in_place,
                       const char* what) {
  const size_t n = bytes_of(count, type) + 1;
  char *send = malloc(n), *got = malloc(n), *want = malloc(n);
  fill(send, count, type, g_rank, 1);
  memcpy(got, send, n), memcpy(want, send, n);
  const void* s = in_place ? MPI_IN_PLACE : send;
  if (!in_place) memset(got, 0x5a, n), memset(want, 0x5a, n);
  if (exclusive) {
    MPI_Exscan(s, got, count, type, op, MPI_COMM_WORLD);
    PMPI_Exscan(s, want, count, type, op, MPI_COMM_WORLD);
  } else {
    MPI_Scan(s, got, count, type, op, MPI_COMM_WORLD);
    PMPI_Scan(s, want, count, type, op, MPI_COMM_WORLD);
  }
  if (!exclusive || g_rank > 0) expect_same(got, want, n, what);
  free(send), free(got), free(want);
}

/* Scan and exscan: predefined ops, a commutative and a non-commutative
 * (rank order shows) user op, in place, count 0, a derived type (falls back). */
static void scans(MPI_Op abs_max_op, MPI_Op first_op, MPI_Op pair_sum_op) {
  const MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE, MPI_UNSIGNED_CHAR};
  const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_PROD, abs_max_op, first_op};
  char what[160];
  for (int exclusive = 0; exclusive < 2; ++exclusive) {
    for (size_t t = 0; t < sizeof types / sizeof *types; ++t)
      for (size_t o = 0; o < sizeof ops / sizeof *ops; ++o)
        for (int in_place = 0; in_place < 2; ++in_place) {
          if (types[t] != MPI_INT && o >= 3) continue; /* the user ops are on ints */
          snprintf(what, sizeof what, "%s %s op %zu in_place %d", exclusive ? "exscan" : "scan",
                   type_name(types[t]), o, in_place);
          check_scan(exclusive, 1 + 999 * in_place, types[t], ops[o], in_place, what);
        }
    check_scan(exclusive, 0, MPI_INT, MPI_SUM, 0, "scan/exscan count 0");
    check_scan(exclusive, 50, g_contig, pair_sum_op, 0, "scan/exscan derived type, user op");
  }
}

/* Reduce_scatter_block (blocks of `count`) and reduce_scatter (counts q % 3,
 * zeros included), against the PMPI_ calls; in place; a derived type falls back. */
static void check_reduce_scatter(int count, MPI_Datatype type, MPI_Op op, int in_place,
                                 const char* what) {
  int* counts = malloc(sizeof(int) * (size_t)g_size);
  int total = 0;
  for (int q = 0; q < g_size; ++q) total += counts[q] = count < 0 ? q % 3 : count;
  const size_t n = bytes_of(total, type) + 1;
  char *send = malloc(n), *got = malloc(n), *want = malloc(n);
  fill(send, total, type, g_rank, 2);
  memcpy(got, send, n), memcpy(want, send, n);
  const void* s = in_place ? MPI_IN_PLACE : send;
  if (!in_place) memset(got, 0x5a, n), memset(want, 0x5a, n);
  if (count >= 0) {
    MPI_Reduce_scatter_block(s, got, count, type, op, MPI_COMM_WORLD);
    PMPI_Reduce_scatter_block(s, want, count, type, op, MPI_COMM_WORLD);
  } else {
    MPI_Reduce_scatter(s, got, counts, type, op, MPI_COMM_WORLD);
    PMPI_Reduce_scatter(s, want, counts, type, op, MPI_COMM_WORLD);
  }
  expect_same(got, want, bytes_of(counts[g_rank], type), what);
  free(counts), free(send), free(got), free(want);
}

static void reduce_scatters(MPI_Op abs_max_op, MPI_Op first_op, MPI_Op pair_sum_op) {
  const MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE, MPI_UNSIGNED_CHAR};
  const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_PROD, abs_max_op, first_op};
  char what[160];
  for (size_t t = 0; t < sizeof types / sizeof *types; ++t)
    for (size_t o = 0; o < sizeof ops / sizeof *ops; ++o)
      for (int in_place = 0; in_place < 2; ++in_place) {
        if (types[t] != MPI_INT && o >= 3) continue;      /* the user ops are on ints */
        for (int count = -1; count < 400; count += 200) { /* -1: reduce_scatter */
          snprintf(what, sizeof what, "reduce_scatter %s op %zu count %d in_place %d",
                   type_name(types[t]), o, count, in_place);
          check_reduce_scatter(count, types[t], ops[o], in_place, what);
        }
      }
  check_reduce_scatter(0, MPI_INT, MPI_SUM, 0, "reduce_scatter_block count 0");
  check_reduce_scatter(7, g_contig, pair_sum_op, 0, "reduce_scatter_block derived type, user op");
  check_reduce_scatter(-1, g_contig, pair_sum_op, 0, "reduce_scatter derived type, user op");
}

static void iallreduce(MPI_Op abs_max_op, MPI_Op first_op, MPI_Op pair_sum_op) {
  const MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE};
  const MPI_Op ops[] = {MPI_SUM, MPI_MAX, abs_max_op, first_op};
  char what[160];
  for (size_t t = 0; t < sizeof types / sizeof *types; ++t)
    for (size_t o = 0; o < sizeof ops / sizeof *ops; ++o)
      for (int mode = 0; mode < 3; ++mode) {
        if (types[t] != MPI_INT && o >= 2) continue; /* the user ops are on ints */
        snprintf(what, sizeof what, "iallreduce %s op %zu mode %d", type_name(types[t]), o, mode);
        check_iallreduce(mode == 1 ? 7 : 1000, types[t], ops[o], mode == 0, mode, what);
      }
  check_iallreduce(0, MPI_INT, MPI_SUM, 0, 0, "iallreduce count 0");
  check_iallreduce(50, g_contig, pair_sum_op, 0, 0, "iallreduce derived type, user op");
}

/* MPI_Alltoall (regular) or MPI_Alltoallv: rank i sends rank j k elements,
 * or ((i + j) % 3) k (symmetric, so in place works too: what i sends j, j
 * sends i), against PMPI_. */
static void check_alltoall(int k, MPI_Datatype type, int in_place, int regular, const char* what) {
  enum { kMax = 64 };
  int sc[kMax], sd[kMax], rc[kMax], rd[kMax], total = 0;
  if (g_size > kMax) return;
  for (int r = 0; r < g_size; ++r) {
    sc[r] = rc[r] = regular ? k : ((g_rank + r) % 3) * k;
    sd[r] = rd[r] = total;
    total += sc[r];
  }
  const size_t n = bytes_of(total, type) + 1;
  char *send = malloc(n), *got = malloc(n), *want = malloc(n);
  fill(send, total, type, g_rank, 6);
  memcpy(got, send, n), memcpy(want, send, n);
  if (!in_place) memset(got, 0x5a, n), memset(want, 0x5a, n);
  const void* s = in_place ? MPI_IN_PLACE : send;
  if (regular) {
    MPI_Alltoall(s, k, type, got, k, type, MPI_COMM_WORLD);
    PMPI_Alltoall(s, k, type, want, k, type, MPI_COMM_WORLD);
  } else {
    MPI_Alltoallv(s, sc, sd, type, got, rc, rd, type, MPI_COMM_WORLD);
    PMPI_Alltoallv(s, sc, sd, type, want, rc, rd, type, MPI_COMM_WORLD);
  }
  expect_same(got, want, n, what);
  free(send), free(got), free(want);
}

static void data_movement(void) {
  const MPI_Datatype types[] = {MPI_BYTE, MPI_CHAR, MPI_INT, MPI_DOUBLE, g_vector};
  const int counts[] = {1, 5, 4000};
  char what[160];
  for (size_t t = 0; t < sizeof types / sizeof *types; ++t)
    for (size_t c = 0; c < sizeof counts / sizeof *counts; ++c) {
      for (int root = 0; root < g_size; ++root) {
        snprintf(what, sizeof what, "bcast %s count %d root %d", type_name(types[t]), counts[c],
                 root);
        check_bcast(counts[c], types[t], root, what);
      }
      for (int in_place = 0; in_place < 2; ++in_place) {
        snprintf(what, sizeof what, "allgather %s count %d in_place %d", type_name(types[t]),
                 counts[c], in_place);
        check_allgatherv(counts[c], types[t], in_place, 1, what);
        snprintf(what, sizeof what, "allgatherv %s k %d in_place %d", type_name(types[t]),
                 counts[c], in_place);
        check_allgatherv(counts[c], types[t], in_place, 0, what);
        for (int regular = 0; regular < 2; ++regular) {
          snprintf(what, sizeof what, "alltoall%s %s k %d in_place %d", regular ? "" : "v",
                   type_name(types[t]), counts[c], in_place);
          check_alltoall(counts[c], types[t], in_place, regular, what);
        }
        for (int root = 0; root < g_size; root += g_size > 2 ? g_size - 1 : 1)
          for (int regular = 0; regular < 2; ++regular) {
            snprintf(what, sizeof what, "gather(v)/scatter(v) %s count %d root %d in_place %d%s",
                     type_name(types[t]), counts[c], root, in_place, regular ? "" : " v");
            check_gather_scatter(counts[c], types[t], root, in_place, regular, what);
          }
      }
    }
}

/* MPI_MAXLOC on a pair type: the pair type has a hole, so it falls back. */
static void pair_type(void) {
  struct {
    double value;
    int rank;
  } in = {(double)(g_rank % 2), g_rank}, got, want;
  memset(&got, 0, sizeof got), memset(&want, 0, sizeof want);
  MPI_Allreduce(&in, &got, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
  PMPI_Allreduce(&in, &want, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
  expect_same(&got.value, &want.value, sizeof got.value, "allreduce MAXLOC value");
  expect_same(&got.rank, &want.rank, sizeof got.rank, "allreduce MAXLOC rank");
}

#if MPI_VERSION >= 4
/* The large-count (_c) variants, once each on doubles, root 1 when there is one. */
static void large_count(void) {
  enum { N = 1000 };
  const int root = g_size > 1;
  double in[N], got[N], want[N], *all_got = calloc((size_t)g_size * N, sizeof(double)),
                                 *all_want = calloc((size_t)g_size * N, sizeof(double));
  MPI_Count counts[64];
  MPI_Aint displs[64];
  for (int r = 0; r < g_size && r < 64; ++r) counts[r] = N, displs[r] = (MPI_Aint)r * N;
  fill(in, N, MPI_DOUBLE, g_rank, 4);
  MPI_Allreduce_c(in, got, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  PMPI_Allreduce_c(in, want, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  expect_same(got, want, sizeof got, "allreduce_c");
  memset(got, 0, sizeof got), memset(want, 0, sizeof want);
  MPI_Reduce_c(in, got, N, MPI_DOUBLE, MPI_MAX, root, MPI_COMM_WORLD);
  PMPI_Reduce_c(in, want, N, MPI_DOUBLE, MPI_MAX, root, MPI_COMM_WORLD);
  expect_same(got, want, sizeof got, "reduce_c");
  memcpy(got, in, sizeof in), memcpy(want, in, sizeof in);
  MPI_Bcast_c(got, N, MPI_DOUBLE, root, MPI_COMM_WORLD);
  PMPI_Bcast_c(want, N, MPI_DOUBLE, root, MPI_COMM_WORLD);
  expect_same(got, want, sizeof got, "bcast_c");
  MPI_Allgather_c(in, N, MPI_DOUBLE, all_got, N, MPI_DOUBLE, MPI_COMM_WORLD);
  PMPI_Allgather_c(in, N, MPI_DOUBLE, all_want, N, MPI_DOUBLE, MPI_COMM_WORLD);
  expect_same(all_got, all_want, (size_t)g_size * sizeof in, "allgather_c");
  MPI_Scan_c(in, got, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  PMPI_Scan_c(in, want, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  expect_same(got, want, sizeof got, "scan_c");
  memcpy(got, in, sizeof in), memcpy(want, in, sizeof in);
  MPI_Exscan_c(in, got, N, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  PMPI_Exscan_c(in, want, N, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (g_rank > 0) expect_same(got, want, sizeof got, "exscan_c");
  const MPI_Count block = N / g_size; /* P blocks fit in `in` */
  MPI_Reduce_scatter_block_c(in, got, block, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  PMPI_Reduce_scatter_block_c(in, want, block, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  expect_same(got, want, sizeof(double) * (size_t)block, "reduce_scatter_block_c");
  if (g_size <= 64) {
    MPI_Count blocks[64];
    for (int r = 0; r < g_size; ++r) blocks[r] = block;
    MPI_Reduce_scatter_c(in, got, blocks, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    PMPI_Reduce_scatter_c(in, want, blocks, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    expect_same(got, want, sizeof(double) * (size_t)block, "reduce_scatter_c");
  }
  if (g_size <= 64) {
    MPI_Allgatherv_c(in, N, MPI_DOUBLE, all_got, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    PMPI_Allgatherv_c(in, N, MPI_DOUBLE, all_want, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    expect_same(all_got, all_want, (size_t)g_size * sizeof in, "allgatherv_c");
    /* alltoall(v)_c: the gathered blocks (different per destination) sent on */
    double* a2a_got = calloc((size_t)g_size * N, sizeof(double));
    double* a2a_want = calloc((size_t)g_size * N, sizeof(double));
    MPI_Alltoall_c(all_want, N, MPI_DOUBLE, a2a_got, N, MPI_DOUBLE, MPI_COMM_WORLD);
    PMPI_Alltoall_c(all_want, N, MPI_DOUBLE, a2a_want, N, MPI_DOUBLE, MPI_COMM_WORLD);
    expect_same(a2a_got, a2a_want, (size_t)g_size * sizeof in, "alltoall_c");
    memset(a2a_got, 0, (size_t)g_size * sizeof in);
    MPI_Alltoallv_c(all_want, counts, displs, MPI_DOUBLE, a2a_got, counts, displs, MPI_DOUBLE,
                    MPI_COMM_WORLD);
    expect_same(a2a_got, a2a_want, (size_t)g_size * sizeof in, "alltoallv_c");
    free(a2a_got), free(a2a_want);
    memset(all_got, 0, (size_t)g_size * sizeof in), memset(all_want, 0, (size_t)g_size * sizeof in);
    MPI_Gatherv_c(in, N, MPI_DOUBLE, all_got, counts, displs, MPI_DOUBLE, root, MPI_COMM_WORLD);
    PMPI_Gatherv_c(in, N, MPI_DOUBLE, all_want, counts, displs, MPI_DOUBLE, root, MPI_COMM_WORLD);
    expect_same(all_got, all_want, (size_t)g_size * sizeof in, "gatherv_c");
    memset(got, 0, sizeof got), memset(want, 0, sizeof want);
    MPI_Scatterv_c(all_want, counts, displs, MPI_DOUBLE, got, N, MPI_DOUBLE, root, MPI_COMM_WORLD);
    PMPI_Scatterv_c(all_want, counts, displs, MPI_DOUBLE, want, N, MPI_DOUBLE, root,
                    MPI_COMM_WORLD);
    expect_same(got, want, sizeof got, "scatterv_c");
  }
  memset(all_got, 0, (size_t)g_size * sizeof in), memset(all_want, 0, (size_t)g_size * sizeof in);
  MPI_Gather_c(in, N, MPI_DOUBLE, all_got, N, MPI_DOUBLE, root, MPI_COMM_WORLD);
  PMPI_Gather_c(in, N, MPI_DOUBLE, all_want, N, MPI_DOUBLE, root, MPI_COMM_WORLD);
  expect_same(all_got, all_want, (size_t)g_size * sizeof in, "gather_c");
  memset(got, 0, sizeof got), memset(want, 0, sizeof want);
  MPI_Scatter_c(all_want, N, MPI_DOUBLE, got, N, MPI_DOUBLE, root, MPI_COMM_WORLD);
  PMPI_Scatter_c(all_want, N, MPI_DOUBLE, want, N, MPI_DOUBLE, root, MPI_COMM_WORLD);
  expect_same(got, want, sizeof got, "scatter_c");
  free(all_got), free(all_want);
}
#else
static void large_count(void) {}
#endif

/* MPI_Barrier as a barrier: every rank of a node increments a counter in
 * the node's shared window, entering late by a rank-dependent delay, then
 * calls MPI_Barrier; after it the counter must hold every local rank's
 * increment of this round (a rank that left early would see fewer). */
static void barrier(void) {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
  int local_rank, local_size;
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_size(node, &local_size);
  int* counter = NULL;
  MPI_Win win;
  MPI_Win_allocate_shared(local_rank == 0 ? (MPI_Aint)sizeof(int) : 0, sizeof(int), MPI_INFO_NULL,
                          node, &counter, &win);
  MPI_Aint bytes;
  int unit;
  MPI_Win_shared_query(win, 0, &bytes, &unit, &counter);
  if (local_rank == 0) __atomic_store_n(counter, 0, __ATOMIC_SEQ_CST);
  PMPI_Barrier(MPI_COMM_WORLD);
  int wrong = 0;
  for (int round = 1; round <= 200; ++round) {
    for (volatile long spin = 0; spin < (round % 7) * 20000L * g_rank; ++spin) {
    }
    __atomic_fetch_add(counter, 1, __ATOMIC_SEQ_CST);
    MPI_Barrier(MPI_COMM_WORLD);
    if (__atomic_load_n(counter, __ATOMIC_SEQ_CST) < round * local_size) ++wrong;
    PMPI_Barrier(MPI_COMM_WORLD); /* nobody increments before everyone has read */
  }
  expect_same(&wrong, &(int){0}, sizeof wrong, "barrier: a rank left before all had arrived");
  MPI_Win_free(&win);
  MPI_Comm_free(&node);
}

/* An inter-communicator between the even and the odd ranks: it falls back. */
static void intercomm(void) {
  if (g_size < 2) return;
  const int color = g_rank % 2;
  MPI_Comm half, inter;
  MPI_Comm_split(MPI_COMM_WORLD, color, g_rank, &half);
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 99, &inter);
  int in = g_rank + 1, got = 0, want = 0;
  MPI_Allreduce(&in, &got, 1, MPI_INT, MPI_SUM, inter);
  PMPI_Allreduce(&in, &want, 1, MPI_INT, MPI_SUM, inter);
  expect_same(&got, &want, sizeof got, "allreduce on an inter-communicator");
  MPI_Barrier(inter);
  int to_all[64], from_all[64] = {0}, from_all_mpi[64] = {0};
  for (int r = 0; r < 64; ++r) to_all[r] = in * 100 + r;
  if (g_size <= 128) { /* the remote group fits: alike on both sides */
    MPI_Alltoall(to_all, 1, MPI_INT, from_all, 1, MPI_INT, inter);
    PMPI_Alltoall(to_all, 1, MPI_INT, from_all_mpi, 1, MPI_INT, inter);
    expect_same(from_all, from_all_mpi, sizeof from_all, "alltoall on an inter-communicator");
  }
  /* gather from the odd ranks' group to rank 0 of the even ones */
  int remote = 0, *all = NULL, *all_want = NULL;
  MPI_Comm_remote_size(inter, &remote);
  all = calloc((size_t)remote, sizeof(int)), all_want = calloc((size_t)remote, sizeof(int));
  int half_rank = 0;
  MPI_Comm_rank(half, &half_rank);
  const int root = color == 0 ? (half_rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
  MPI_Gather(&in, 1, MPI_INT, all, 1, MPI_INT, root, inter);
  PMPI_Gather(&in, 1, MPI_INT, all_want, 1, MPI_INT, root, inter);
  expect_same(all, all_want, sizeof(int) * (size_t)remote, "gather on an inter-communicator");
  free(all), free(all_want);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
}

/* The nonblocking collectives routed through the PMPI library, against the
 * PMPI_ blocking calls: several outstanding at once, completed by one
 * MPI_Waitall in reverse order of their starts, then one by MPI_Test. */
static void nonblocking(void) {
  enum { K = 5, MAXP = 16 };
  if (g_size > MAXP) return;
  const int root = g_size - 1, p = g_size;
  double b[K], b_want[K], a_in[K * MAXP], a_got[K * MAXP], a_want[K * MAXP];
  double g_got[K * MAXP], g_want[K * MAXP], s_in[K], s_got[K], s_want[K];
  double r_in[K * MAXP], r_got[K], r_want[K];
  fill(b, K, MPI_DOUBLE, g_rank, 1);
  memcpy(b_want, b, sizeof b);
  fill(a_in, K * p, MPI_DOUBLE, g_rank, 2);
  fill(s_in, K, MPI_DOUBLE, g_rank, 3);
  fill(r_in, K * p, MPI_DOUBLE, g_rank, 4);
  PMPI_Bcast(b_want, K, MPI_DOUBLE, root, MPI_COMM_WORLD);
  PMPI_Alltoall(a_in, K, MPI_DOUBLE, a_want, K, MPI_DOUBLE, MPI_COMM_WORLD);
  PMPI_Allgather(s_in, K, MPI_DOUBLE, g_want, K, MPI_DOUBLE, MPI_COMM_WORLD);
  PMPI_Scan(s_in, s_want, K, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  PMPI_Reduce_scatter_block(r_in, r_want, K, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Request req[6];
  MPI_Ibcast(b, K, MPI_DOUBLE, root, MPI_COMM_WORLD, &req[0]);
  MPI_Ialltoall(a_in, K, MPI_DOUBLE, a_got, K, MPI_DOUBLE, MPI_COMM_WORLD, &req[1]);
  MPI_Iallgather(s_in, K, MPI_DOUBLE, g_got, K, MPI_DOUBLE, MPI_COMM_WORLD, &req[2]);
  MPI_Iscan(s_in, s_got, K, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[3]);
  MPI_Ireduce_scatter_block(r_in, r_got, K, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[4]);
  MPI_Ibarrier(MPI_COMM_WORLD, &req[5]);
  MPI_Request reversed[6];
  for (int i = 0; i < 6; ++i) reversed[i] = req[5 - i];
  MPI_Waitall(5, reversed, MPI_STATUSES_IGNORE);
  int flag = 0;
  while (!flag) MPI_Test(&reversed[5], &flag, MPI_STATUS_IGNORE);
  expect_same(b, b_want, sizeof b, "MPI_Ibcast");
  expect_same(a_got, a_want, sizeof(double) * K * p, "MPI_Ialltoall");
  expect_same(g_got, g_want, sizeof(double) * K * p, "MPI_Iallgather");
  expect_same(s_got, s_want, sizeof s_got, "MPI_Iscan");
  expect_same(r_got, r_want, sizeof r_got, "MPI_Ireduce_scatter_block");
}

/* Allgather, alltoall and reduce_scatter_block of repeated(): call i, into
 * buffer b of two (in place every 3rd alltoall and 4th allgather: another
 * route, and back). */
static void repeated_exchanges(int i, int b, int count, double* in, double* got[2], double* want) {
  const size_t wide = sizeof(double) * (size_t)(count * g_size);
  for (int k = 0; k < count * g_size; ++k) in[k] = g_rank * 1000 + i * 100 + k;
  memset(got[b], 0xff, wide); /* NaNs: what a call leaves unwritten shows */
  if (i % 4 == 3) {
    memcpy(got[b] + count * g_rank, in, sizeof(double) * (size_t)count);
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got[b], count, MPI_DOUBLE, MPI_COMM_WORLD);
  } else {
    MPI_Allgather(in, count, MPI_DOUBLE, got[b], count, MPI_DOUBLE, MPI_COMM_WORLD);
  }
  PMPI_Allgather(in, count, MPI_DOUBLE, want, count, MPI_DOUBLE, MPI_COMM_WORLD);
  expect_same(got[b], want, wide, "repeated allgather");
  memset(got[b], 0xff, wide);
  if (i % 3 == 2) {
    memcpy(got[b], in, wide);
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got[b], count, MPI_DOUBLE, MPI_COMM_WORLD);
  } else {
    MPI_Alltoall(in, count, MPI_DOUBLE, got[b], count, MPI_DOUBLE, MPI_COMM_WORLD);
  }
  PMPI_Alltoall(in, count, MPI_DOUBLE, want, count, MPI_DOUBLE, MPI_COMM_WORLD);
  expect_same(got[b], want, wide, "repeated alltoall");
  MPI_Reduce_scatter_block(in, got[b], count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  PMPI_Reduce_scatter_block(in, want, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  expect_same(got[b], want, sizeof(double) * (size_t)count, "repeated reduce_scatter_block");
}

/* Gather, scatter, scan and exscan of repeated(): call i at `root` (the
 * rooted two), buffer b of two, in place every 5th call (another route, and
 * back). */
static void repeated_rooted(int i, int b, int root, int count, double* in, double* got[2],
                            double* want) {
  const size_t wide = sizeof(double) * (size_t)(count * g_size);
  const size_t one = sizeof(double) * (size_t)count;
  const int in_place = i % 5 == 4 && g_rank == root;
  for (int k = 0; k < count * g_size; ++k) in[k] = g_rank * 1000 + i * 100 + k;
  memset(got[b], 0xff, wide);
  memset(want, 0xff, wide);
  if (in_place) memcpy(got[b] + count * root, in, one);
  MPI_Gather(in_place ? MPI_IN_PLACE : in, count, MPI_DOUBLE, got[b], count, MPI_DOUBLE, root,
             MPI_COMM_WORLD);
  PMPI_Gather(in, count, MPI_DOUBLE, want, count, MPI_DOUBLE, root, MPI_COMM_WORLD);
  if (g_rank == root) expect_same(got[b], want, wide, "repeated gather");
  memset(got[b], 0xff, wide);
  memset(want, 0xff, wide);
  if (in_place) memcpy(got[b], in + count * root, one);
  MPI_Scatter(in, count, MPI_DOUBLE, in_place ? MPI_IN_PLACE : got[b], count, MPI_DOUBLE, root,
              MPI_COMM_WORLD);
  PMPI_Scatter(in, count, MPI_DOUBLE, want, count, MPI_DOUBLE, root, MPI_COMM_WORLD);
  expect_same(got[b], want, one, "repeated scatter");
  /* scan and exscan (in place every 5th call on every rank) */
  memcpy(got[b], in, one);
  MPI_Scan(i % 5 == 4 ? MPI_IN_PLACE : in, got[b], count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  PMPI_Scan(in, want, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  expect_same(got[b], want, one, "repeated scan");
  memcpy(got[b], in, one);
  MPI_Exscan(i % 5 == 4 ? MPI_IN_PLACE : in, got[b], count, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  PMPI_Exscan(in, want, count, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (g_rank > 0) expect_same(got[b], want, one, "repeated exscan");
}

/* A loop of calls of one shape, as applications make: from the second on,
 * the PMPI library's route takes them to shancoll's plan (capi/pmpi_route.h).
 * New data and the other of two buffers on each call, a root that moves
 * every 8 calls and, every 7, a call of another shape in between. */
static void repeated(void) {
  enum { kCalls = 40, kCount = 5 };
  double in[2][kCount], got[2][kCount], want[kCount];
  const size_t wide = sizeof(double) * kCount * (size_t)g_size;
  double *wide_in = malloc(wide), *wide_got[2] = {malloc(wide), malloc(wide)};
  double* wide_want = malloc(wide);
  for (int i = 0; i < kCalls; ++i) {
    const int b = i % 2, root = (i / 8) % g_size;
    for (int k = 0; k < kCount; ++k) in[b][k] = g_rank * 100 + i * 10 + k;
    MPI_Allreduce(in[b], got[b], kCount, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    PMPI_Allreduce(in[b], want, kCount, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    expect_same(got[b], want, sizeof want, "repeated allreduce");
    memcpy(got[b], in[b], sizeof want), memcpy(want, in[b], sizeof want);
    MPI_Bcast(got[b], kCount, MPI_DOUBLE, root, MPI_COMM_WORLD);
    PMPI_Bcast(want, kCount, MPI_DOUBLE, root, MPI_COMM_WORLD);
    expect_same(got[b], want, sizeof want, "repeated bcast");
    memset(got[b], 0, sizeof want), memset(want, 0, sizeof want);
    MPI_Reduce(in[b], got[b], kCount, MPI_DOUBLE, MPI_MAX, root, MPI_COMM_WORLD);
    PMPI_Reduce(in[b], want, kCount, MPI_DOUBLE, MPI_MAX, root, MPI_COMM_WORLD);
    expect_same(got[b], want, sizeof want, "repeated reduce");
    repeated_exchanges(i, b, kCount, wide_in, wide_got, wide_want);
    repeated_rooted(i, b, root, kCount, wide_in, wide_got, wide_want);
    if (i % 7 == 6) check_allreduce(1, MPI_DOUBLE, MPI_SUM, 0, "allreduce between repeats");
  }
  free(wide_in), free(wide_got[0]), free(wide_got[1]), free(wide_want);
}

int main(int argc, char** argv) {
  /* --thread-multiple: every check at MPI_THREAD_MULTIPLE, routed as at SINGLE. */
  const int multiple = argc > 1 && strcmp(argv[1], "--thread-multiple") == 0;
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  MPI_Type_vector(2, 1, 2, MPI_INT, &g_vector);
  MPI_Type_commit(&g_vector);
  MPI_Type_contiguous(2, MPI_INT, &g_contig);
  MPI_Type_commit(&g_contig);
  MPI_Op abs_max_op, first_op, pair_sum_op;
  MPI_Op_create(abs_max, 1, &abs_max_op);
  MPI_Op_create(first, 0, &first_op);
  MPI_Op_create(pair_sum, 1, &pair_sum_op);

  reductions(abs_max_op, first_op, pair_sum_op);
  repeated();
  iallreduce(abs_max_op, first_op, pair_sum_op);
  scans(abs_max_op, first_op, pair_sum_op);
  reduce_scatters(abs_max_op, first_op, pair_sum_op);
  data_movement();
  pair_type();
  barrier();
  nonblocking();
  intercomm();
  large_count();

  int failed = 0;
  PMPI_Allreduce(&g_failed, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) printf("pmpi_check: %d checks, %d failed\n", g_checks, failed);
  MPI_Op_free(&abs_max_op);
  MPI_Op_free(&first_op);
  MPI_Op_free(&pair_sum_op);
  MPI_Type_free(&g_vector);
  MPI_Type_free(&g_contig);
  MPI_Finalize();
  return failed ? 1 : 0;
}
