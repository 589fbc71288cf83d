/* cma_cost: what cross-memory attach (process_vm_readv, shancoll's single
 * copy, src/cpp/shancoll/shm/peer_memory.h) costs on this machine beyond a
 * memcpy. One process reads its own cache-hot memory through the system
 * call, so no other core takes part: the difference to memcpy is the call
 * itself and the kernel's per-page work (pinning each 4 KiB page).
 *
 *   cc -O2 -o /tmp/cma_cost benchmarks/c/cma_cost.c && /tmp/cma_cost
 *
 * Output: per size, microseconds per process_vm_readv and per memcpy.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void) {
  const size_t sizes[] = {8, 4096, 32768, 131072, 1048576};
  const size_t max = 1u << 21;
  char* src = aligned_alloc(4096, max);
  char* dst = aligned_alloc(4096, max);
  if (!src || !dst) return 1;
  memset(src, 1, max);
  memset(dst, 2, max);
  const pid_t self = getpid();
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
    const size_t n = sizes[k];
    const int calls = n < 100000 ? 20000 : 2000;
    struct iovec local = {dst, n}, remote = {src, n};
    const double t0 = now();
    for (int i = 0; i < calls; ++i)
      if (process_vm_readv(self, &local, 1, &remote, 1, 0) != (ssize_t)n) {
        perror("process_vm_readv");
        return 1;
      }
    const double t1 = now();
    for (int i = 0; i < calls; ++i) memcpy(dst, src, n);
    const double t2 = now();
    printf("%8zu B: process_vm_readv %.2f us, memcpy %.2f us\n", n, (t1 - t0) / calls * 1e6,
           (t2 - t1) / calls * 1e6);
  }
  free(src);
  free(dst);
  return 0;
}
