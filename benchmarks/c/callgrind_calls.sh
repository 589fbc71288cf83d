#!/usr/bin/env bash
# Instructions per call of the 8-byte collectives at 2 ranks (callgrind):
# benchmarks/c/calls.c, N calls minus none, / N, counted on one rank while
# the other runs natively (docs/performance.md, "Small messages").
#
#   nice -n 19 bash benchmarks/c/callgrind_calls.sh [N] [collectives] [modes]
#
# N: calls (default 20000); collectives: comma-separated (default
# bcast,reduce,allreduce,allgather,barrier); modes (default preload,native,pmpi):
#   preload  MPI_<Coll> under LD_PRELOAD=libshancoll_pmpi.so
#   native   MPI_<Coll> without the preload (the MPI library's own call)
#   pmpi     PMPI_<Coll> called directly, under the preload
#   preload-init, native-init, pmpi-init: the same with MPI_Start + MPI_Wait
#            of a persistent request (MPI_<Coll>_init once, before the warm-up)
# Prints per collective and mode the instructions per call on rank 0 (the
# root of bcast and reduce) and on rank 1.
#
# Waiting: a rank that arrives before its peer polls, and a poll loop's
# instructions depend on the machine's load, not on the call path. shancoll's
# loops run in shancoll::wait_loop (progress.h, out of line), whose inclusive
# count is subtracted: the preload's figures are the call path's own, the
# same on a busy machine as on an idle one. The MPI library's own polling
# (native, pmpi; and MPICH's inside shancoll's calls, none on these paths)
# cannot be told apart in a stripped libmpi: those figures include it, and
# are only the call's own on an idle machine (the smallest of REPEATS runs,
# default 1, is printed).
#
# WAIT=name: the function whose inclusive count is the waiting (default
# wait_loop; a build before it existed inlines its loop in wait_until).
# CALLS_COUNT=k: k doubles per rank and block instead of one (calls.c).
# RANKS=1 runs one rank alone (no peer, no waiting: the MPI library's own
# figures are then its call path's), printed as rank0.
#
# PRELOAD=path picks the library (default: the build tree's, whose symbols
# callgrind_annotate can name; else the venv's). The build tree has no rule
# tables beside it, so SHANCOLL_RULES defaults to the table the installed
# package picks on this machine (the routes a user gets). With KEEP=dir the callgrind
# files of the N-call runs stay in dir, for
#   callgrind_annotate --inclusive=yes dir/<coll>.<mode>.rank1.out
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-20000}
COLLS=${2:-bcast,reduce,allreduce,allgather,barrier}
MODES=${3:-preload,native,pmpi}
REPEATS=${REPEATS:-1}
VENV=${VENV:-$PWD/.venv}
PRELOAD=${PRELOAD:-$(ls build/*/libshancoll_pmpi.so 2>/dev/null | head -1 || true)}
[ -n "$PRELOAD" ] || PRELOAD=$(find "$VENV" -name libshancoll_pmpi.so | head -1)
[ -n "$PRELOAD" ] || { echo "libshancoll_pmpi.so not found: make setup" >&2; exit 1; }
SHANCOLL_RULES=${SHANCOLL_RULES:-$("$VENV/bin/python" -c \
  'import shancoll; print(shancoll.rules_info()["path"] or "")')}
export SHANCOLL_RULES
echo "rules: ${SHANCOLL_RULES:-built-in}" >&2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$VENV/bin/mpicc" -O2 -o "$WORK/calls" benchmarks/c/calls.c
export OPENBLAS_NUM_THREADS=1

# The instructions of one rank's process, shancoll's waiting left out.
count() {
  local n=$1 coll=$2 mode=$3 rank=$4 out="$WORK/cg.out"
  local env=() direct=()
  case $mode in native*) ;; *) env=(env "LD_PRELOAD=$PRELOAD") ;; esac
  case $mode in
    pmpi) direct=(pmpi) ;;
    pmpi-init) direct=(pmpi-init) ;;
    *-init) direct=(init) ;;
  esac
  local grind=(valgrind --tool=callgrind --callgrind-out-file="$out" -q ${CALLGRIND_ARGS:-})
  local run=("$WORK/calls" "$n" "$coll" "${direct[@]}")
  rm -f "$out"
  if [ "${RANKS:-2}" = 1 ]; then
    "$VENV/bin/mpiexec" -n 1 "${env[@]}" "${grind[@]}" "${run[@]}"
  elif [ "$rank" = 0 ]; then
    "$VENV/bin/mpiexec" -n 1 "${env[@]}" "${grind[@]}" "${run[@]}" : -n 1 "${env[@]}" "${run[@]}"
  else
    "$VENV/bin/mpiexec" -n 1 "${env[@]}" "${run[@]}" : -n 1 "${env[@]}" "${grind[@]}" "${run[@]}"
  fi >"$WORK/log" 2>&1 || { cat "$WORK/log" >&2; exit 1; }
  if [ -n "${KEEP:-}" ] && [ "$n" != 0 ]; then
    mkdir -p "$KEEP" && cp "$out" "$KEEP/$coll.$mode.rank$rank.out"
  fi
  local total waiting
  total=$(sed -n 's/^summary: *//p' "$out")
  waiting=$(callgrind_annotate --inclusive=yes --threshold=100 "$out" 2>/dev/null |
    grep "shancoll::${WAIT:-wait_loop}<" | grep -v "'[0-9]" |
    awk '{gsub(",", "", $1); s += $1} END {print s + 0}')
  echo $((total - waiting))
}

# The smallest of REPEATS differences, per call.
per_call() {
  local best=""
  for _ in $(seq "$REPEATS"); do
    local with without d
    with=$(count "$N" "$@")
    without=$(count 0 "$@")
    d=$(((with - without) / N))
    if [ -z "$best" ] || [ "$d" -lt "$best" ]; then best=$d; fi
  done
  echo "$best"
}

printf '%-10s %-12s %8s %8s   (instructions per call, %d calls minus none)\n' \
  collective mode rank0 rank1 "$N"
for coll in ${COLLS//,/ }; do
  for mode in ${MODES//,/ }; do
    rank1=-
    [ "${RANKS:-2}" = 1 ] || rank1=$(per_call "$coll" "$mode" 1)
    printf '%-10s %-12s %8s %8s\n' "$coll" "$mode" "$(per_call "$coll" "$mode" 0)" "$rank1"
  done
done
