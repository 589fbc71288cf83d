/* truncated_recv: does the MPI library write past a receive buffer when the
 * message is larger than the receive posted for it? No shancoll: rank 0
 * sends `bytes` bytes to rank 1, which posts a receive of bytes / 2 followed
 * by a guard of 0xA5 bytes, with MPI_Recv and then MPI_Irecv + Wait, at eager
 * and rendezvous sizes. MPI's answer is MPI_ERR_TRUNCATE with the first
 * bytes / 2 bytes received; a changed guard byte is an overwrite.
 *
 *   mpicc -O2 -o /tmp/truncated_recv benchmarks/c/truncated_recv.c
 *   mpiexec -n 2 /tmp/truncated_recv
 *   # on two real nodes: shancoll.bench.hosts.launch_args(lib, 2, 2) before -n
 *
 * Found with it: Open MPI 5.0.11 writes every byte of a message above its
 * eager limit into the smaller receive (docs/performance.md, "Open MPI
 * writes past a truncated receive").
 *
 * Output: one line per size and receive call (rank 1): the error class, the
 * count the status reports, and how many guard bytes changed. Exit 1 if any
 * guard byte changed.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rank 1's side of one message: returns the number of guard bytes changed.
 * The guard is as long as the whole message, so that even a library that
 * writes all of it stays inside this allocation (and the count is exact). */
static size_t receive(size_t posted, size_t guard, int nonblocking, int* err_class, int* got) {
  unsigned char* buf = malloc(posted + guard);
  memset(buf, 0, posted);
  memset(buf + posted, 0xA5, guard);
  MPI_Status st;
  int rc;
  if (nonblocking) {
    MPI_Request req;
    MPI_Irecv(buf, (int)posted, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &req);
    rc = MPI_Wait(&req, &st);
  } else {
    rc = MPI_Recv(buf, (int)posted, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &st);
  }
  /* MPI_Wait reports a request's error as MPI_ERR_IN_STATUS only for the
   * multiple-completion calls; here rc carries it. */
  MPI_Error_class(rc, err_class);
  MPI_Get_count(&st, MPI_BYTE, got);
  size_t changed = 0;
  for (size_t i = 0; i < guard; ++i) changed += buf[posted + i] != 0xA5;
  free(buf);
  return changed;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "truncated_recv: needs 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const size_t sizes[] = {1024, 8192, 32768, 65536, 131072, 1 << 20, 4 << 20};
  int overwritten = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
    for (int nonblocking = 0; nonblocking < 2; ++nonblocking) {
      const size_t bytes = sizes[s];
      if (rank == 0) {
        unsigned char* msg = malloc(bytes);
        memset(msg, 0x5A, bytes);
        MPI_Send(msg, (int)bytes, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
        free(msg);
      } else {
        int err_class = 0, got = 0;
        size_t changed = receive(bytes / 2, bytes, nonblocking, &err_class, &got);
        char name[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(err_class, name, &len);
        printf(
            "%8zu B sent, %8zu B posted, %-9s: error class %2d (%s), count %d, "
            "%zu guard bytes changed\n",
            bytes, bytes / 2, nonblocking ? "MPI_Irecv" : "MPI_Recv", err_class, name, got,
            changed);
        fflush(stdout);
        overwritten |= changed != 0;
      }
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
  int any = 0;
  MPI_Allreduce(&overwritten, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
