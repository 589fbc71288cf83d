/* The C API on Fortran handles: MPI_Comm_f2c, MPI_Type_f2c and MPI_Op_f2c
 * turn Fortran INTEGER handles into C handles. This is the portable route from
 * Fortran: it works with every MPI library, including those whose C handles
 * are pointers (Open MPI), where binding shancoll_allreduce directly cannot.
 * The f2c functions are C-only (macros in MPICH), hence a C file. */
#include <mpi.h>
#include <shancoll.h>

int shancoll_allreduce_f(const void* sendbuf, void* recvbuf, int count, MPI_Fint datatype,
                         MPI_Fint op, MPI_Fint comm, const char* algorithm, const char* options) {
  return shancoll_allreduce(sendbuf, recvbuf, count, MPI_Type_f2c(datatype), MPI_Op_f2c(op),
                            MPI_Comm_f2c(comm), algorithm, options);
}
