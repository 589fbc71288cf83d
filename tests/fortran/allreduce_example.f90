! Calling shancoll's C API from Fortran through ISO_C_BINDING.
!
! The C functions take C handles (MPI_Comm, MPI_Datatype, MPI_Op). With
! MPICH and its derivatives (Intel MPI, MVAPICH, the venv's MPICH) a C handle
! is an int equal to the Fortran INTEGER handle (MPI_Comm_f2c is a cast), so
! the Fortran handles pass by value as integer(c_int); with mpi_f08 pass
! comm%MPI_VAL. Other MPI libraries (Open MPI: C handles are pointers) need a
! C shim that calls MPI_Comm_f2c, MPI_Type_f2c and MPI_Op_f2c.
!
! Strings are C strings: terminate them with c_null_char; c_null_ptr for
! NULL (the algorithm from SHANCOLL_ALLREDUCE_ALGORITHM, else auto).
!
! Built by CMake only when a Fortran compiler and MPI's Fortran bindings are
! found; tests/test_pmpi.py runs it then, and says why it is skipped otherwise.
program allreduce_example
  use, intrinsic :: iso_c_binding
  use mpi
  implicit none

  interface
    integer(c_int) function shancoll_allreduce(sendbuf, recvbuf, count, datatype, op, comm, &
                                               algorithm, options) bind(C, name="shancoll_allreduce")
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: sendbuf, recvbuf
      integer(c_int), value :: count, datatype, op, comm
      character(kind=c_char), dimension(*) :: algorithm, options
    end function shancoll_allreduce
  end interface

  integer, parameter :: n = 1000
  real(c_double), target :: x(n), total(n), expected(n)
  integer :: ierr, rank, nranks, rc, i

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  x = [(real(i + rank, c_double), i = 1, n)]
  rc = shancoll_allreduce(c_loc(x), c_loc(total), int(n, c_int), int(MPI_DOUBLE_PRECISION, c_int), &
                          int(MPI_SUM, c_int), int(MPI_COMM_WORLD, c_int), &
                          "auto" // c_null_char, "timeout=60" // c_null_char)
  call MPI_Allreduce(x, expected, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rc /= MPI_SUCCESS .or. any(total /= expected)) then
    print '(a, i0, a, i0)', 'fortran_example: FAILED on rank ', rank, ', rc ', rc
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  if (rank == 0) print '(a, i0, a)', 'fortran_example: ok on ', nranks, ' ranks'
  call MPI_Finalize(ierr)
end program allreduce_example
