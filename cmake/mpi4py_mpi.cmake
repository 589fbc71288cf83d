# Build against the MPI library that mpi4py loads (issue 21).
#
# shancoll's extension and mpi4py share one process, so they must use one MPI
# library; FindMPI alone takes the first compiler wrapper on PATH, which on a
# machine with a system MPI is often not the one mpi4py loads (PyPI's mpich
# wheel puts libmpi.so.12 in the venv, Debian's libmpich.so.12 is in /usr).
# src/shancoll/_mpi_library.py asks the mpi4py of the environment being
# installed into which library it loads and where its wrappers are.
#
# An explicit choice wins and nothing is probed: -DMPI_C_COMPILER,
# -DMPI_CXX_COMPILER or -DMPI_HOME (CMAKE_ARGS, -C cmake.define...), or the
# environment's MPICC / MPICXX / MPI_HOME. Outside a Python build (SKBUILD
# unset: the C API, the SMPI and the sanitizer builds) FindMPI decides alone.

# MPICC / MPICXX from the environment, as mpi4py's own build reads them.
macro(_shancoll_wrappers_from_environment)
  if(DEFINED ENV{MPICC} AND NOT MPI_C_COMPILER)
    set(MPI_C_COMPILER "$ENV{MPICC}" CACHE FILEPATH "MPI C compiler wrapper (from MPICC)")
  endif()
  if(DEFINED ENV{MPICXX} AND NOT MPI_CXX_COMPILER)
    set(MPI_CXX_COMPILER "$ENV{MPICXX}" CACHE FILEPATH "MPI C++ compiler wrapper (from MPICXX)")
  endif()
endmacro()

# Sets SHANCOLL_MPI4PY_LIBRARY (the real path of mpi4py's MPI library) when
# the wrappers were chosen from it, for shancoll_check_mpi4py_mpi.
function(shancoll_use_mpi4py_mpi)
  _shancoll_wrappers_from_environment()
  if(NOT DEFINED SKBUILD OR MPI_C_COMPILER OR MPI_CXX_COMPILER OR MPI_HOME
     OR DEFINED ENV{MPI_HOME})
    return()
  endif()
  find_package(Python REQUIRED COMPONENTS Interpreter)
  execute_process(
    COMMAND ${Python_EXECUTABLE} -I ${CMAKE_CURRENT_SOURCE_DIR}/src/shancoll/_mpi_library.py
    OUTPUT_VARIABLE found OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR found STREQUAL "{}" OR found STREQUAL "")
    message(WARNING "shancoll: no mpi4py that loads an MPI library was found in the "
                    "environment being installed into; building against the first MPI "
                    "that CMake finds. Install mpi4py first, or name the MPI: "
                    "MPICC=/path/to/mpicc pip install ...")
    return()
  endif()
  string(JSON library GET "${found}" library)
  string(JSON mpicc GET "${found}" mpicc)
  string(JSON mpicxx GET "${found}" mpicxx)
  string(JSON python GET "${found}" python)
  string(JSON wrapper_env GET "${found}" wrapper_env)
  if(NOT mpicxx OR NOT mpicc)
    message(FATAL_ERROR "shancoll: mpi4py (${python}) loads ${library}, but no mpicc/mpicxx "
                        "wrappers that link it were found (beside it or on PATH). "
                        "Name them: MPICC=/path/to/mpicc MPICXX=/path/to/mpicxx pip install ...")
  endif()
  # The wrappers are run at configure time only (FindMPI reads their flags).
  foreach(assignment IN LISTS wrapper_env)
    string(REGEX MATCH "^([^=]+)=(.*)$" _ "${assignment}")
    set(ENV{${CMAKE_MATCH_1}} "${CMAKE_MATCH_2}")
  endforeach()
  message(STATUS "shancoll: mpi4py (${python}) loads ${library}: building with ${mpicxx}")
  set(MPI_C_COMPILER "${mpicc}" CACHE FILEPATH "MPI C compiler wrapper (mpi4py's MPI)")
  set(MPI_CXX_COMPILER "${mpicxx}" CACHE FILEPATH "MPI C++ compiler wrapper (mpi4py's MPI)")
  set(SHANCOLL_MPI4PY_LIBRARY "${library}" PARENT_SCOPE)
endfunction()

# A library file as "directory/libname": the PyPI wheels' libmpi.so is a
# linker script or a copy of libmpi.so.12, not a symlink to it, so the real
# paths differ where the library is the same.
function(_shancoll_library_key path out)
  get_filename_component(real "${path}" REALPATH)
  get_filename_component(dir "${real}" DIRECTORY)
  get_filename_component(name "${real}" NAME)
  string(REGEX REPLACE "\\.so(\\..*)?$" "" name "${name}")
  set(${out} "${dir}/${name}" PARENT_SCOPE)
endfunction()

# After find_package(MPI): the wrappers must have given mpi4py's library itself
# (a wrapper beside it could still point elsewhere); else stop, naming both.
function(shancoll_check_mpi4py_mpi)
  if(NOT SHANCOLL_MPI4PY_LIBRARY)
    return()
  endif()
  _shancoll_library_key("${SHANCOLL_MPI4PY_LIBRARY}" wanted)
  foreach(lib IN LISTS MPI_CXX_LIBRARIES)
    _shancoll_library_key("${lib}" key)
    if(key STREQUAL wanted)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "shancoll: mpi4py loads ${SHANCOLL_MPI4PY_LIBRARY}, but ${MPI_CXX_COMPILER} "
                      "links ${MPI_CXX_LIBRARIES}. Name the wrappers of mpi4py's MPI: "
                      "MPICC=/path/to/mpicc MPICXX=/path/to/mpicxx pip install ...")
endfunction()
