#include "shancoll/error.h"

namespace shancoll {

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw MpiError(std::string(what) + " failed: " + std::string(text, len));
}

}  // namespace shancoll
