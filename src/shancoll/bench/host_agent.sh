#!/bin/sh
# The "ssh" of two real MPI nodes on one machine (shancoll.bench.hosts).
#
# Open MPI's launcher (PRRTE) starts its daemon on a remote host as
# `AGENT [options] HOST COMMAND...`, COMMAND being one shell line; Intel MPI's
# hydra (ssh bootstrap) its proxy as `AGENT -q -x HOST COMMAND WORDS...`.
# This agent runs COMMAND here, in a UTS namespace of its own whose host name
# is HOST: the daemon and its ranks then report HOST as their node, so the
# library sees one node per host name and its network module (Open MPI's
# ob1/tcp, Intel MPI's ofi/tcp here) carries the traffic between them, as
# between machines. Needs `unshare --uts` (root or CAP_SYS_ADMIN); without it
# the daemon does not start and the launcher says so. Options before HOST
# (ssh options) are skipped; COMMAND's words are joined into one shell line.
while [ $# -gt 0 ]; do
  case $1 in
    -*) shift ;;
    *) break ;;
  esac
done
host=$1
shift
exec unshare --uts /bin/sh -c 'hostname "$0" && exec /bin/sh -c "$1"' "$host" "$*"
