// Two processes on cpu 0 and 1, full-duplex streams of 1 MiB through a 256 KiB ring
// of 64 KiB chunks per direction (like shan's pair channels), side by side: the ring
// in tmpfs (shm_open) or in anonymous shared memory (./lab), or, both in tmpfs,
// written by memcpy or by non-temporal stores (./lab nt); plus a flag round trip.
// gcc -O2 -mavx2 -o lab lab.c
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <immintrin.h>
#define RING (256 << 10)
#define CHUNK (64 << 10)
#define SLOTS (RING / CHUNK)
#define BYTES (1 << 20)
typedef struct { _Alignas(64) _Atomic uint64_t ready; _Alignas(64) _Atomic uint64_t ack; } Flags;
typedef struct { Flags f[2]; _Alignas(4096) char ring[2][RING]; } Seg;  // ring[w]: writer w's
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static Seg* map_seg(const char* kind) {
  void* p;
  if (!strcmp(kind, "tmpfs")) {
    char name[64]; snprintf(name, sizeof name, "/lab-%d", getpid());
    int fd = shm_open(name, O_CREAT | O_RDWR, 0600); shm_unlink(name);
    posix_fallocate(fd, 0, sizeof(Seg));
    p = mmap(NULL, sizeof(Seg), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  } else p = mmap(NULL, sizeof(Seg), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  memset(p, 0, sizeof(Seg));
  return p;
}
static int nt;  // the writer's copy into the ring by non-temporal stores
static void nt_copy(char* d, const char* s, size_t n) {
  for (size_t i = 0; i < n; i += 32) _mm256_stream_si256((__m256i*)(d + i), _mm256_loadu_si256((const __m256i*)(s + i)));
  _mm_sfence();
}
static uint64_t seq[2][2];
static double wt, rt_;  // time in the writer's copies, the reader's copies
static double tns(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec*1e9+t.tv_nsec;}  // [seg][0]=written chunks, [1]=read chunks (per process)
static void transfer(Seg* s, int me, int si, char* src, char* dst) {
  Flags* out = &s->f[me]; Flags* in = &s->f[1 - me];
  int n = BYTES / CHUNK;
  for (int i = 0; i <= n; i++) {
    if (i < n) {  // write chunk i
      uint64_t g = seq[si][0]++;
      while (g >= atomic_load_explicit(&out->ack, memory_order_acquire) + SLOTS) sched_yield();
      double a = tns();
      if (nt) nt_copy(s->ring[me] + (g % SLOTS) * CHUNK, src + (size_t)i * CHUNK, CHUNK);
      else memcpy(s->ring[me] + (g % SLOTS) * CHUNK, src + (size_t)i * CHUNK, CHUNK);
      wt += tns() - a;
      atomic_store_explicit(&out->ready, g + 1, memory_order_release);
    }
    if (i > 0) {  // read chunk i - 1
      uint64_t g = seq[si][1]++;
      while (atomic_load_explicit(&in->ready, memory_order_acquire) <= g) ;
      double a = tns();
      memcpy(dst + (size_t)(i - 1) * CHUNK, s->ring[1 - me] + (g % SLOTS) * CHUNK, CHUNK);
      rt_ += tns() - a;
      atomic_store_explicit(&in->ack, g + 1, memory_order_release);
    }
  }
}
static _Atomic uint64_t* pp;
int main(int argc, char** argv) {
  const int nt_mode = argc > 1 && !strcmp(argv[1], "nt");
  Seg* segs[2] = {map_seg("tmpfs"), map_seg(nt_mode ? "tmpfs" : "anon")};
  pp = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  int me = fork() == 0;
  cpu_set_t c; CPU_ZERO(&c); CPU_SET(me, &c); sched_setaffinity(0, sizeof c, &c);
  char* src = aligned_alloc(4096, BYTES); char* dst = aligned_alloc(4096, BYTES);
  memset(src, me + 1, BYTES); memset(dst, 0, BYTES);
  double t[2][5], w[2][5], r[2][5];
  for (int rep = 0; rep < 5; rep++)
    for (int si = 0; si < 2; si++) {
      // sync: ping-pong 1000 round trips, also the flag latency
      double t0 = now();
      for (int k = 0; k < 1000; k++) {
        uint64_t v = 2 * (uint64_t)(rep * 2 + si) * 1000 + 2 * k;
        if (me == 0) { atomic_store(pp, v + 1); while (atomic_load(pp) != v + 2) ; }
        else { while (atomic_load(pp) != v + 1) ; atomic_store(pp, v + 2); }
      }
      double rt = (now() - t0) / 1000;
      if (me == 0 && si == 0 && rep == 0) printf("flag rt %.3f us  ", rt * 1e6);
      t0 = now();
      nt = nt_mode && si; wt = rt_ = 0;
      for (int k = 0; k < 100; k++) transfer(segs[si], me, si, src, dst);
      t[si][rep] = (now() - t0) / 100; w[si][rep] = wt / 100 / 16; r[si][rep] = rt_ / 100 / 16;
    }
  if (me == 0) {
    for (int si = 0; si < 2; si++) {
      printf("%s:", nt_mode ? (si ? "nt-writer" : "memcpy") : (si ? "anon" : "tmpfs"));
      for (int k = 0; k < 5; k++) printf(" %.0f", t[si][k] * 1e6);
      printf(" [w/chunk ns"); for (int k = 0; k < 5; k++) printf(" %.0f", w[si][k]);
      printf(" r"); for (int k = 0; k < 5; k++) printf(" %.0f", r[si][k]); printf("]");
      printf("  ");
    }
    printf("\n");
    wait(NULL);
  }
  return 0;
}
