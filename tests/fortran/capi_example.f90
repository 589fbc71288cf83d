! Calling shancoll's C API from Fortran, and checking it against the MPI library.
!
! Two routes from Fortran to the C functions, which take C handles (MPI_Comm,
! MPI_Datatype, MPI_Op):
!  - ISO_C_BINDING straight to shancoll_*: with MPICH and its derivatives
!    (Intel MPI, MVAPICH) a C handle is an int equal to the Fortran INTEGER
!    handle, so the handles pass by value as integer(c_int) (with mpi_f08:
!    comm%MPI_VAL). Used below for allreduce, bcast and iallreduce/test/wait.
!  - the MPI Fortran-to-C handle conversion in a small C shim
!    (f2c_shim.c: MPI_Comm_f2c, MPI_Type_f2c, MPI_Op_f2c), needed where C
!    handles are pointers (Open MPI). Used below on a communicator made by
!    MPI_Comm_split.
!
! Strings are C strings: terminate them with c_null_char. MPI_IN_PLACE from
! the mpi module is not C's MPI_IN_PLACE: pass distinct buffers.
!
! Rank 0 prints "fortran_example: N checks, M failed on K ranks"; the program
! exits non-zero when a check failed (tests/test_pmpi.py runs it).
program capi_example
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

    integer(c_int) function shancoll_bcast(buffer, count, datatype, root, comm, algorithm, &
                                           options) bind(C, name="shancoll_bcast")
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: buffer
      integer(c_int), value :: count, datatype, root, comm
      character(kind=c_char), dimension(*) :: algorithm, options
    end function shancoll_bcast

    ! The request is a C pointer (shancoll_request), passed by reference.
    integer(c_int) function shancoll_iallreduce(sendbuf, recvbuf, count, datatype, op, comm, &
                                                algorithm, options, request) &
                                                bind(C, name="shancoll_iallreduce")
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: sendbuf, recvbuf
      integer(c_int), value :: count, datatype, op, comm
      character(kind=c_char), dimension(*) :: algorithm, options
      type(c_ptr) :: request
    end function shancoll_iallreduce

    integer(c_int) function shancoll_test(request, flag) bind(C, name="shancoll_test")
      import :: c_int, c_ptr
      type(c_ptr) :: request
      integer(c_int) :: flag
    end function shancoll_test

    integer(c_int) function shancoll_wait(request) bind(C, name="shancoll_wait")
      import :: c_int, c_ptr
      type(c_ptr) :: request
    end function shancoll_wait

    type(c_ptr) function shancoll_last_error() bind(C, name="shancoll_last_error")
      import :: c_ptr
    end function shancoll_last_error

    ! f2c_shim.c: shancoll_allreduce on Fortran handles (MPI_Fint is a default INTEGER).
    integer(c_int) function shancoll_allreduce_f(sendbuf, recvbuf, count, datatype, op, comm, &
                                                 algorithm, options) &
                                                 bind(C, name="shancoll_allreduce_f")
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: sendbuf, recvbuf
      integer(c_int), value :: count, datatype, op, comm
      character(kind=c_char), dimension(*) :: algorithm, options
    end function shancoll_allreduce_f

    integer(c_size_t) function strlen(s) bind(C, name="strlen")
      import :: c_size_t, c_ptr
      type(c_ptr), value :: s
    end function strlen
  end interface

  integer, parameter :: n = 1000
  character(kind=c_char, len=*), parameter :: opts = "timeout=60" // c_null_char
  real(c_double), target :: x(n), total(n), expected(n)
  integer(c_int), target :: ix(n), itotal(n), iexpected(n)
  type(c_ptr) :: request
  integer(c_int) :: rc, flag
  integer :: ierr, rank, nranks, i, checks, failed, all_failed, sub

  checks = 0
  failed = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  ! Integer-valued data: sums are exact in any order, so results compare with ==.
  x = [(real(i + rank, c_double), i = 1, n)]
  ix = [(mod(i * (rank + 3), 97), i = 1, n)]

  ! allreduce, handles passed straight through (MPICH: Fortran handle == C handle)
  rc = shancoll_allreduce(c_loc(x), c_loc(total), n, MPI_DOUBLE_PRECISION, MPI_SUM, &
                          MPI_COMM_WORLD, "auto" // c_null_char, opts)
  call MPI_Allreduce(x, expected, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check("allreduce MPI_DOUBLE_PRECISION MPI_SUM", rc, all(total == expected))

  rc = shancoll_allreduce(c_loc(ix), c_loc(itotal), n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, &
                          "nway_dissemination" // c_null_char, "ports=2,timeout=60" // c_null_char)
  call MPI_Allreduce(ix, iexpected, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check("allreduce MPI_INTEGER MPI_MAX nway_dissemination", rc, all(itotal == iexpected))

  ! bcast from the last rank
  itotal = ix
  iexpected = ix
  rc = shancoll_bcast(c_loc(itotal), n, MPI_INTEGER, nranks - 1, MPI_COMM_WORLD, &
                      "auto" // c_null_char, opts)
  call MPI_Bcast(iexpected, n, MPI_INTEGER, nranks - 1, MPI_COMM_WORLD, ierr)
  call check("bcast MPI_INTEGER", rc, all(itotal == iexpected))

  ! iallreduce: progress only inside shancoll_test / shancoll_wait
  call MPI_Allreduce(x, expected, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  total = 0
  rc = shancoll_iallreduce(c_loc(x), c_loc(total), n, MPI_DOUBLE_PRECISION, MPI_SUM, &
                           MPI_COMM_WORLD, "auto" // c_null_char, opts, request)
  flag = 0
  do while (rc == MPI_SUCCESS .and. flag == 0)
    rc = shancoll_test(request, flag)  ! a real program computes between the tests
  end do
  call check("iallreduce + shancoll_test", rc, all(total == expected) .and. &
             .not. c_associated(request))

  call MPI_Allreduce(ix, iexpected, n, MPI_INTEGER, MPI_BOR, MPI_COMM_WORLD, ierr)
  rc = shancoll_iallreduce(c_loc(ix), c_loc(itotal), n, MPI_INTEGER, MPI_BOR, MPI_COMM_WORLD, &
                           "auto" // c_null_char, opts, request)
  if (rc == MPI_SUCCESS) rc = shancoll_wait(request)
  call check("iallreduce + shancoll_wait", rc, all(itotal == iexpected) .and. &
             .not. c_associated(request))

  ! a communicator made in Fortran, through the handle conversion of the C shim
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, sub, ierr)
  rc = shancoll_allreduce_f(c_loc(x), c_loc(total), n, MPI_DOUBLE_PRECISION, MPI_MAX, sub, &
                            "auto" // c_null_char, opts)
  call MPI_Allreduce(x, expected, n, MPI_DOUBLE_PRECISION, MPI_MAX, sub, ierr)
  call check("allreduce through MPI_Comm_f2c on a split communicator", rc, &
             all(total == expected))
  call MPI_Comm_free(sub, ierr)

  call MPI_Allreduce(failed, all_failed, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0, a, i0, a, i0, a)', 'fortran_example: ', checks, ' checks, ', &
    all_failed, ' failed on ', nranks, ' ranks'
  call MPI_Finalize(ierr)
  if (all_failed /= 0) stop 1

contains

  subroutine check(what, rc, ok)
    character(*), intent(in) :: what
    integer(c_int), intent(in) :: rc
    logical, intent(in) :: ok
    checks = checks + 1
    if (rc /= MPI_SUCCESS .or. .not. ok) then
      failed = failed + 1
      print '(3a, i0, a, i0, 2a)', 'fortran_example: FAILED ', what, ' on rank ', rank, &
        ', rc ', rc, ': ', last_error()
    end if
  end subroutine check

  ! shancoll_last_error() as a Fortran string
  function last_error() result(message)
    character(:), allocatable :: message
    character(kind=c_char), pointer :: chars(:)
    type(c_ptr) :: p
    integer :: k
    p = shancoll_last_error()
    call c_f_pointer(p, chars, [strlen(p)])
    allocate(character(size(chars)) :: message)
    do k = 1, size(chars)
      message(k:k) = chars(k)
    end do
  end function last_error

end program capi_example
