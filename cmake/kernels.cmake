# The reduction kernels per instruction set (src/cpp/shancoll/kernels/kernels.h):
# each set's file gets its flags where the compiler takes them; the code
# checks the flags it was built with, and the CPU at run time.
include(CheckCXXCompilerFlag)

function(shancoll_kernel_flags source_root)
  set(dir ${source_root}/src/cpp/shancoll/kernels)
  check_cxx_compiler_flag(-mavx2 SHANCOLL_CXX_AVX2)
  check_cxx_compiler_flag(-mavx512bw SHANCOLL_CXX_AVX512)
  if(SHANCOLL_CXX_AVX2)
    set_source_files_properties(${dir}/kernels_avx2.cc PROPERTIES COMPILE_OPTIONS -mavx2)
  endif()
  if(SHANCOLL_CXX_AVX512)
    set_source_files_properties(
      ${dir}/kernels_avx512.cc
      PROPERTIES COMPILE_OPTIONS
                 "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mprefer-vector-width=512")
  endif()
endfunction()
