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
 * The same for copies through a segment both processes map (shancoll's
 * shared-segment paths: shan_node_pipeline.cc, release_gather_node.cc), with
 * the message cut into chunks of C bytes through S slots per rank, a counter
 * flag per chunk, nothing reset between calls:
 *
 *   seg-bcast C S     the root copies chunk g into slot g mod S once the
 *                     reader's done flag says that slot's last chunk was
 *                     read, then its ready flag; the reader copies it out.
 *   seg-allreduce C S both cores at once on halves of each chunk
 *                     (reduce-scatter then allgather inside the segment): a
 *                     rank copies the other's half of its input chunk into
 *                     its slot; once the other's is in, adds its own half
 *                     (its input + the other's slot) into its result and its
 *                     slot; then copies the other's reduced half out.
 *   seg-allreduce-1 C S  one rank reduces all of a chunk, the ranks taking
 *                     chunks in turn (the other copies the chunk in, then
 *                     the sums out).
 *   ag-ring C S       allgather (each rank's block of m bytes into both
 *                     results) through C-byte chunks in S slots per rank;
 *                     ag-ring-behind reads one chunk behind, as
 *                     allgatherv_shan_chunk_ring.cc does. PAIR_FLOOR_COPY=vec
 *                     copies with 64-byte vector loads and stores instead of
 *                     memcpy (on the AMD EPYC VM 1.5-2x slower than glibc's
 *                     rep movsb at 16 KiB-2 MiB, one loaded run).
 *   seg-allreduce-skew C S  the halves of seg-allreduce, software-
 *                     pipelined: step s copies chunk s in, reduces chunk
 *                     s - 1 and copies chunk s - 2 out, so a wait is for
 *                     what the other core did a step earlier; a done flag
 *                     per chunk frees the slots. With PF_STAGED=1 set, the
 *                     other's half is first copied whole out of its slot
 *                     into a private buffer and then added locally (what
 *                     Intel MPI's shm allreduce does: one bulk copy, then a
 *                     sum of private memory; docs/performance.md).
 *   pieces P K        Intel MPI's shm allreduce (docs/performance.md): each
 *                     rank owns a half; it copies the other's half of its
 *                     input into its region A of the segment in pieces of P
 *                     bytes, a flag per piece; takes the other's region A out
 *                     in runs of K pieces (K = 0: the whole half in one copy)
 *                     into its result, adds its input there (private memory),
 *                     copies that half of the result into its region B in
 *                     pieces, and takes the other's half out of its region B
 *                     in runs. Variants by name: -seg: the add writes the sum
 *                     into region B as well (no copy of the result in);
 *                     -ovl: the copy out of the other's result runs one run
 *                     behind the adds instead of after them; -nt: every
 *                     write into the segment by streaming stores. With
 *                     PF_ROTATE=W set, each call's regions lie after the
 *                     previous call's, round W bytes (allreduce_pieces.cc's
 *                     ring_window) instead of at the regions' start.
 *   seg-rg C S        release_gather's allreduce on one node of 2 ranks
 *                     without single copy: a reduce to rank 0 (rank 1 copies
 *                     chunk g into its slot, rank 0 adds it to its input
 *                     into its result), then a bcast of rank 0's result
 *                     (rank 0 copies in, rank 1 copies out), each pipelined
 *                     through S slots of C bytes. seg-rg-nt: every write
 *                     into the segment by streaming stores.
 *   seg-allreduce-nt, seg-allreduce-skew-nt C S  the same with streaming
 *                     stores for every write into the segment (the copy in
 *                     and the sums); seg-allreduce-ntin: for the copy in only.
 *   seg-bcast-lined 0 S  the whole message (at most 16 KiB) as slot g mod S
 *                     of lines, each 56 bytes beside its own flag (a flag
 *                     area of its own): the reader copies a line as soon as
 *                     its flag says g, while the root still writes the next.
 *   flags 0 S         the crossing alone, at every size of the range.
 *   copy              one core's memcpy of m bytes, private to private (the
 *                     bandwidth every mechanism is made of); copy-nt: the
 *                     same by streaming (non-temporal) stores.
 *   seg-bcast-rep, -rep-out, -nt, -nt-in, -nt-out C S
 *                     seg-bcast with other copies: rep movsb both ways (what
 *                     Intel MPI's shm bcast runs, perf annotate) or on the
 *                     copy out; streaming (non-temporal) stores both ways, on
 *                     the copy in, or on the copy out.
 *   range LO HI       the seg modes that follow run sizes LO to HI (default
 *                     2 KiB to 4 MiB; at most 16 MiB).
 *
 * Every call starts with one flag crossing each way (the benchmark's barrier
 * between calls, "flags" alone); the CMA paths end with a second one (their
 * rendezvous). Sizes: every power of two from 2 KiB to 4 MiB (seg modes: "range").
 *
 *   cc -O3 -march=native -o /tmp/pair_floor benchmarks/c/pair_floor.c
 *   /tmp/pair_floor                     # cross-memory attach, as before
 *   /tmp/pair_floor seg-bcast 65536 4 seg-allreduce 32768 4 copy 0 0
 *
 * (-O3 -march=native: the add vectorised for this CPU, as shancoll's
 * kernels are; at -O2 it stays scalar and the 256 KiB allreduce took 22 us against 16-18.)
 *
 * Output: per collective and size, the median over 15 blocks of the mean
 * microseconds per call, and the range of the blocks.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kBlocks = 15, kMaxBytes = 16 << 20, kMaxChunk = 1 << 20, kMaxSlots = 16 };

struct line {
  _Alignas(64) atomic_long value;
};

struct shared {
  struct line count[2];
  double* input[2];
  double* result[2];
  pid_t pid[2];
};

/* The segment: per rank, its flags and kMaxSlots slots of up to kMaxChunk. */
enum { kLineData = 56, kMaxLines = (16 << 10) / kLineData + 1 };
struct data_line { /* seg-bcast-lined: a counter flag, then 56 bytes */
  _Alignas(64) atomic_long flag;
  char data[kLineData];
};

struct segment {
  struct line ready[2], reduced[2], done[2];
  struct line piece_a[2], piece_b[2], done_a[2], done_b[2]; /* the pieces modes' */
  struct line rg_in[2], rg_out[2];                          /* seg-rg's */
  struct data_line lined[kMaxSlots][kMaxLines]; /* only flags ever in their first 8 bytes */
  _Alignas(4096) char slot[2][kMaxSlots][kMaxChunk];
};

static struct shared* sh;
static struct segment* seg;
static size_t chunk_bytes = 64 << 10;
static long slots = 4;
static long chunks; /* chunks through the segment so far: the same on both ranks */
static int me, peer;
static long calls;
static size_t min_bytes = 2u << 10, max_bytes = 4u << 20; /* seg modes' sizes: "range LO HI" */

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

static void wait_reaches(atomic_long* flag, long value) {
  while (atomic_load_explicit(flag, memory_order_acquire) < value) __builtin_ia32_pause();
}

static void publish(atomic_long* flag, long value) { /* after the data: release */
  atomic_store_explicit(flag, value, memory_order_release);
}

/* The barrier between calls, one flag crossing each way. */
static void enter(void) {
  ++calls;
  publish(&sh->count[me].value, calls);
  wait_reaches(&sh->count[peer].value, calls);
}

static char* slot_of(int rank, long g) { return seg->slot[rank][g % slots]; }

/* ---- bcast copies: which instructions move a chunk in and out ----
 * glibc's memcpy; rep movsb (what Intel MPI's shm collectives call, seen in
 * perf annotate of a 4 MiB bcast); streaming stores (AVX-512 loads, movntdq
 * stores, one sfence at the end so the flag's release orders them too). */
typedef void* (*copy_fn)(void* restrict, const void* restrict, size_t);

static void* copy_rep(void* restrict dst, const void* restrict src, size_t n) {
  void* d = dst;
  __asm__ volatile("rep movsb" : "+D"(d), "+S"(src), "+c"(n) : : "memory");
  return dst;
}

#include <immintrin.h>
/* dst 64-byte aligned: the slots and buffers are. AVX-512 where the CPU has
 * it (Zen 5, Xeon), else AVX2 (Zen 3 has no AVX-512). */
static void* copy_stream(void* restrict dst, const void* restrict src, size_t n) {
  char* d = dst;
  const char* s = src;
  size_t i = 0;
#ifdef __AVX512F__
  for (; i + 256 <= n; i += 256) {
    const __m512i a = _mm512_loadu_si512(s + i), b = _mm512_loadu_si512(s + i + 64);
    const __m512i c = _mm512_loadu_si512(s + i + 128), e = _mm512_loadu_si512(s + i + 192);
    _mm512_stream_si512((void*)(d + i), a);
    _mm512_stream_si512((void*)(d + i + 64), b);
    _mm512_stream_si512((void*)(d + i + 128), c);
    _mm512_stream_si512((void*)(d + i + 192), e);
  }
#else
  for (; i + 128 <= n; i += 128) {
    const __m256i a = _mm256_loadu_si256((const __m256i*)(s + i));
    const __m256i b = _mm256_loadu_si256((const __m256i*)(s + i + 32));
    const __m256i c = _mm256_loadu_si256((const __m256i*)(s + i + 64));
    const __m256i e = _mm256_loadu_si256((const __m256i*)(s + i + 96));
    _mm256_stream_si256((__m256i*)(d + i), a);
    _mm256_stream_si256((__m256i*)(d + i + 32), b);
    _mm256_stream_si256((__m256i*)(d + i + 64), c);
    _mm256_stream_si256((__m256i*)(d + i + 96), e);
  }
#endif
  memcpy(d + i, s + i, n - i);
  _mm_sfence();
  return dst;
}

static copy_fn copy_in = memcpy, copy_out = memcpy; /* seg-bcast's, by its variant */
/* -nt of the allreduce modes: streaming stores for every write into the segment. */
static int streamed, stream_in_only; /* -ntin: the copy in only */
static copy_fn seg_copy(void) { return streamed ? copy_stream : memcpy; }

/* bcast through the segment: root 0 from input[0], rank 1 into result[1]. */
static void seg_bcast(size_t n) {
  const size_t bytes = n * sizeof(double);
  enter();
  for (size_t off = 0; off < bytes; off += chunk_bytes) {
    const long g = ++chunks;
    const size_t c = bytes - off < chunk_bytes ? bytes - off : chunk_bytes;
    if (me == 0) {
      wait_reaches(&seg->done[1].value, g - slots); /* the slot's last chunk was read */
      copy_in(slot_of(0, g), (char*)sh->input[0] + off, c);
      publish(&seg->ready[0].value, g);
    } else {
      wait_reaches(&seg->ready[0].value, g);
      copy_out((char*)sh->result[1] + off, slot_of(0, g), c);
      publish(&seg->done[1].value, g);
    }
  }
}

/* bcast in lines: the whole message (at most 16 KiB) as slot g mod S of
 * lines, each 56 bytes beside its own flag; the reader copies every line as
 * soon as its flag says g, so it starts while the root still writes. */
static void seg_bcast_lined(size_t n) {
  const size_t bytes = n * sizeof(double);
  enter();
  const long g = ++chunks;
  struct data_line* lines = seg->lined[g % slots];
  if (me == 0) {
    wait_reaches(&seg->done[1].value, g - slots);
    for (size_t off = 0, i = 0; off < bytes; off += kLineData, ++i) {
      const size_t c = bytes - off < kLineData ? bytes - off : kLineData;
      memcpy(lines[i].data, (char*)sh->input[0] + off, c);
      publish(&lines[i].flag, g);
    }
  } else {
    for (size_t off = 0, i = 0; off < bytes; off += kLineData, ++i) {
      const size_t c = bytes - off < kLineData ? bytes - off : kLineData;
      wait_reaches(&lines[i].flag, g);
      memcpy((char*)sh->result[1] + off, lines[i].data, c);
    }
    publish(&seg->done[1].value, g);
  }
}

/* out[i] = a[i] + b[i], written to two places (the result and the slot);
 * with -nt, the slot by streaming stores (32-byte aligned, n % 4 == 0). */
static void add2(double* restrict out, double* restrict copy, const double* restrict a,
                 const double* restrict b, size_t n) {
  if (streamed && !stream_in_only) {
    for (size_t i = 0; i < n; i += 4) {
      const __m256d v = _mm256_add_pd(_mm256_loadu_pd(a + i), _mm256_loadu_pd(b + i));
      _mm256_storeu_pd(out + i, v);
      _mm256_stream_pd(copy + i, v);
    }
    _mm_sfence();
    return;
  }
  for (size_t i = 0; i < n; ++i) out[i] = copy[i] = a[i] + b[i];
}

/* Both ranks at once on halves of each chunk. A slot is free again two
 * chunks later (the other rank's ready for chunk g - 1 says it finished
 * chunk g - 2, its reads of my slot included): S >= 2. */
static void seg_allreduce(size_t n) {
  const size_t per_chunk = chunk_bytes / sizeof(double);
  enter();
  for (size_t first = 0; first < n; first += per_chunk) {
    const long g = ++chunks;
    const size_t e = n - first < per_chunk ? n - first : per_chunk, half = e / 2;
    const size_t a = me == 0 ? 0 : half, b = me == 0 ? half : e;   /* mine */
    const size_t oa = me == 0 ? half : 0, ob = me == 0 ? e : half; /* the other's */
    const double* in = sh->input[me] + first;
    double* out = sh->result[me] + first;
    double* mine = (double*)slot_of(me, g);
    const double* theirs = (const double*)slot_of(peer, g);
    seg_copy()(mine + oa, in + oa, (ob - oa) * sizeof(double));
    publish(&seg->ready[me].value, g);
    wait_reaches(&seg->ready[peer].value, g);
    add2(out + a, mine + a, in + a, theirs + a, b - a);
    publish(&seg->reduced[me].value, g);
    wait_reaches(&seg->reduced[peer].value, g);
    memcpy(out + oa, theirs + oa, (ob - oa) * sizeof(double));
  }
}

/* The halves of seg_allreduce, software-pipelined: step s copies chunk s
 * in, reduces chunk s - 1 and copies chunk s - 2 out, so each wait is for
 * what the other core did a step earlier, not for what it is doing now.
 * A slot is written again once the other's done flag says it copied out
 * the slot's last chunk (its last read of my slot). */
static int staged;
static double staging[kMaxChunk / sizeof(double)];

static void skew_in(size_t first, size_t e, long g) {
  const size_t half = e / 2, oa = me == 0 ? half : 0, ob = me == 0 ? e : half;
  wait_reaches(&seg->done[peer].value, g - slots);
  seg_copy()((double*)slot_of(me, g) + oa, sh->input[me] + first + oa, (ob - oa) * sizeof(double));
  publish(&seg->ready[me].value, g);
}

static void skew_reduce(size_t first, size_t e, long g) {
  const size_t half = e / 2, a = me == 0 ? 0 : half, b = me == 0 ? half : e;
  wait_reaches(&seg->ready[peer].value, g);
  const double* theirs = (const double*)slot_of(peer, g) + a;
  if (staged) { /* the other core's lines in one bulk copy, then a local add */
    memcpy(staging, theirs, (b - a) * sizeof(double));
    theirs = staging;
  }
  add2(sh->result[me] + first + a, (double*)slot_of(me, g) + a, sh->input[me] + first + a, theirs,
       b - a);
  publish(&seg->reduced[me].value, g);
}

static void skew_out(size_t first, size_t e, long g) {
  const size_t half = e / 2, oa = me == 0 ? half : 0, ob = me == 0 ? e : half;
  wait_reaches(&seg->reduced[peer].value, g);
  memcpy(sh->result[me] + first + oa, (const double*)slot_of(peer, g) + oa,
         (ob - oa) * sizeof(double));
  publish(&seg->done[me].value, g);
}

static void seg_allreduce_skew(size_t n) {
  const size_t per_chunk = chunk_bytes / sizeof(double);
  const long k = (long)((n + per_chunk - 1) / per_chunk), base = chunks;
  enter();
  for (long s = 0; s < k + 2; ++s) {
    for (long i = s; i >= s - 2; --i) {
      if (i < 0 || i >= k) continue;
      const size_t first = (size_t)i * per_chunk;
      const size_t e = n - first < per_chunk ? n - first : per_chunk;
      if (i == s) skew_in(first, e, base + i + 1);
      if (i == s - 1) skew_reduce(first, e, base + i + 1);
      if (i == s - 2) skew_out(first, e, base + i + 1);
    }
  }
  chunks += k;
}

/* One reducer per chunk, the ranks in turn: chunk g is rank g mod 2's. */
static void seg_allreduce_1(size_t n) {
  const size_t per_chunk = chunk_bytes / sizeof(double);
  enter();
  for (size_t first = 0; first < n; first += per_chunk) {
    const long g = ++chunks;
    const size_t e = n - first < per_chunk ? n - first : per_chunk;
    const int reducer = (int)(g % 2);
    const double* in = sh->input[me] + first;
    double* out = sh->result[me] + first;
    if (me != reducer) {
      memcpy(slot_of(me, g), in, e * sizeof(double));
      publish(&seg->ready[me].value, g);
      wait_reaches(&seg->reduced[peer].value, g);
      memcpy(out, slot_of(peer, g), e * sizeof(double));
      publish(&seg->done[me].value, g);
    } else {
      wait_reaches(&seg->done[peer].value, g - slots); /* my slot's last chunk was read */
      wait_reaches(&seg->ready[peer].value, g);
      add2(out, (double*)slot_of(me, g), in, (const double*)slot_of(peer, g), e);
      publish(&seg->reduced[me].value, g);
      publish(&seg->done[me].value, g);
    }
  }
}

/* ---- Intel MPI's scheme: pieces in, long runs out, the add in private memory ----
 * Region A of my segment (the first half of my slots) carries the other's
 * half of my input, region B my half of the result. Counters only grow: the
 * pieces each rank published into A and B ever (the same sequence on both
 * ranks), and the calls whose A and B the rank has read out. */
static long pieces_a, pieces_b, piece_calls;
static long run_pieces;          /* K: pieces per run, 0 = the whole half */
static int into_seg, overlapped; /* the -seg and -ovl variants */

static size_t rotate_window, rotate_at; /* PF_ROTATE=W: regions move round W bytes per call */
static char* region(int rank, int b) {
  return seg->slot[rank][0] + (b ? kMaxBytes / 2 : 0) + rotate_at;
}

/* Copies bytes into my region at `at` in pieces, the counter up by one per piece. */
static void put_pieces(int b, size_t at, const char* src, size_t bytes, long* counter) {
  char* dst = region(me, b) + at;
  atomic_long* flag = b ? &seg->piece_b[me].value : &seg->piece_a[me].value;
  for (size_t off = 0; off < bytes; off += chunk_bytes) {
    const size_t c = bytes - off < chunk_bytes ? bytes - off : chunk_bytes;
    seg_copy()(dst + off, src + off, c);
    publish(flag, ++*counter);
  }
}

/* Run r (of run_bytes) of the other's region, once its last piece is in. */
static size_t run_ready(int b, long base, size_t off, size_t run_bytes, size_t bytes) {
  const size_t end = off + run_bytes < bytes ? off + run_bytes : bytes;
  const long last = base + (long)((end + chunk_bytes - 1) / chunk_bytes);
  wait_reaches(b ? &seg->piece_b[peer].value : &seg->piece_a[peer].value, last);
  return end - off;
}

/* sum[i] += in[i], written to sum and to copy. */
static void add_both(double* restrict sum, double* restrict copy, const double* restrict in,
                     size_t n) {
  for (size_t i = 0; i < n; ++i) sum[i] = copy[i] = sum[i] + in[i];
}

/* add_both with streaming stores to copy (32-byte aligned, n a multiple of 4). */
static void add_both_nt(double* restrict sum, double* restrict copy, const double* restrict in,
                        size_t n) {
  for (size_t i = 0; i < n; i += 4) {
    const __m256d v = _mm256_add_pd(_mm256_loadu_pd(sum + i), _mm256_loadu_pd(in + i));
    _mm256_storeu_pd(sum + i, v);
    _mm256_stream_pd(copy + i, v);
  }
  _mm_sfence();
}

/* n even (the sizes are powers of two): halves of n / 2 elements. */
static void seg_allreduce_pieces(size_t n) {
  const size_t h = n / 2, bytes = h * sizeof(double);
  const size_t mine = me == 0 ? 0 : h, theirs = me == 0 ? h : 0; /* first elements */
  const size_t run_bytes = run_pieces ? (size_t)run_pieces * chunk_bytes : bytes;
  double* out = sh->result[me];
  const double* in = sh->input[me];
  const long base_a = pieces_a, base_b = pieces_b, call = ++piece_calls;
  if (rotate_window) {
    rotate_at += (bytes + 4095) & ~(size_t)4095;
    if (rotate_at + bytes > rotate_window) rotate_at = 0;
  }
  enter();
  wait_reaches(&seg->done_a[peer].value, call - 1); /* it read my last A */
  put_pieces(0, 0, (const char*)(in + theirs), bytes, &pieces_a);
  wait_reaches(&seg->done_b[peer].value, call - 1);
  size_t behind = 0; /* -ovl: bytes of the other's result copied out so far */
  for (size_t off = 0; off < bytes; off += run_bytes) {
    const size_t c = run_ready(0, base_a, off, run_bytes, bytes);
    double* o = out + mine + off / sizeof(double);
    const double* i = in + mine + off / sizeof(double);
    memcpy(o, region(peer, 0) + off, c);
    if (into_seg) {
      (streamed ? add_both_nt : add_both)(o, (double*)(region(me, 1) + off), i, c / sizeof(double));
      pieces_b += (long)((c + chunk_bytes - 1) / chunk_bytes);
      publish(&seg->piece_b[me].value, pieces_b);
    } else {
      add(o, i, o, c / sizeof(double));
      put_pieces(1, off, (const char*)o, c, &pieces_b);
    }
    if (overlapped && off > 0) { /* the other's previous run */
      const size_t b = run_ready(1, base_b, behind, run_bytes, bytes);
      memcpy(out + theirs + behind / sizeof(double), region(peer, 1) + behind, b);
      behind += b;
    }
  }
  publish(&seg->done_a[me].value, call);
  for (; behind < bytes;) {
    const size_t b = run_ready(1, base_b, behind, run_bytes, bytes);
    memcpy(out + theirs + behind / sizeof(double), region(peer, 1) + behind, b);
    behind += b;
  }
  publish(&seg->done_b[me].value, call);
}

/* release_gather on one node of 2 ranks: reduce to rank 0, then bcast. */
static long rg_reduce_chunks, rg_bcast_chunks;

static void seg_rg(size_t n) {
  const size_t bytes = n * sizeof(double);
  char* out = (char*)sh->result[me];
  const char* in = (const char*)sh->input[me];
  enter();
  for (size_t off = 0; off < bytes; off += chunk_bytes) { /* reduce: rank 1's slots */
    const long g = ++rg_reduce_chunks;
    const size_t c = bytes - off < chunk_bytes ? bytes - off : chunk_bytes;
    if (me == 1) {
      wait_reaches(&seg->rg_in[0].value, g - slots);
      seg_copy()(slot_of(1, g), in + off, c);
      publish(&seg->rg_in[1].value, g);
    } else {
      wait_reaches(&seg->rg_in[1].value, g);
      add((double*)(out + off), (const double*)(in + off), (const double*)slot_of(1, g),
          c / sizeof(double));
      publish(&seg->rg_in[0].value, g);
    }
  }
  for (size_t off = 0; off < bytes; off += chunk_bytes) { /* bcast: rank 0's slots */
    const long g = ++rg_bcast_chunks;
    const size_t c = bytes - off < chunk_bytes ? bytes - off : chunk_bytes;
    if (me == 0) {
      wait_reaches(&seg->rg_out[1].value, g - slots);
      seg_copy()(slot_of(0, g), out + off, c);
      publish(&seg->rg_out[0].value, g);
    } else {
      wait_reaches(&seg->rg_out[0].value, g);
      memcpy(out + off, slot_of(0, g), c);
      publish(&seg->rg_out[1].value, g);
    }
  }
}

/* allgather through the slots, C-byte chunks and S slots per rank as the
 * other segment mechanisms (ag_ring below fixes them): per chunk g, mine
 * into slot g mod S once the other took chunk g - S, its flag, mine into
 * my result, then the other's chunk g (ag-ring) or g - 1 (ag-ring-behind:
 * shancoll's read-behind) out of its slot, acknowledged. Block m = the
 * size; the result (2m) in result[me]. PAIR_FLOOR_COPY=vec copies with
 * 64-byte vector loads and stores instead of memcpy (glibc's rep movsb
 * from 2 KiB on this CPU). */
static void (*chunk_copy)(void*, const void*,
                          size_t) = (void (*)(void*, const void*, size_t))memcpy;

static void vec_copy(void* dst, const void* src, size_t bytes) {
  typedef char v64 __attribute__((vector_size(64), aligned(1)));
  char* d = dst;
  const char* s = src;
  size_t i = 0;
  for (; i + 256 <= bytes; i += 256) {
    const v64 a = *(const v64*)(s + i), b = *(const v64*)(s + i + 64);
    const v64 c = *(const v64*)(s + i + 128), e = *(const v64*)(s + i + 192);
    *(v64*)(d + i) = a, *(v64*)(d + i + 64) = b, *(v64*)(d + i + 128) = c, *(v64*)(d + i + 192) = e;
  }
  memcpy(d + i, s + i, bytes - i);
}

static void ag_ring_chunks(size_t n, long behind) {
  const size_t m = n * sizeof(double);
  const char* send = (const char*)sh->input[me];
  char* result = (char*)sh->result[me];
  const long first = chunks + 1, count = (long)((m + chunk_bytes - 1) / chunk_bytes);
  enter();
  for (long k = 0; k < count + behind; ++k) {
    if (k < count) {
      const long g = first + k;
      const size_t at = (size_t)k * chunk_bytes, c = m - at < chunk_bytes ? m - at : chunk_bytes;
      wait_reaches(&seg->done[peer].value, g - slots);
      chunk_copy(slot_of(me, g), send + at, c);
      publish(&seg->ready[me].value, g);
      chunk_copy(result + (size_t)me * m + at, send + at, c);
    }
    const long j = k - behind;
    if (j < 0) continue;
    const long g = first + j;
    const size_t at = (size_t)j * chunk_bytes, c = m - at < chunk_bytes ? m - at : chunk_bytes;
    wait_reaches(&seg->ready[peer].value, g);
    chunk_copy(result + (size_t)peer * m + at, slot_of(peer, g), c);
    publish(&seg->done[me].value, g);
  }
  chunks += count;
}

static void ag_ring_now(size_t n) { ag_ring_chunks(n, 0); }
static void ag_ring_behind(size_t n) { ag_ring_chunks(n, 1); }

static int check_ag(size_t n) { /* both blocks: input[r][i] = (r + 1) i */
  for (size_t i = 0; i < n; ++i)
    if (sh->result[me][i] != (double)i || sh->result[me][n + i] != (double)(2 * i)) return 0;
  return 1;
}

static void copy_only(size_t n) { /* no crossing at all: one core's memcpy */
  memcpy(sh->result[me], sh->input[me], n * sizeof(double));
}

static void copy_only_nt(size_t n) { /* the same by streaming stores */
  copy_stream(sh->result[me], sh->input[me], n * sizeof(double));
}

static int compare(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static void measure(const char* name, void (*call)(size_t), size_t bytes) {
  const size_t n = bytes / sizeof(double);
  const int per_block = bytes >= (1u << 21)   ? 50
                        : bytes >= (1u << 20) ? 200
                        : bytes >= (1u << 18) ? 1000
                                              : 5000;
  double block[kBlocks];
  for (int i = 0; i < per_block; ++i) call(n); /* warm up */
  for (int b = 0; b < kBlocks; ++b) {
    const double t0 = now();
    for (int i = 0; i < per_block; ++i) call(n);
    block[b] = (now() - t0) / per_block * 1e6;
  }
  qsort(block, kBlocks, sizeof block[0], compare);
  if (me == 0)
    printf("%-15s %8zu B: %7.2f us (blocks %.2f-%.2f)\n", name, bytes, block[kBlocks / 2], block[0],
           block[kBlocks - 1]);
}

static int check(size_t n) { /* after an allreduce: every sum right */
  for (size_t i = 0; i < n; ++i)
    if (sh->result[me][i] != (double)i + (double)(2 * i)) return 0;
  return 1;
}

static void allgather_section(void);

static int check_bcast(size_t n) { /* rank 1 holds rank 0's input */
  for (size_t i = 0; me == 1 && i < n; ++i)
    if (sh->result[1][i] != (double)i) return 0;
  return 1;
}

static void cma_floor(void) {
  measure("flags", idle, 8);
  measure("allreduce", allreduce, 256u << 10);
  measure("allreduce", allreduce, 1u << 20);
  measure("reduce", reduce, 256u << 10);
  measure("reduce", reduce, 1u << 20);
  measure("bcast", bcast, 64u << 10);
  measure("bcast", bcast, 256u << 10);
}

/* One mechanism of the segment at every size, its result checked first. */
static int seg_floor(const char* name) {
  static const struct {
    const char* name;
    void (*call)(size_t);
    int (*ok)(size_t);
    copy_fn in, out; /* seg-bcast's copies */
  } kinds[] = {{"seg-bcast", seg_bcast, check_bcast, memcpy, memcpy},
               {"seg-bcast-rep", seg_bcast, check_bcast, copy_rep, copy_rep},
               {"seg-bcast-nt-out", seg_bcast, check_bcast, memcpy, copy_stream},
               {"seg-bcast-nt-in", seg_bcast, check_bcast, copy_stream, memcpy},
               {"seg-bcast-nt", seg_bcast, check_bcast, copy_stream, copy_stream},
               {"seg-bcast-rep-out", seg_bcast, check_bcast, memcpy, copy_rep},
               {"seg-bcast-lined", seg_bcast_lined, check_bcast},
               {"seg-allreduce", seg_allreduce, check},
               {"seg-allreduce-1", seg_allreduce_1, check},
               {"ag-ring", ag_ring_now, check_ag},
               {"ag-ring-behind", ag_ring_behind, check_ag},
               {"seg-allreduce-skew", seg_allreduce_skew, check},
               {"seg-allreduce-nt", seg_allreduce, check},
               {"seg-allreduce-ntin", seg_allreduce, check},
               {"seg-allreduce-skew-nt", seg_allreduce_skew, check},
               {"pieces", seg_allreduce_pieces, check},
               {"pieces-seg", seg_allreduce_pieces, check},
               {"pieces-ovl", seg_allreduce_pieces, check},
               {"pieces-seg-ovl", seg_allreduce_pieces, check},
               {"pieces-nt", seg_allreduce_pieces, check},
               {"pieces-seg-nt", seg_allreduce_pieces, check},
               {"pieces-ovl-nt", seg_allreduce_pieces, check},
               {"pieces-seg-ovl-nt", seg_allreduce_pieces, check},
               {"seg-rg", seg_rg, check},
               {"seg-rg-nt", seg_rg, check},
               {"flags", idle, NULL},
               {"copy", copy_only, NULL},
               {"copy-nt", copy_only_nt, NULL}};
  /* Every flag of mine says "done up to here": the last mechanism may not
   * have written them all, and the next one waits on them. */
  publish(&seg->ready[me].value, chunks);
  publish(&seg->reduced[me].value, chunks);
  publish(&seg->done[me].value, chunks);
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; ++k) {
    if (strcmp(name, kinds[k].name) != 0) continue;
    into_seg = strstr(name, "-seg") != NULL;
    overlapped = strstr(name, "-ovl") != NULL;
    streamed = strstr(name, "-nt") != NULL && strncmp(name, "seg-bcast", 9) != 0;
    stream_in_only = strstr(name, "-ntin") != NULL;
    copy_in = kinds[k].in ? kinds[k].in : memcpy;
    copy_out = kinds[k].out ? kinds[k].out : memcpy;
    char label[64];
    snprintf(label, sizeof label, "%s/%zuK/%ld", name, chunk_bytes >> 10,
             strncmp(name, "pieces", 6) == 0 ? run_pieces : slots);
    const int gather = strncmp(name, "ag-", 3) == 0; /* a result of two blocks */
    for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
      if (bytes << gather > kMaxBytes) break;
      if (kinds[k].call == seg_bcast_lined && bytes > (size_t)kLineData * kMaxLines) break;
      memset(sh->result[me], 0, bytes << gather);
      kinds[k].call(bytes / sizeof(double));
      if (kinds[k].ok && !kinds[k].ok(bytes / sizeof(double))) {
        fprintf(stderr, "rank %d: %s %zu B: result wrong\n", me, name, bytes);
        return 0;
      }
      measure(label, kinds[k].call, bytes);
    }
    return 1;
  }
  fprintf(stderr, "unknown mechanism %s\n", name);
  return 0;
}

int main(int argc, char** argv) {
  const size_t max = kMaxBytes;
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  seg = mmap(NULL, sizeof *seg, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED || seg == MAP_FAILED) return 1;
  me = fork() == 0 ? 1 : 0;
  /* A child left alone would spin on its flags forever at full speed (seen:
   * a pipe closed under the parent left it running for minutes). */
  if (me == 1 && prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return 1;
  if (me == 1 && getppid() == 1) return 1; /* the parent died before prctl */
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

  setvbuf(stdout, NULL, _IOLBF, 0);
  const char* copy_kind = getenv("PAIR_FLOOR_COPY");
  if (copy_kind && strcmp(copy_kind, "vec") == 0) chunk_copy = vec_copy;
  staged = getenv("PF_STAGED") != NULL;
  if (getenv("PF_ROTATE")) rotate_window = strtoul(getenv("PF_ROTATE"), NULL, 0);
  if (rotate_window > kMaxBytes / 2) return 1;
  int ok = 1;
  if (argc < 2) {
    allreduce(max / sizeof(double));
    ok = check(max / sizeof(double));
    if (!ok) fprintf(stderr, "rank %d: allreduce result wrong\n", me);
    cma_floor();
    allgather_section();
  }
  /* mechanism chunk slots, repeated */
  for (int a = 1; ok && a + 2 < argc; a += 3) {
    if (strcmp(argv[a], "range") == 0) {
      min_bytes = strtoul(argv[a + 1], NULL, 0);
      max_bytes = strtoul(argv[a + 2], NULL, 0);
      if (min_bytes < 8 || max_bytes > kMaxBytes) return 1;
      continue;
    }
    chunk_bytes = strtoul(argv[a + 1], NULL, 0);
    slots = strtol(argv[a + 2], NULL, 0);
    if (chunk_bytes == 0) chunk_bytes = kMaxChunk;
    if (strncmp(argv[a], "pieces", 6) == 0) { /* P K: pieces per run, no slots */
      run_pieces = slots;
      slots = 2;
    }
    if (chunk_bytes > kMaxChunk || chunk_bytes % 64 || slots < 2 || slots > kMaxSlots) {
      fprintf(stderr, "chunk: 64 B to %d KiB in lines; slots: 2 to %d\n", kMaxChunk >> 10,
              kMaxSlots);
      return 1;
    }
    ok = seg_floor(argv[a]);
  }
  if (me == 0) wait(NULL);
  return ok ? 0 : 1;
}

/* ---- allgather: each rank's block of m bytes into both ranks' results ----
 *
 *   ag_cma     cross-memory attach: read the other's block (m) into my
 *              result, copy mine (m) beside it; the two flag crossings.
 *   ag_ring    shared memory through a ring of kRingSlots slots of up to
 *              kRingChunk bytes per rank, chunks of m/4 within [16 KiB,
 *              kRingChunk] (allgatherv_shan_chunk_ring.cc, without its
 *              read-behind and streaming stores):
 *              my chunk into my slot, flag; my chunk into my result; the
 *              other's chunk out of its slot, acknowledged. Per rank m into
 *              the slots, m out, m copied locally; no other synchronisation
 *              (counters run across calls).
 *   ag_memcpy  the local copies alone, no other core: 2m per rank from
 *              private buffers (what ag_ring costs with the cross-core
 *              transfer free), a bound below every mechanism that moves the
 *              other's block through a copy of its own.
 */
enum { kRingSlots = 4, kRingChunk = 64 << 10, kAgMax = 16 << 20 };

struct ag_shared {
  struct line written[2]; /* chunks each rank put into its slots, ever */
  struct line taken[2];   /* chunks of each rank the other took out, ever */
  char* send[2];
  _Alignas(4096) char slots[2][kRingSlots][kRingChunk];
};

static struct ag_shared* ag;
static char *ag_send, *ag_result;

static void ag_cma(size_t n) {
  const size_t m = n * sizeof(double);
  meet();
  copy(0, ag_result + (size_t)peer * m, ag->send[peer], m);
  memcpy(ag_result + (size_t)me * m, ag_send, m);
  meet();
}

static void ag_ring(size_t n) {
  const size_t m = n * sizeof(double);
  size_t chunk = m / 4 < (16u << 10) ? 16u << 10 : m / 4;
  if (chunk > kRingChunk) chunk = kRingChunk;
  for (size_t at = 0; at < m; at += chunk) {
    const size_t bytes = m - at < chunk ? m - at : chunk;
    const long k = atomic_load_explicit(&ag->written[me].value, memory_order_relaxed);
    wait_reaches(&ag->taken[me].value, k - kRingSlots + 1); /* my slot k % S is free */
    memcpy(ag->slots[me][k % kRingSlots], ag_send + at, bytes);
    atomic_store_explicit(&ag->written[me].value, k + 1, memory_order_release);
    memcpy(ag_result + (size_t)me * m + at, ag_send + at, bytes);
    const long j = atomic_load_explicit(&ag->taken[peer].value, memory_order_relaxed);
    wait_reaches(&ag->written[peer].value, j + 1);
    memcpy(ag_result + (size_t)peer * m + at, ag->slots[peer][j % kRingSlots], bytes);
    atomic_store_explicit(&ag->taken[peer].value, j + 1, memory_order_release);
  }
}

static char* ag_other; /* a private m-byte buffer: ag_memcpy's stand-in for the other's slot */

static void ag_memcpy(size_t n) {
  const size_t m = n * sizeof(double);
  memcpy(ag_result + (size_t)me * m, ag_send, m);
  memcpy(ag_result + (size_t)peer * m, ag_other, m);
}

static int ag_check(size_t m) { /* after a call: both blocks right */
  for (size_t i = 0; i < m; i += 4093)
    if (ag_result[i] != (char)(i % 251) || ag_result[m + i] != (char)(1 + i % 251)) return 0;
  return 1;
}

static void allgather_section(void) {
  char name[64];
  snprintf(name, sizeof name, "/pair_floor_ag_%d", (int)sh->pid[0]);
  if (me == 0) {
    const int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, sizeof *ag) != 0) exit(1);
    close(fd);
  }
  meet();
  const int fd = shm_open(name, O_RDWR, 0600);
  ag = fd < 0 ? MAP_FAILED : mmap(NULL, sizeof *ag, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (ag == MAP_FAILED) exit(1);
  close(fd);
  meet();
  if (me == 0) shm_unlink(name);
  ag_send = aligned_alloc(4096, kAgMax);
  ag_result = aligned_alloc(4096, 2 * (size_t)kAgMax);
  ag_other = aligned_alloc(4096, kAgMax);
  if (!ag_send || !ag_result || !ag_other) exit(1);
  for (size_t i = 0; i < kAgMax; ++i) ag_send[i] = (char)(me + i % 251), ag_other[i] = 0;
  memset(ag_result, 0, 2 * (size_t)kAgMax);
  ag->send[me] = ag_send;
  meet();
  const size_t sizes[] = {32u << 10, 256u << 10, 2u << 20, 16u << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; ++i) {
    ag_ring(sizes[i] / sizeof(double));
    if (!ag_check(sizes[i])) fprintf(stderr, "rank %d: ag_ring result wrong\n", me);
    ag_cma(sizes[i] / sizeof(double));
    if (!ag_check(sizes[i])) fprintf(stderr, "rank %d: ag_cma result wrong\n", me);
    measure("ag_ring", ag_ring, sizes[i]);
    measure("ag_cma", ag_cma, sizes[i]);
    measure("ag_memcpy", ag_memcpy, sizes[i]);
  }
}
