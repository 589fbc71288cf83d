/* Persistent collectives through the PMPI library: MPI_Allreduce_init,
 * MPI_Bcast_init, MPI_Reduce_init, MPI_Allgather(v)_init, MPI_Alltoall(v)_init,
 * MPI_Gather(v)_init, MPI_Scatter(v)_init, MPI_Reduce_scatter(_block)_init,
 * MPI_Scan_init, MPI_Exscan_init (and their _c forms), MPI_Barrier_init, and the
 * calls that start, complete and free requests, checked against the
 * blocking PMPI_ calls (the MPI library's own) on the same inputs. The same binary
 * runs with and without the preload; tests/test_pmpi.py reads the verbose
 * lines and the summary to tell what was routed.
 *
 * Usage: mpiexec -n N shancoll_pmpi_persistent [routed|library] [deadline]
 *   routed: the small collectives are expected to run in shancoll (the
 *     refusals of an active request's start and free, of a cancel, and the
 *     handle a bypassing PMPI_ call sees, are checked too);
 *   deadline (2 ranks, SHANCOLL_TIMEOUT=2): rank 1 starts late; rank 0's
 *     MPI_Wait and MPI_Waitall must end in errors, a later one complete it.
 * Prints "pmpi_persistent: <checks> checks, <failed> failed". */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long g_checks, g_failed;
static int g_rank;
static int g_routed; /* the small allreduces are expected to run in shancoll */

static void check(int ok, const char* what, int detail) {
  ++g_checks;
  if (ok) return;
  if (++g_failed <= 10) fprintf(stderr, "rank %d: FAILED %s (%d)\n", g_rank, what, detail);
}

enum { MAX = 128 };

/* One persistent allreduce and its inputs, its result and the library's. */
typedef struct {
  MPI_Datatype type;
  MPI_Op op;
  int count;
  int in_place;
  size_t size; /* of one element */
  unsigned char send[MAX * 8], recv[MAX * 8], want[MAX * 8];
  MPI_Request request;
} Case;

/* Inputs that differ per rank and per run, small enough that no sum or
 * product overflows and every float result is exact. */
static void fill(Case* c, int run) {
  unsigned char* in = c->in_place ? c->recv : c->send;
  for (int k = 0; k < c->count; ++k) {
    const int v = (g_rank + 1) * (run + 2) + k % 5;
    if (c->type == MPI_INT) ((int*)in)[k] = v;
    if (c->type == MPI_DOUBLE) ((double*)in)[k] = v * 0.5;
    if (c->type == MPI_FLOAT) ((float*)in)[k] = (float)(v % 3 + 1);
    if (c->type == MPI_LONG_LONG) ((long long*)in)[k] = (long long)v << 20;
    if (c->type == MPI_UNSIGNED_CHAR) ((unsigned char*)in)[k] = (unsigned char)(v * 37);
  }
  PMPI_Allreduce(in, c->want, c->count, c->type, c->op, MPI_COMM_WORLD);
}

static void init(Case* c, MPI_Datatype type, MPI_Op op, int count, int in_place) {
  c->type = type;
  c->op = op;
  c->count = count;
  c->in_place = in_place;
  int size = 0;
  MPI_Type_size(type, &size);
  c->size = (size_t)size;
  memset(c->recv, 0, sizeof c->recv);
  MPI_Allreduce_init(in_place ? MPI_IN_PLACE : c->send, c->recv, count, type, op, MPI_COMM_WORLD,
                     MPI_INFO_NULL, &c->request);
}

static void compare(const Case* c, const char* what, int run) {
  check(memcmp(c->recv, c->want, c->size * (size_t)c->count) == 0, what, run);
}

/* The cases: dtypes and ops at 1 to 56 bytes (routed on one node), zero
 * count, in place, and 100 doubles (too big: the library's). */
enum { CASES = 8 };
static Case g_cases[CASES];

static void init_cases(void) {
  init(&g_cases[0], MPI_DOUBLE, MPI_SUM, 7, 0);
  init(&g_cases[1], MPI_INT, MPI_MAX, 1, 0);
  init(&g_cases[2], MPI_LONG_LONG, MPI_BOR, 3, 1);
  init(&g_cases[3], MPI_FLOAT, MPI_PROD, 14, 0);
  init(&g_cases[4], MPI_UNSIGNED_CHAR, MPI_BXOR, 56, 1);
  init(&g_cases[5], MPI_INT, MPI_MIN, 0, 0);
  init(&g_cases[6], MPI_DOUBLE, MPI_SUM, 100, 0);
  init(&g_cases[7], MPI_INT, MPI_SUM, 5, 1);
}

/* Repeated starts, each completed by its own call (Wait, Test loop,
 * Request_get_status loop then Wait), the inputs changed between starts. */
static void repeated(void) {
  for (int run = 0; run < 20; ++run) {
    for (int i = 0; i < CASES; ++i) {
      Case* c = &g_cases[i];
      fill(c, run);
      MPI_Start(&c->request);
      MPI_Status status;
      if (run % 3 == 0) {
        MPI_Wait(&c->request, &status);
      } else if (run % 3 == 1) {
        for (int done = 0; !done;) MPI_Test(&c->request, &done, &status);
      } else {
        for (int done = 0; !done;) MPI_Request_get_status(c->request, &done, &status);
        MPI_Wait(&c->request, &status);
      }
      compare(c, "repeated start", run * 100 + i);
      check(c->request != MPI_REQUEST_NULL, "persistent handle kept", i);
      /* Inactive now: a wait returns at once with an empty status. */
      MPI_Wait(&c->request, &status);
      check(status.MPI_TAG == MPI_ANY_TAG, "inactive wait", i);
    }
  }
}

/* The allreduces, a library persistent bcast (128 bytes: not routed) and a
 * send/receive pair, started together and completed in one call of each kind. */
typedef enum { BY_WAITALL, BY_TESTANY, BY_WAITSOME, BY_TESTALL, BY_WAITANY, KINDS } Kind;

static void mixed(Kind kind, int run) {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  enum { N = CASES + 3 };
  MPI_Request all[N];
  long long bcast[16], token_in = -1, token_out = 1000 * run + g_rank;
  for (int i = 0; i < CASES; ++i) fill(&g_cases[i], run), all[i] = g_cases[i].request;
  const int root = run % p;
  for (int k = 0; k < 16; ++k) bcast[k] = g_rank == root ? 7 * run + k : -1;
  MPI_Bcast_init(bcast, 16, MPI_LONG_LONG, root, MPI_COMM_WORLD, MPI_INFO_NULL, &all[CASES]);
  MPI_Startall(CASES + 1, all);
  MPI_Irecv(&token_in, 1, MPI_LONG_LONG, (g_rank + p - 1) % p, run, MPI_COMM_WORLD,
            &all[CASES + 1]);
  MPI_Isend(&token_out, 1, MPI_LONG_LONG, (g_rank + 1) % p, run, MPI_COMM_WORLD, &all[CASES + 2]);
  MPI_Status statuses[N];
  int seen[N] = {0}, left = N, index = 0, flag = 0, out = 0, indices[N];
  switch (kind) {
    case BY_WAITALL:
      MPI_Waitall(N, all, statuses);
      for (int i = 0; i < N; ++i) seen[i] = 1;
      break;
    case BY_TESTALL:
      /* The library's persistent collectives apart: MPICH 5.0.2's
       * MPI_Testall returns MPI_ERR_IN_STATUS (MPI_ERR_PENDING) on an
       * active one of its own not complete yet, and never sets the flag
       * with an inactive one in the array, with or without the preload.
       * So: the routed requests and the send/receive pair only. */
      MPI_Waitall(CASES + 1, all, statuses);
      if (g_routed) {
        MPI_Request some[CASES + 1];
        int k = 0;
        for (int i = 0; i < CASES; ++i)
          if (i != 6) some[k++] = all[i];
        some[k++] = all[CASES + 1];
        some[k++] = all[CASES + 2];
        for (int i = 0; i < CASES; ++i)
          if (i != 6) fill(&g_cases[i], run + 50); /* and started again */
        for (int i = 0; i < k - 2; ++i) MPI_Start(&some[i]);
        MPI_Status got[CASES + 1];
        while (!flag) MPI_Testall(k, some, &flag, got);
        all[CASES + 1] = some[k - 2], all[CASES + 2] = some[k - 1];
        statuses[CASES + 1] = got[k - 2];
      } else {
        MPI_Waitall(2, &all[CASES + 1], &statuses[CASES + 1]);
      }
      for (int i = 0; i < N; ++i) seen[i] = 1;
      break;
    case BY_TESTANY:
    case BY_WAITANY:
      while (left > 0) {
        if (kind == BY_WAITANY) {
          MPI_Waitany(N, all, &index, &statuses[0]);
          flag = 1;
        } else {
          MPI_Testany(N, all, &index, &flag, &statuses[0]);
        }
        if (!flag) continue;
        check(index != MPI_UNDEFINED, "any: an index", index);
        if (index == MPI_UNDEFINED) break;
        check(!seen[index], "any: a new index", index);
        if (index == CASES + 1) statuses[CASES + 1] = statuses[0];
        seen[index] = 1, --left;
      }
      /* Every request is inactive or null now: MPI_UNDEFINED. */
      MPI_Waitany(N, all, &index, MPI_STATUS_IGNORE);
      check(index == MPI_UNDEFINED, "waitany: nothing active", index);
      break;
    case BY_WAITSOME:
      while (left > 0) {
        MPI_Waitsome(N, all, &out, indices, statuses);
        check(out != MPI_UNDEFINED && out > 0, "waitsome: some", out);
        if (out == MPI_UNDEFINED) break;
        for (int k = 0; k < out; ++k) {
          check(!seen[indices[k]], "waitsome: a new index", indices[k]);
          if (indices[k] == CASES + 1) statuses[CASES + 1] = statuses[k];
          seen[indices[k]] = 1, --left;
        }
      }
      MPI_Testsome(N, all, &out, indices, MPI_STATUSES_IGNORE);
      check(out == MPI_UNDEFINED, "testsome: nothing active", out);
      break;
    default:
      break;
  }
  for (int i = 0; i < CASES; ++i) {
    compare(&g_cases[i], "mixed", kind * 1000 + run * 10 + i);
    check(all[i] == g_cases[i].request, "mixed: persistent handle kept", i);
  }
  for (int k = 0; k < 16; ++k) check(bcast[k] == 7 * run + k, "mixed: library bcast", k);
  check(token_in == 1000 * run + (g_rank + p - 1) % p, "mixed: irecv", (int)token_in);
  check(statuses[CASES + 1].MPI_SOURCE == (g_rank + p - 1) % p, "mixed: irecv status",
        statuses[CASES + 1].MPI_SOURCE);
  check(all[CASES + 1] == MPI_REQUEST_NULL && all[CASES + 2] == MPI_REQUEST_NULL,
        "mixed: nonblocking requests freed", kind);
  MPI_Request_free(&all[CASES]);
}

/* MPI_Bcast_init, MPI_Reduce_init, MPI_Allgather_init and their _c forms, at
 * most 56 bytes per rank (routed on one node): every root, ROOTED_RUNS starts
 * of all six together (MPI_Startall, MPI_Waitall), the inputs changed
 * between starts, rank 0 late before every third start (the others run
 * ahead: the rooted engines' line reuse); reduce_c in place at the root,
 * allgather_c in place. */
/* An MPI-3 library (Open MPI 5.0) has the persistent collectives but not
 * their large-count forms: the int forms stand in for them. */
#if MPI_VERSION < 4
#define MPI_Bcast_init_c MPI_Bcast_init
#define MPI_Reduce_init_c MPI_Reduce_init
#define MPI_Allgather_init_c MPI_Allgather_init
#define MPI_Allgatherv_init_c MPI_Allgatherv_init
typedef int big_count; /* the _c forms' count and displacement types */
typedef int big_displ;
#else
typedef MPI_Count big_count;
typedef MPI_Aint big_displ;
#endif

enum { ROOTED_RUNS = 30, MAX_RANKS = 8, ROOTED = 6 };

static void rooted(void) {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (p > MAX_RANKS) return;
  for (int root = 0; root < p; ++root) {
    long long bcast[7], bcast_want[7];
    int small[1], small_want[1], gather[2], everyone[2 * MAX_RANKS], everyone_want[2 * MAX_RANKS];
    double send[3], sum[3], sum_want[3];
    unsigned in_place[5], in_place_want[5];
    short gathered[3 * MAX_RANKS], gathered_want[3 * MAX_RANKS];
    MPI_Request r[ROOTED];
    const MPI_Comm w = MPI_COMM_WORLD;
    MPI_Bcast_init(bcast, 7, MPI_LONG_LONG, root, w, MPI_INFO_NULL, &r[0]);
    MPI_Bcast_init_c(small, 1, MPI_INT, root, w, MPI_INFO_NULL, &r[1]);
    MPI_Reduce_init(send, sum, 3, MPI_DOUBLE, MPI_SUM, root, w, MPI_INFO_NULL, &r[2]);
    MPI_Reduce_init_c(g_rank == root ? MPI_IN_PLACE : in_place, in_place, 5, MPI_UNSIGNED, MPI_BXOR,
                      root, w, MPI_INFO_NULL, &r[3]);
    MPI_Allgather_init(gather, 2, MPI_INT, everyone, 2, MPI_INT, w, MPI_INFO_NULL, &r[4]);
    MPI_Allgather_init_c(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered, 3, MPI_SHORT, w,
                         MPI_INFO_NULL, &r[5]);
    for (int run = 0; run < ROOTED_RUNS; ++run) {
      const int v = 100 * run + 10 * root + g_rank;
      for (int k = 0; k < 7; ++k) bcast[k] = bcast_want[k] = g_rank == root ? v * 7 + k : -1;
      small[0] = small_want[0] = g_rank == root ? v : -1;
      for (int k = 0; k < 3; ++k) send[k] = v * 0.5 + k;
      for (int k = 0; k < 5; ++k) in_place[k] = (unsigned)(v * 2654435761u) >> k;
      for (int k = 0; k < 2; ++k) gather[k] = v + k;
      for (int k = 0; k < 3 * p; ++k) gathered[k] = -1;
      for (int k = 0; k < 3; ++k) gathered[3 * g_rank + k] = (short)(v + k);
      PMPI_Bcast(bcast_want, 7, MPI_LONG_LONG, root, w);
      PMPI_Bcast(small_want, 1, MPI_INT, root, w);
      PMPI_Reduce(send, sum_want, 3, MPI_DOUBLE, MPI_SUM, root, w);
      PMPI_Reduce(in_place, in_place_want, 5, MPI_UNSIGNED, MPI_BXOR, root, w);
      PMPI_Allgather(gather, 2, MPI_INT, everyone_want, 2, MPI_INT, w);
      PMPI_Allgather(&gathered[3 * g_rank], 3, MPI_SHORT, gathered_want, 3, MPI_SHORT, w);
      if (g_rank == 0 && run % 3 == 0) usleep(2000);
      MPI_Startall(ROOTED, r);
      MPI_Waitall(ROOTED, r, MPI_STATUSES_IGNORE);
      const int at = root * 1000 + run;
      check(memcmp(bcast, bcast_want, sizeof bcast) == 0, "bcast_init", at);
      check(small[0] == small_want[0], "bcast_init_c", at);
      if (g_rank == root) {
        check(memcmp(sum, sum_want, sizeof sum) == 0, "reduce_init", at);
        check(memcmp(in_place, in_place_want, sizeof in_place) == 0, "reduce_init_c in place", at);
      }
      check(memcmp(everyone, everyone_want, sizeof(int) * 2 * (size_t)p) == 0, "allgather_init",
            at);
      check(memcmp(gathered, gathered_want, sizeof(short) * 3 * (size_t)p) == 0,
            "allgather_init_c in place", at);
    }
    for (int i = 0; i < ROOTED; ++i) MPI_Request_free(&r[i]);
  }
}

/* The other collectives, all started together each run (MPI_Startall over
 * every kind, MPI_Waitall), the inputs changed between starts, every
 * result checked against the blocking PMPI_ call: MPI_Barrier_init (alone
 * first, rank 0 late: no rank's wait may end before rank 0's start),
 * MPI_Allgatherv_init with irregular counts (one zero), MPI_Allgatherv_init_c
 * in place, MPI_Alltoall(v)_init, MPI_Gather(v)_init, MPI_Scatter(v)_init,
 * MPI_Reduce_scatter(_block)_init, MPI_Scan_init, MPI_Exscan_init
 * (shancoll's deposit engines on one node; root 1 for the rooted ones), and
 * a zero-count allgatherv. */
enum { OTHER_RUNS = 12, OTHERS = 14 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void others(void) {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (p > MAX_RANKS) return;
  const MPI_Comm w = MPI_COMM_WORLD;
  const int root = 1 % p;
  int counts[MAX_RANKS], displs[MAX_RANKS], zeros[MAX_RANKS] = {0}, total = 0;
  int from_each[MAX_RANKS], at_ten[MAX_RANKS]; /* alltoallv: counts[me] from every rank */
  big_count counts_c[MAX_RANKS];
  big_displ displs_c[MAX_RANKS];
  for (int r = 0; r < p; ++r) {
    from_each[r] = g_rank == 1 ? 0 : g_rank + 2, at_ten[r] = 10 * r;
    counts[r] = r == 1 ? 0 : r + 2; /* at most 9 ints: 36 bytes */
    displs[r] = total + r;          /* a gap between blocks */
    counts_c[r] = counts[r], displs_c[r] = displs[r];
    total += counts[r] + 1;
  }
  int mine[MAX_RANKS + 2], got[16 * MAX_RANKS], got_want[16 * MAX_RANKS];
  int inplace[16 * MAX_RANKS], inplace_want[16 * MAX_RANKS], nothing = 0, nothing_out = 0;
  long long g_send[2], g_recv[2 * MAX_RANKS], g_want[2 * MAX_RANKS];
  int gv_recv[16 * MAX_RANKS], gv_want[16 * MAX_RANKS];
  int s_send[3 * MAX_RANKS], s_recv[3], s_want[3];
  int sv_recv[MAX_RANKS + 2], sv_want[MAX_RANKS + 2];
  int a_send[2 * MAX_RANKS], a_recv[2 * MAX_RANKS], a_want[2 * MAX_RANKS];
  int av_recv[16 * MAX_RANKS], av_want[16 * MAX_RANKS];
  double rs_send[16 * MAX_RANKS], rs_recv[16], rs_want[16];
  double rsb_send[2 * MAX_RANKS], rsb_recv[2], rsb_want[2];
  long scan_send[4], scan_recv[4], scan_want[4], ex_recv[4], ex_want[4];
  const int mine_count = counts[g_rank];
  const size_t span = sizeof(int) * 16 * (size_t)p; /* of the v-collectives' buffers in use */
  MPI_Request r[OTHERS];
  MPI_Barrier_init(w, MPI_INFO_NULL, &r[0]);
  MPI_Allgatherv_init(mine, mine_count, MPI_INT, got, counts, displs, MPI_INT, w, MPI_INFO_NULL,
                      &r[1]);
  MPI_Allgatherv_init_c(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, inplace, counts_c, displs_c, MPI_INT, w,
                        MPI_INFO_NULL, &r[2]);
  MPI_Allgatherv_init(&nothing, 0, MPI_INT, &nothing_out, zeros, zeros, MPI_INT, w, MPI_INFO_NULL,
                      &r[3]);
  MPI_Gather_init(g_send, 2, MPI_LONG_LONG, g_recv, 2, MPI_LONG_LONG, root, w, MPI_INFO_NULL,
                  &r[4]);
  MPI_Gatherv_init(mine, mine_count, MPI_INT, gv_recv, counts, displs, MPI_INT, root, w,
                   MPI_INFO_NULL, &r[5]);
  MPI_Scatter_init(s_send, 3, MPI_INT, s_recv, 3, MPI_INT, root, w, MPI_INFO_NULL, &r[6]);
  MPI_Alltoall_init(a_send, 2, MPI_INT, a_recv, 2, MPI_INT, w, MPI_INFO_NULL, &r[7]);
  MPI_Reduce_scatter_init(rs_send, rs_recv, counts, MPI_DOUBLE, MPI_SUM, w, MPI_INFO_NULL, &r[8]);
  MPI_Reduce_scatter_block_init(rsb_send, rsb_recv, 2, MPI_DOUBLE, MPI_MAX, w, MPI_INFO_NULL,
                                &r[9]);
  MPI_Scan_init(scan_send, scan_recv, 4, MPI_LONG, MPI_SUM, w, MPI_INFO_NULL, &r[10]);
  MPI_Exscan_init(scan_send, ex_recv, 4, MPI_LONG, MPI_BXOR, w, MPI_INFO_NULL, &r[11]);
  /* These two send from `got`, which the allgatherv writes: started apart. */
  MPI_Scatterv_init(got, counts, displs, MPI_INT, sv_recv, mine_count, MPI_INT, root, w,
                    MPI_INFO_NULL, &r[12]);
  MPI_Alltoallv_init(got, counts, displs, MPI_INT, av_recv, from_each, at_ten, MPI_INT, w,
                     MPI_INFO_NULL, &r[13]);
  for (int run = 0; run < OTHER_RUNS; ++run) {
    const int v = 1000 * run + 10 * g_rank;
    for (int k = 0; k < mine_count; ++k) mine[k] = v + k;
    for (int k = 0; k < 16 * p; ++k) got[k] = got_want[k] = inplace[k] = inplace_want[k] = -1;
    for (int k = 0; k < counts[g_rank]; ++k)
      inplace[displs[g_rank] + k] = inplace_want[displs[g_rank] + k] = v - k;
    for (int k = 0; k < 2; ++k) g_send[k] = (long long)v * 3 + k;
    for (int k = 0; k < 16 * p; ++k) gv_recv[k] = gv_want[k] = av_recv[k] = av_want[k] = -7;
    for (int k = 0; k < 3 * p; ++k) s_send[k] = v + 5 * k;
    for (int k = 0; k < 2 * p; ++k) a_send[k] = v + k, rsb_send[k] = (v % 97) * 0.25 + k;
    for (int k = 0; k < 16 * p; ++k) rs_send[k] = (v % 89) * 0.5 - k;
    for (int k = 0; k < 4; ++k) scan_send[k] = (long)v * 7 + k;
    /* The library's answers, from inputs the persistent calls read at their start. */
    PMPI_Allgatherv(mine, mine_count, MPI_INT, got_want, counts, displs, MPI_INT, w);
    PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, inplace_want, counts, displs, MPI_INT, w);
    PMPI_Gather(g_send, 2, MPI_LONG_LONG, g_want, 2, MPI_LONG_LONG, root, w);
    PMPI_Gatherv(mine, mine_count, MPI_INT, gv_want, counts, displs, MPI_INT, root, w);
    PMPI_Scatter(s_send, 3, MPI_INT, s_want, 3, MPI_INT, root, w);
    PMPI_Scatterv(got_want, counts, displs, MPI_INT, sv_want, mine_count, MPI_INT, root, w);
    PMPI_Alltoall(a_send, 2, MPI_INT, a_want, 2, MPI_INT, w);
    PMPI_Alltoallv(got_want, counts, displs, MPI_INT, av_want, from_each, at_ten, MPI_INT, w);
    PMPI_Reduce_scatter(rs_send, rs_want, counts, MPI_DOUBLE, MPI_SUM, w);
    PMPI_Reduce_scatter_block(rsb_send, rsb_want, 2, MPI_DOUBLE, MPI_MAX, w);
    PMPI_Scan(scan_send, scan_want, 4, MPI_LONG, MPI_SUM, w);
    PMPI_Exscan(scan_send, ex_want, 4, MPI_LONG, MPI_BXOR, w);
    /* Scatterv and alltoallv first, from the allgatherv's answer. */
    memcpy(got, got_want, span);
    MPI_Startall(2, &r[12]);
    MPI_Waitall(2, &r[12], MPI_STATUSES_IGNORE);
    for (int k = 0; k < 16 * p; ++k) got[k] = -1;
    /* The barrier alone, rank 0 starting 3 ms late: no rank's wait may end
     * before rank 0's start (CLOCK_MONOTONIC: one clock for the node). */
    PMPI_Barrier(w);
    if (g_rank == 0) usleep(3000);
    const double started = now();
    MPI_Start(&r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    const double ended = now();
    double rank0_started = started;
    PMPI_Bcast(&rank0_started, 1, MPI_DOUBLE, 0, w);
    /* Then every other kind together, the barrier again among them. */
    MPI_Startall(OTHERS - 2, r);
    MPI_Waitall(OTHERS - 2, r, MPI_STATUSES_IGNORE);
    const int at = run;
    check(ended >= rank0_started, "barrier_init: no wait ends before the last start", at);
    check(memcmp(got, got_want, span) == 0, "allgatherv_init", at);
    check(memcmp(inplace, inplace_want, span) == 0, "allgatherv_init_c in place", at);
    check(nothing_out == 0, "allgatherv_init zero counts", at);
    if (g_rank == root) {
      check(memcmp(g_recv, g_want, sizeof(long long) * 2 * (size_t)p) == 0, "gather_init", at);
      check(memcmp(gv_recv, gv_want, span) == 0, "gatherv_init", at);
    }
    check(memcmp(s_recv, s_want, sizeof s_recv) == 0, "scatter_init", at);
    check(memcmp(sv_recv, sv_want, sizeof(int) * (size_t)mine_count) == 0, "scatterv_init", at);
    check(memcmp(a_recv, a_want, sizeof(int) * 2 * (size_t)p) == 0, "alltoall_init", at);
    check(memcmp(av_recv, av_want, span) == 0, "alltoallv_init", at);
    check(memcmp(rs_recv, rs_want, sizeof(double) * (size_t)mine_count) == 0, "reduce_scatter_init",
          at);
    check(memcmp(rsb_recv, rsb_want, sizeof rsb_recv) == 0, "reduce_scatter_block_init", at);
    check(memcmp(scan_recv, scan_want, sizeof scan_recv) == 0, "scan_init", at);
    if (g_rank > 0) check(memcmp(ex_recv, ex_want, sizeof ex_recv) == 0, "exscan_init", at);
  }
  for (int i = 0; i < OTHERS; ++i) MPI_Request_free(&r[i]);
}

/* The deposit engines (past 56 bytes on one node): MPI_Allreduce_init (and
 * in place), MPI_Reduce_init (in place at the root) and MPI_Allgather_init
 * of LARGE doubles (three deposit chunks and a part); the single-copy
 * engines where the ranks may copy straight between their buffers:
 * MPI_Bcast_init, and MPI_Gather_init, MPI_Scatter_init and
 * MPI_Alltoall_init of LARGE doubles per rank (past their deposits'
 * bounds). At every root, LARGE_RUNS starts of all eight together
 * (MPI_Startall, MPI_Waitall), the inputs changed between starts, rank 0
 * late before every third start, checked against the blocking PMPI_ calls. */
enum { LARGE = 3 * 4096 + 17, LARGE_RUNS = 10, LARGES = 8 };
static double l_send[LARGE], l_sum[LARGE], l_sum_want[LARGE], l_in[LARGE], l_in_want[LARGE];
static double l_bcast[LARGE], l_bcast_want[LARGE], l_red[LARGE], l_red_want[LARGE];
static double l_all[LARGE * MAX_RANKS], l_all_want[LARGE * MAX_RANKS];
static double l_gath[LARGE * MAX_RANKS], l_gath_want[LARGE * MAX_RANKS];
static double l_scat[LARGE], l_scat_want[LARGE], l_a2a[LARGE * MAX_RANKS];
static double l_a2a_want[LARGE * MAX_RANKS], l_blocks[LARGE * MAX_RANKS];

static void large(void) {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (p > MAX_RANKS) return;
  const MPI_Comm w = MPI_COMM_WORLD;
  for (int root = 0; root < p; ++root) {
    MPI_Request r[LARGES];
    MPI_Allreduce_init(l_send, l_sum, LARGE, MPI_DOUBLE, MPI_SUM, w, MPI_INFO_NULL, &r[0]);
    MPI_Allreduce_init(MPI_IN_PLACE, l_in, LARGE, MPI_DOUBLE, MPI_MAX, w, MPI_INFO_NULL, &r[1]);
    MPI_Bcast_init(l_bcast, LARGE, MPI_DOUBLE, root, w, MPI_INFO_NULL, &r[2]);
    MPI_Reduce_init(g_rank == root ? MPI_IN_PLACE : l_red, l_red, LARGE, MPI_DOUBLE, MPI_SUM, root,
                    w, MPI_INFO_NULL, &r[3]);
    MPI_Allgather_init(l_send, LARGE, MPI_DOUBLE, l_all, LARGE, MPI_DOUBLE, w, MPI_INFO_NULL,
                       &r[4]);
    MPI_Gather_init(l_send, LARGE, MPI_DOUBLE, l_gath, LARGE, MPI_DOUBLE, root, w, MPI_INFO_NULL,
                    &r[5]);
    MPI_Scatter_init(l_blocks, LARGE, MPI_DOUBLE, l_scat, LARGE, MPI_DOUBLE, root, w, MPI_INFO_NULL,
                     &r[6]);
    MPI_Alltoall_init(l_blocks, LARGE, MPI_DOUBLE, l_a2a, LARGE, MPI_DOUBLE, w, MPI_INFO_NULL,
                      &r[7]);
    for (int run = 0; run < LARGE_RUNS; ++run) {
      const int v = 100 * run + 10 * root + g_rank;
      for (int k = 0; k < LARGE; ++k) {
        l_send[k] = v * 0.5 + k % 101;
        l_in[k] = l_in_want[k] = (v * 7 + k) % 1009;
        l_bcast[k] = l_bcast_want[k] = g_rank == root ? v + k * 0.25 : -1;
        l_red[k] = l_red_want[k] = v - k % 13;
      }
      for (int k = 0; k < LARGE * p; ++k) l_blocks[k] = v * 3 + k % 997;
      memset(l_gath, 0, sizeof l_gath);
      memset(l_scat, 0, sizeof l_scat);
      memset(l_a2a, 0, sizeof l_a2a);
      PMPI_Allreduce(l_send, l_sum_want, LARGE, MPI_DOUBLE, MPI_SUM, w);
      PMPI_Allreduce(MPI_IN_PLACE, l_in_want, LARGE, MPI_DOUBLE, MPI_MAX, w);
      PMPI_Bcast(l_bcast_want, LARGE, MPI_DOUBLE, root, w);
      PMPI_Reduce(g_rank == root ? MPI_IN_PLACE : l_red_want, l_red_want, LARGE, MPI_DOUBLE,
                  MPI_SUM, root, w);
      PMPI_Allgather(l_send, LARGE, MPI_DOUBLE, l_all_want, LARGE, MPI_DOUBLE, w);
      PMPI_Gather(l_send, LARGE, MPI_DOUBLE, l_gath_want, LARGE, MPI_DOUBLE, root, w);
      PMPI_Scatter(l_blocks, LARGE, MPI_DOUBLE, l_scat_want, LARGE, MPI_DOUBLE, root, w);
      PMPI_Alltoall(l_blocks, LARGE, MPI_DOUBLE, l_a2a_want, LARGE, MPI_DOUBLE, w);
      if (g_rank == 0 && run % 3 == 0) usleep(2000);
      MPI_Startall(LARGES, r);
      MPI_Waitall(LARGES, r, MPI_STATUSES_IGNORE);
      const int at = root * 1000 + run;
      check(memcmp(l_sum, l_sum_want, sizeof l_sum) == 0, "large allreduce_init", at);
      check(memcmp(l_in, l_in_want, sizeof l_in) == 0, "large allreduce_init in place", at);
      check(memcmp(l_bcast, l_bcast_want, sizeof l_bcast) == 0, "large bcast_init", at);
      if (g_rank == root)
        check(memcmp(l_red, l_red_want, sizeof l_red) == 0, "large reduce_init in place", at);
      check(memcmp(l_all, l_all_want, sizeof(double) * LARGE * (size_t)p) == 0,
            "large allgather_init", at);
      if (g_rank == root)
        check(memcmp(l_gath, l_gath_want, sizeof(double) * LARGE * (size_t)p) == 0,
              "large gather_init", at);
      check(memcmp(l_scat, l_scat_want, sizeof l_scat) == 0, "large scatter_init", at);
      check(memcmp(l_a2a, l_a2a_want, sizeof(double) * LARGE * (size_t)p) == 0,
            "large alltoall_init", at);
    }
    for (int i = 0; i < LARGES; ++i) MPI_Request_free(&r[i]);
  }
}

/* Free before the first start, and after a completed run. */
static void frees(void) {
  double x = g_rank, y = 0;
  MPI_Request r;
  MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &r);
  MPI_Request_free(&r);
  check(r == MPI_REQUEST_NULL, "barrier: free before start", 0);
  MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &r);
  MPI_Start(&r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  MPI_Request_free(&r);
  check(r == MPI_REQUEST_NULL, "barrier: free after completion", 0);
  MPI_Allreduce_init(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
  MPI_Request_free(&r);
  check(r == MPI_REQUEST_NULL, "free before start", 0);
  MPI_Allreduce_init(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
  MPI_Start(&r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  MPI_Request_free(&r);
  check(r == MPI_REQUEST_NULL, "free after completion", 0);
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  check(y == p * (p - 1) / 2.0, "free after completion: result", (int)y);
}

/* What only a routed request shows: its handle is the library's inactive
 * persistent request (a bypassing PMPI_ call sees it complete at once), and
 * the erroneous calls are refused with an error, the run untouched. */
static void refusals(void) {
  Case* c = &g_cases[0];
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int flag = 0;
  PMPI_Request_get_status(c->request, &flag, MPI_STATUS_IGNORE);
  check(flag == 1, "the handle is an inactive library request", flag);
  fill(c, 99);
  MPI_Start(&c->request);
  check(MPI_Start(&c->request) != MPI_SUCCESS, "start of an active request refused", 0);
  check(MPI_Request_free(&c->request) != MPI_SUCCESS, "free of an active request refused", 0);
  check(MPI_Cancel(&c->request) != MPI_SUCCESS, "cancel refused", 0);
  MPI_Wait(&c->request, MPI_STATUS_IGNORE);
  compare(c, "after the refusals", 99);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* The communicator freed before its routed request, which MPI allows: the
 * library's own persistent request behind the handle holds the
 * communicator, and MPICH deletes its attributes (shancoll's state for it)
 * only with the last reference, at MPI_Request_free: later runs are right. */
static void comm_freed_first(void) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  int x = 0, y = 0, p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Request r;
  MPI_Allreduce_init(&x, &y, 1, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &r);
  for (int run = 0; run < 4; ++run) {
    if (run == 2) MPI_Comm_free(&comm);
    x = g_rank + run;
    MPI_Start(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    check(y == p * (p - 1) / 2 + p * run, "the communicator freed first", y);
  }
  MPI_Request_free(&r);
  check(r == MPI_REQUEST_NULL, "and the request freed after it", 0);
}

/* Rank 1 starts 6 s late (SHANCOLL_TIMEOUT=2): rank 0's MPI_Wait ends in an
 * error, then its MPI_Waitall beside a completed send/receive pair in
 * MPI_ERR_IN_STATUS (the routed one's error, the pair pending and left as it
 * was); the run stays active and a later MPI_Waitall completes all three. */
static void deadline(void) {
  int x = g_rank + 1, y = 0;
  long long token = g_rank, got = -1;
  MPI_Request r[3];
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Allreduce_init(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &r[0]);
  if (g_rank == 1) sleep(6); /* past both of rank 0's deadlines, 2 s each */
  MPI_Start(&r[0]);
  MPI_Irecv(&got, 1, MPI_LONG_LONG, 1 - g_rank, 7, MPI_COMM_WORLD, &r[1]);
  MPI_Isend(&token, 1, MPI_LONG_LONG, 1 - g_rank, 7, MPI_COMM_WORLD, &r[2]);
  if (g_rank == 0) {
    check(MPI_Wait(&r[0], MPI_STATUS_IGNORE) != MPI_SUCCESS, "wait past the deadline: an error", 0);
    MPI_Status statuses[3];
    const int rc = MPI_Waitall(3, r, statuses);
    check(rc == MPI_ERR_IN_STATUS, "waitall past the deadline: MPI_ERR_IN_STATUS", rc);
    check(statuses[0].MPI_ERROR != MPI_SUCCESS && statuses[0].MPI_ERROR != MPI_ERR_PENDING,
          "the routed request's error", statuses[0].MPI_ERROR);
    check(statuses[1].MPI_ERROR == MPI_ERR_PENDING && r[1] != MPI_REQUEST_NULL,
          "the receive pending, untouched", statuses[1].MPI_ERROR);
  }
  int rc = MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
  for (int tries = 0; rc != MPI_SUCCESS && tries < 3; ++tries)
    rc = MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
  check(rc == MPI_SUCCESS, "the run completes later", g_rank);
  check(y == 3 && got == 1 - g_rank, "and its result", y);
  MPI_Request_free(&r[0]);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* MPI_Alltoallv_init where rank 0 receives nothing and passes a NULL
 * recvbuf (MPI allows it: no count of it is read), the others exchanging
 * among themselves and sending to rank 0: NULL_RECV_RUNS starts, checked
 * against PMPI_Alltoallv. */
enum { NULL_RECV_RUNS = 5 };
static void null_recv(void) {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (p > MAX_RANKS) return;
  int send[MAX_RANKS * 3], recv[MAX_RANKS * 3], want[MAX_RANKS * 3];
  int scounts[MAX_RANKS], sdispls[MAX_RANKS], rcounts[MAX_RANKS], rdispls[MAX_RANKS];
  for (int j = 0; j < p; ++j) {
    scounts[j] = j == 0 ? 0 : 3, sdispls[j] = 3 * j;
    rcounts[j] = g_rank == 0 ? 0 : 3, rdispls[j] = 3 * j;
  }
  int* into = g_rank == 0 ? NULL : recv;
  MPI_Request r;
  MPI_Alltoallv_init(send, scounts, sdispls, MPI_INT, into, rcounts, rdispls, MPI_INT,
                     MPI_COMM_WORLD, MPI_INFO_NULL, &r);
  for (int run = 0; run < NULL_RECV_RUNS; ++run) {
    for (int k = 0; k < 3 * p; ++k) send[k] = 1000 * run + 100 * g_rank + k, recv[k] = want[k] = -1;
    PMPI_Alltoallv(send, scounts, sdispls, MPI_INT, g_rank == 0 ? NULL : want, rcounts, rdispls,
                   MPI_INT, MPI_COMM_WORLD);
    MPI_Start(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    check(memcmp(recv, want, sizeof(int) * 3 * (size_t)p) == 0, "alltoallv_init, NULL recvbuf",
          run);
  }
  MPI_Request_free(&r);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  g_routed = argc > 1 && strcmp(argv[1], "routed") == 0;
  if (argc > 2 && strcmp(argv[2], "deadline") == 0) {
    deadline();
  } else {
    init_cases();
    repeated();
    for (int run = 0; run < 10; ++run)
      for (Kind kind = BY_WAITALL; kind < KINDS; ++kind) mixed(kind, run);
    if (g_routed) refusals();
    rooted();
    others();
    large();
    null_recv();
    comm_freed_first();
    for (int i = 0; i < CASES; ++i) MPI_Request_free(&g_cases[i].request);
    frees();
  }
  long all[2] = {g_checks, g_failed};
  PMPI_Allreduce(MPI_IN_PLACE, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) printf("pmpi_persistent: %ld checks, %ld failed\n", all[0], all[1]);
  MPI_Finalize();
  return 0;
}
