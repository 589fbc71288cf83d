// Rule tables behind algorithm="auto": measured data (python -m shancoll.bench.sweep
// rules), kept as text, read here in the core so that Python, the C API and
// the PMPI library choose alike.
//
// Format: one rule per line, whitespace-separated, '#' starts a comment:
//
//   coll  min_bytes  max_bytes  min_ranks  max_ranks  nodes  hosts  algorithm  options
//
// coll: allgatherv (allgather too), allreduce, bcast, reduce, barrier,
// alltoallv (alltoall too, and only alltoall calls match: bytes are the
// block's, which differ from rank to rank in an alltoallv), gather,
// gatherv, scatter, scatterv, scan, exscan, reduce_scatter,
// reduce_scatter_block. bytes: the message of one rank (allgatherv:
// the result's bytes / ranks, rounded down; barrier, gatherv, scatterv: 0,
// no size every rank knows; gather, scatter: the block; scan, exscan: the
// buffer; reduce_scatter(_block): the input's bytes / ranks), the rule holds for
// min_bytes <= bytes < max_bytes; ranks: min_ranks
// <= ranks <= max_ranks; max_* may be '*' (no limit). nodes: '*', N or N+
// (at least N): the nodes shancoll works with, virtual ones included. hosts:
// the same forms, for the physical nodes (MPI's shared-memory nodes) the
// call spans: 2 nodes on 1 host are virtual nodes whose messages still move
// through MPI's shared memory, 2 nodes on 2 hosts go through its network
// module, and the two are timed apart (rules measured on real-node runs say
// hosts 2). A row of 8 fields (tables written before the column) has hosts
// '*'. hosts may name the network module that carries the messages between
// the hosts, N@<network> (2@ucx, 2+@ofi): such a row holds only where
// machine_network() is that name (latency differs by module: at 2 hosts of
// one rank, 256 KiB, one round of m beats two of m/2 under OFI's tcp and
// loses under UCX). options: '-' (the algorithm's defaults) or key=value,...
// (the collective's options, call_options.h: e.g. single_copy=0), which a
// call that passes no options of its own then runs with. The first rule
// that holds decides; if its algorithm cannot run this call (unknown, a
// non-commutative op, rank-varying floating point, ...) the built-in rule
// decides instead.
//
// coll may also be <coll>_init (allgather_init, alltoall_init as above):
// the persistent form's `auto` (persistent_choice), whose algorithm is the
// collective's persistent engine (coll/request/requests.cc: shan or
// release_gather, each taking the sizes it fits by its own bounds) or mpi
// (the MPI library's own: the PMPI library leaves it the library's
// persistent request); options '-', single_copy=0 (the shared-segment
// deposits alone, not the single-copy engines) or single_copy=1 (also the
// engines that take single copy only when asked: allreduce's on a node of
// two ranks), which a call with no single_copy option of its own runs with. bytes as for the
// blocking rows, except alltoallv_init (alltoallv calls too) and the v-forms: 0. Without a row
// persistent `auto` takes the inline engines (at most 56 bytes, the built-in rule) and the MPI
// library's own elsewhere.
//
// A table is measured on one kind of machine, and holds there: its lines
//
//   match  cpu     <CPU model, or its beginning>
//   match  cpuid   family <F> model <M>
//   match  caches  L1d <size> L2 <size> L3 <size>
//   match  mpi     <MPI library version line, or its beginning>
//
// say which (machine_fingerprint() gives this process's values); a table
// without them holds anywhere, and a table names only the keys it knows.
// cpu and mpi are text and hold as a prefix ("MPICH Version: 5.0" holds
// for 5.0.2). cpuid and caches are name-value pairs (/proc/cpuinfo's "cpu
// family" and "model"; cpu0's data or unified caches per level in sysfs,
// the size of one instance as sysfs gives it, K or whole M: "48K", "1M"),
// and each pair a line names must equal this machine's: a prefix would let
// "L3 3" hold for 32M and 384M, and one cache size more or less moves where
// a message leaves a cache, which is what the crossovers of a table depend
// on (one model name, "AMD EPYC" in a KVM guest, covers Zen 3 with 32K L1d
// and 512K L2 and Zen 5 with 48K and 1M). Pairs a line leaves out are not
// compared, so a table records what was known of its machine, or what
// holds on every VM of its CPU (the Intel Xeon tables: L1d and L2, not the
// L3 the VM reports). A value this machine cannot tell ("unknown": no
// sysfs, no cpuid lines) holds for no line naming that key.
//
// The active table: set_rules(path), else $SHANCOLL_RULES (as they are,
// matched or not), else the first table of the default directories
// (set_default_rules: the user's calibrated tables, then the package's)
// whose match lines all hold, else the first there without match lines (the
// conservative table: choices that won on every machine measured), else none
// (built-in rules); the path "builtin" means none. Every rank must see the
// same table. rules_info() says which is active and why.
//
// Threads: the active table is process-wide, behind one mutex; every thread
// memoises its last matches (no lock per call once seen). set_rules and
// set_default_rules are configuration calls: safe from any thread, but the
// default options they make stale (call_options.h) must not be in use by a
// call on another thread at that moment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace shancoll {

struct CallOptions;  // call_options.h

struct Rule {
  std::string coll;
  std::int64_t min_bytes = 0, max_bytes = INT64_MAX;  // [min, max)
  int min_ranks = 1, max_ranks = INT32_MAX;           // [min, max]
  int min_nodes = 1, max_nodes = INT32_MAX;           // [min, max]
  int min_hosts = 1, max_hosts = INT32_MAX;           // [min, max]
  std::string network;                                // "": any; else machine_network()'s
  std::string algorithm;
  std::string options_text;                    // "" for '-'
  std::shared_ptr<const CallOptions> options;  // parsed and completed; null for '-'
};

// The machine a table holds on: (key, value) pairs of its match lines.
using Match = std::vector<std::pair<std::string, std::string>>;
// This process's machine: cpu (the CPU model), cpuid, caches and mpi (the
// MPI library's version line), as match lines compare them. Needs MPI
// initialised.
const Match& machine_fingerprint();
// The fingerprint's mpi: the MPI library's version line ("unknown" if none).
const std::string& machine_mpi();
// cpu0's caches under a sysfs cache directory (/sys/devices/system/cpu/cpu0/cache),
// "L1d 48K L2 1M L3 32M"; "unknown" when none can be read.
std::string read_caches(const std::string& dir);
// The largest of those caches in bytes (the last level's), 0 where unknown.
std::size_t largest_cache_bytes(const std::string& dir);
// The network module that carries this process's messages between hosts,
// as a rule's hosts field names it: network_of(the MPI library's version
// text, $MPIR_CVAR_CH4_NETMOD). Needs MPI initialised.
const std::string& machine_network();
// MPICH's netmod: `netmod` (its CVAR) where set, else the first of the
// build's ("MPICH Device: ch4:ucx ofi": ucx); Intel MPI: ofi (libfabric
// alone); other libraries: "unknown" (no row naming a network holds).
// Lower case.
std::string network_of(const std::string& version, const char* netmod);
// Whether every line of `match` holds on `machine` (default: this process's).
bool matches(const Match& match, const Match& machine);
bool matches(const Match& match);
// The match lines of a table's text.
Match parse_match(const std::string& text, const std::string& source);
// The default search on `machine`: the first table of `dirs` (as
// set_default_rules takes them) whose match lines all hold there, else the
// first without match lines; "" if neither. *how says which and why.
std::string table_for(const std::string& dirs, const Match& machine, std::string* how);

// Which table is active and why (rules_info): path ("" none), how it was
// chosen, and this machine's fingerprint.
struct RulesInfo {
  std::string path;
  std::string how;
  std::string machine;
};
RulesInfo rules_info();

// The options of the rule that holds for this call when it names
// `algorithm` (the one auto chose), else nullptr: a call with no options of
// its own runs with them.
const CallOptions* rule_options(const std::string& coll, std::int64_t bytes, int ranks, int nodes,
                                int hosts, const char* algorithm);

// Parses a table; throws ArgumentError naming `rules`, the source and the line.
std::vector<Rule> parse_rules(const std::string& text, const std::string& source);

// The first rule of `coll` that holds for the call, or nullptr. nodes or
// hosts <= 0: unknown (only rules with '*' there hold); `network`: the
// network module (machine_network), which a row naming one must equal.
const Rule* match_rule(const std::vector<Rule>& rules, const std::string& coll, std::int64_t bytes,
                       int ranks, int nodes, int hosts, const std::string& network);

// Path "" drops the explicit choice (back to $SHANCOLL_RULES / the default).
// Reads and checks the file at once; throws ArgumentError if it cannot.
void set_rules(const std::string& path);
// The directories searched for a table that matches this machine, in order
// (':'-separated, as PATH); a path to a file is a directory of that table.
void set_default_rules(const std::string& dirs);
std::string active_rules_path();

// The algorithm the active table picks for this call if valid(name) holds,
// else "" (the caller applies its built-in rule).
std::string rule_choice(const std::string& coll, std::int64_t bytes, int ranks, int nodes,
                        int hosts, const std::function<bool(const std::string&)>& valid);

// The active table's choice for the persistent form of `coll` (its rows
// <coll>_init): algorithm `engine`, "mpi", or "" (no such row: the built-in
// rule), and the single_copy option the row gives the engines (-1: none).
struct PersistentChoice {
  std::string algorithm;
  int single_copy = -1;
};
PersistentChoice persistent_choice(const std::string& coll, std::int64_t bytes, int ranks,
                                   int nodes, int hosts, const char* engine);

}  // namespace shancoll
