// SHANCOLL_PMPI_SUMMARY=1: calls, bytes and time per collective and
// algorithm (or "(MPI library)" for calls left to it), printed by rank 0 at
// MPI_Finalize. Each rank counts its own calls; rank 0 gathers the tables as
// text (ranks may have seen different algorithms only if the program's calls
// differ between ranks) and prints, per row, the most calls, bytes and time
// of any rank: time as the slowest rank's total, as benchmarks report it.
#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "pmpi_common.h"

namespace shancoll::pmpi {
namespace {

struct Row {
  std::int64_t calls = 0;
  std::int64_t bytes = 0;
  double seconds = 0;

  void merge_max(const Row& o) {
    calls = std::max(calls, o.calls);
    bytes = std::max(bytes, o.bytes);
    seconds = std::max(seconds, o.seconds);
  }
};

using Table = std::map<std::pair<std::string, std::string>, Row>;

std::mutex g_mutex;  // fallback calls may come from several threads
Table g_table;

// One line per row: collective, algorithm, calls, bytes, seconds.
std::string serialize(const Table& table) {
  std::ostringstream out;
  out.precision(17);
  for (const auto& [key, row] : table)
    out << key.first << ' ' << key.second << ' ' << row.calls << ' ' << row.bytes << ' '
        << row.seconds << '\n';
  return out.str();
}

// Rows of all ranks' text merged; algorithm names hold no spaces except
// kLibrary's, written as "(MPI" "library)".
Table merge(const std::string& text) {
  Table table;
  std::istringstream in(text);
  std::string collective, algorithm;
  while (in >> collective >> algorithm) {
    if (algorithm == "(MPI") {
      std::string rest;
      in >> rest;
      algorithm += " " + rest;
    }
    Row row;
    in >> row.calls >> row.bytes >> row.seconds;
    table[{collective, algorithm}].merge_max(row);
  }
  return table;
}

void print(const Table& table, int ranks) {
  std::fprintf(stderr, "shancoll_pmpi summary (%d ranks; per row the largest value of any rank):\n",
               ranks);
  std::fprintf(stderr, "shancoll_pmpi summary: %-18s %-20s %10s %14s %12s %12s\n", "collective",
               "algorithm", "calls", "bytes/call", "total s", "us/call");
  for (const auto& [key, row] : table) {
    const double calls = row.calls > 0 ? static_cast<double>(row.calls) : 1.0;
    std::fprintf(stderr, "shancoll_pmpi summary: %-18s %-20s %10lld %14.0f %12.6f %12.2f\n",
                 key.first.c_str(), key.second.c_str(), static_cast<long long>(row.calls),
                 row.bytes / calls, row.seconds, 1e6 * row.seconds / calls);
  }
}

std::string gather_text(const std::string& mine, int rank, int size) {
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(rank == 0 ? size : 0), offsets(lengths.size());
  PMPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) offsets[r] = total, total += lengths[r];
  std::string all(static_cast<std::size_t>(total), '\0');
  PMPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
               0, MPI_COMM_WORLD);
  return all;
}

}  // namespace

void record(const char* collective, const char* algorithm, std::int64_t bytes, double seconds) {
  try {
    std::lock_guard<std::mutex> lock(g_mutex);
    Row& row = g_table[{collective, algorithm}];
    ++row.calls;
    row.bytes += bytes;
    row.seconds += seconds;
  } catch (...) {
    // Out of memory while counting: the collective itself is unaffected.
  }
}

void print_summary() {
  try {
    int rank = 0, size = 1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    std::string mine;
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      mine = serialize(g_table);
    }
    const std::string all = gather_text(mine, rank, size);
    if (rank == 0) print(merge(all), size);
  } catch (...) {
    std::fprintf(stderr, "shancoll_pmpi: no summary (out of memory)\n");
  }
}

}  // namespace shancoll::pmpi
