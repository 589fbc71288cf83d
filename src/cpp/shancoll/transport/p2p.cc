#include "shancoll/transport/p2p.h"

#include <algorithm>
#include <climits>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "shancoll/error.h"
#include "shancoll/progress.h"

namespace shancoll {

namespace {

// The most bytes one MPI call takes.
#if MPI_VERSION >= 4
constexpr std::int64_t kMaxMessage = std::numeric_limits<std::int64_t>::max();
#else
constexpr std::int64_t kMaxMessage = INT_MAX;
#endif

// For the timeout message: the peers, and which side is still pending.
std::string describe_exchange(MPI_Request (&reqs)[2], int dest, int source) {
  std::string text;
  const char* sides[2] = {"receiving from rank ", "sending to rank "};
  const int peers[2] = {source, dest};
  for (int i = 0; i < 2; ++i) {
    if (reqs[i] == MPI_REQUEST_NULL) continue;
    int done = 0;
    MPI_Request_get_status(reqs[i], &done, MPI_STATUS_IGNORE);
    text +=
        "; " + std::string(sides[i]) + std::to_string(peers[i]) + (done ? ": done" : ": pending");
  }
  return text;
}

// Waits for the receive and the send of one exchange (either may be null).
void wait_exchange(MPI_Request (&reqs)[2], int dest, int source, const char* what, double timeout) {
  try {
    wait_until(
        [&] {
          int done = 0;
          check_mpi(MPI_Testall(2, reqs, &done, MPI_STATUSES_IGNORE), "MPI_Testall");
          return done != 0;
        },
        what, timeout);
  } catch (const TimeoutError& e) {
    const std::string pending = describe_exchange(reqs, dest, source);
    cancel_pending(reqs, 2);
    throw TimeoutError(e.what() + pending);
  } catch (...) {
    cancel_pending(reqs, 2);
    throw;
  }
}

}  // namespace

void sendrecv(const std::byte* sbuf, std::int64_t sbytes, int dest, std::byte* rbuf,
              std::int64_t rbytes, int source, int tag, MPI_Comm comm, const char* what,
              double timeout) {
  while (sbytes > 0 || rbytes > 0) {
    const std::int64_t s = std::min(sbytes, kMaxMessage);
    const std::int64_t r = std::min(rbytes, kMaxMessage);
    MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};  // receive, send
    if (r > 0) irecv_bytes(rbuf, r, source, tag, comm, &reqs[0]);
    if (s > 0) isend_bytes(sbuf, s, dest, tag, comm, &reqs[1]);
    wait_exchange(reqs, dest, source, what, timeout);
    sbuf += s, sbytes -= s, rbuf += r, rbytes -= r;
  }
}

void isend_bytes(const std::byte* buf, std::int64_t bytes, int peer, int tag, MPI_Comm comm,
                 MPI_Request* req) {
#if MPI_VERSION >= 4
  check_mpi(MPI_Isend_c(buf, bytes, MPI_BYTE, peer, tag, comm, req), "MPI_Isend_c");
#else
  if (bytes > INT_MAX) throw ArgumentError("recvbuf: messages over 2^31-1 bytes need MPI-4");
  check_mpi(MPI_Isend(buf, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm, req), "MPI_Isend");
#endif
}

void irecv_bytes(std::byte* buf, std::int64_t bytes, int peer, int tag, MPI_Comm comm,
                 MPI_Request* req) {
#if MPI_VERSION >= 4
  check_mpi(MPI_Irecv_c(buf, bytes, MPI_BYTE, peer, tag, comm, req), "MPI_Irecv_c");
#else
  if (bytes > INT_MAX) throw ArgumentError("recvbuf: messages over 2^31-1 bytes need MPI-4");
  check_mpi(MPI_Irecv(buf, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm, req), "MPI_Irecv");
#endif
}

void free_drained(MPI_Comm& comm) {
  if (comm == MPI_COMM_NULL) return;
  std::vector<std::byte> sink;
  for (;;) {
    int arrived = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &arrived, &status);
    if (!arrived) break;
    MPI_Count bytes = 0;
    MPI_Get_elements_x(&status, MPI_BYTE, &bytes);
    sink.resize(static_cast<std::size_t>(bytes));
    MPI_Recv(sink.data(), static_cast<int>(bytes), MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG,
             comm, MPI_STATUS_IGNORE);
  }
  MPI_Comm_free(&comm);
}

void count_message(const Topology& topo, int peer, std::int64_t bytes, Stats& stats) {
  if (bytes == 0) return;
  if (topo.node_of[peer] == topo.node) {
    ++stats.intra_messages, stats.intra_bytes += bytes;
  } else {
    ++stats.inter_messages, stats.inter_bytes += bytes;
  }
}

void wait_request(MPI_Request& req, const char* what, double timeout) {
  wait_requests(&req, 1, what, timeout);
}

void wait_requests(MPI_Request* reqs, std::size_t n, const char* what, double timeout) {
  try {
    for (std::size_t i = 0; i < n; ++i) wait_collective(reqs[i], what, timeout);  // the same wait
  } catch (...) {
    cancel_pending(reqs, n);
    throw;
  }
}

void wait_collective(MPI_Request& req, const char* what, double timeout) {
  wait_until(
      [&] {
        int done = 0;
        check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
        return done != 0;
      },
      what, timeout);
}

bool cancel_pending(MPI_Request* reqs, std::size_t n) {
  bool pending = false;
  for (std::size_t i = 0; i < n; ++i) {
    MPI_Request& r = reqs[i];
    if (r == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&r);
    MPI_Request_free(&r);
    pending = true;
  }
  return pending;
}

namespace {
std::mutex kept_mutex;
std::vector<std::shared_ptr<void>>& kept() {
  static auto* memory = new std::vector<std::shared_ptr<void>>;  // never freed
  return *memory;
}
}  // namespace

void keep_for_freed_requests(std::shared_ptr<void> memory) {
  const std::lock_guard<std::mutex> lock(kept_mutex);
  kept().push_back(std::move(memory));
}

std::size_t kept_for_freed_requests() {
  const std::lock_guard<std::mutex> lock(kept_mutex);
  return kept().size();
}

}  // namespace shancoll
