/* pair_floor: the fastest this machine moves a two-rank allreduce, reduce
 * and bcast by cross-memory attach, the mechanism shancoll's single-copy
 * paths use (coll/pair_reduce.cc, release_gather_single_copy.cc), with no
 * MPI, no Python and no library around it. Two processes pinned to CPUs 0
 * and 1, page-aligned private buffers, a start and an end flag crossing per
 * call (as the library's rendezvous), each rank doing only its minimal part:
 *
 *   allreduce  read the other's half of the input, add it to mine (double),
 *              write the sums into the other's result: per rank m/2 read,
 *              m/2 added, m/2 written;
 *   reduce     the same with a 60/40 split, the 40% rank writing its sums
 *              into the root's result and keeping none;
 *   bcast      the root writes the first half into the other's buffer while
 *              the other reads the second half.
 *
 * A time below the library's is not possible with this mechanism; the ratio
 * of an MPI library's time to this floor bounds what shancoll can reach
 * against it (docs/performance.md).
 *
 *   cc -O3 -march=native -o /tmp/pair_floor benchmarks/c/pair_floor.c && /tmp/pair_floor
 *
 * (-O3 -march=native: the add vectorised for this CPU, as shancoll's
 * kernels are; at -O2 it stays scalar and the 256 KiB allreduce took 22 us against 16-18.)
 *
 * Output: per collective and size, the median over 15 blocks of the mean
 * microseconds per call, and the range of the blocks.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kBlocks = 15 };

struct line {
  _Alignas(64) atomic_long value;
};

struct shared {
  struct line count[2];
  double* input[2];
  double* result[2];
  pid_t pid[2];
};

static struct shared* sh;
static int me, peer;
static long calls;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One flag crossing each way: mine goes up, then wait for the other's. */
static void meet(void) {
  ++calls;
  atomic_store_explicit(&sh->count[me].value, calls, memory_order_release);
  while (atomic_load_explicit(&sh->count[peer].value, memory_order_acquire) < calls)
    __builtin_ia32_pause();
}

static void copy(int to_peer, void* local, void* remote, size_t bytes) {
  struct iovec l = {local, bytes}, r = {remote, bytes};
  const ssize_t done = to_peer ? process_vm_writev(sh->pid[peer], &l, 1, &r, 1, 0)
                               : process_vm_readv(sh->pid[peer], &l, 1, &r, 1, 0);
  if (done != (ssize_t)bytes) {
    perror("process_vm_readv/writev");
    exit(1);
  }
}

static void add(double* out, const double* a, const double* b, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

/* Elements [lo, hi) are mine to compute; keep: the other keeps a result. */
static void reduce_part(size_t lo, size_t hi, int other_keeps) {
  double* in = sh->input[me];
  double* out = sh->result[me];
  copy(0, out + lo, sh->input[peer] + lo, (hi - lo) * sizeof(double));
  add(out + lo, in + lo, out + lo, hi - lo);
  if (other_keeps) copy(1, out + lo, sh->result[peer] + lo, (hi - lo) * sizeof(double));
}

static void allreduce(size_t n) {
  meet();
  reduce_part(me == 0 ? 0 : n / 2, me == 0 ? n / 2 : n, 1);
  meet();
}

static void reduce(size_t n) { /* root: rank 0, 60% */
  const size_t split = n * 6 / 10;
  meet();
  reduce_part(me == 0 ? 0 : split, me == 0 ? split : n, me == 1);
  meet();
}

static void bcast(size_t n) { /* root: rank 0; buffer: input */
  const size_t half = n / 2 * sizeof(double), bytes = n * sizeof(double);
  char* mine = (char*)sh->input[me];
  char* theirs = (char*)sh->input[peer];
  meet();
  if (me == 0)
    copy(1, mine, theirs, half);
  else
    copy(0, mine + half, theirs + half, bytes - half);
  meet();
}

static void idle(size_t n) {
  (void)n;
  meet();
  meet();
}

static int compare(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static void measure(const char* name, void (*call)(size_t), size_t bytes) {
  const size_t n = bytes / sizeof(double);
  const int per_block = bytes >= (1u << 20) ? 200 : bytes >= (1u << 18) ? 1000 : 5000;
  double block[kBlocks];
  for (int i = 0; i < per_block; ++i) call(n); /* warm up */
  for (int b = 0; b < kBlocks; ++b) {
    const double t0 = now();
    for (int i = 0; i < per_block; ++i) call(n);
    block[b] = (now() - t0) / per_block * 1e6;
  }
  qsort(block, kBlocks, sizeof block[0], compare);
  if (me == 0)
    printf("%-9s %8zu B: %7.2f us (blocks %.2f-%.2f)\n", name, bytes, block[kBlocks / 2], block[0],
           block[kBlocks - 1]);
}

static int check(size_t n) { /* after an allreduce: every sum right */
  for (size_t i = 0; i < n; ++i)
    if (sh->result[me][i] != (double)i + (double)(2 * i)) return 0;
  return 1;
}

int main(void) {
  const size_t max = 1u << 20;
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return 1;
  me = fork() == 0 ? 1 : 0;
  peer = 1 - me;
  cpu_set_t cpu;
  CPU_ZERO(&cpu);
  CPU_SET(me, &cpu);
  sched_setaffinity(0, sizeof cpu, &cpu); /* best effort: one CPU is enough to run */
  double* input = aligned_alloc(4096, max);
  double* result = aligned_alloc(4096, max);
  if (!input || !result) return 1;
  for (size_t i = 0; i < max / sizeof(double); ++i)
    input[i] = (double)((me + 1) * i), result[i] = 0;
  sh->input[me] = input;
  sh->result[me] = result;
  sh->pid[me] = getpid();
  meet();

  allreduce(max / sizeof(double));
  const int ok = check(max / sizeof(double));
  if (!ok) fprintf(stderr, "rank %d: allreduce result wrong\n", me);
  measure("flags", idle, 8);
  measure("allreduce", allreduce, 256u << 10);
  measure("allreduce", allreduce, 1u << 20);
  measure("reduce", reduce, 256u << 10);
  measure("reduce", reduce, 1u << 20);
  measure("bcast", bcast, 64u << 10);
  measure("bcast", bcast, 256u << 10);
  if (me == 0) wait(NULL);
  return ok ? 0 : 1;
}
