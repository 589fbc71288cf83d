#!/bin/bash
# one repeat (run under /tmp/timed.sh): MPICH native, main's preload and this branch's (shan forced), 4 collectives; output dir $1
out=$1; mkdir -p $out
V=/work/main/.venv; SP=$V/lib/python3.11/site-packages/shancoll
NEW=/work/wt-gather-alltoall/build/cp311-cp311-linux_x86_64/libshancoll_pmpi.so
export PATH=$V/bin:$PATH
F="SHANCOLL_GATHER_ALGORITHM=shan SHANCOLL_SCATTER_ALGORITHM=shan SHANCOLL_ALLTOALL_ALGORITHM=shan SHANCOLL_REDUCE_SCATTER_BLOCK_ALGORITHM=shan"
for c in ${COLLS:-gather scatter alltoall reduce_scatter_block}; do
  $V/bin/mpiexec -n 2 -bind-to core $SP/bin/shancoll_osu_style -c $c >> $out/native.txt 2>&1
  env LD_PRELOAD=$SP/lib/libshancoll_pmpi.so $F $V/bin/mpiexec -n 2 -bind-to core $SP/bin/shancoll_osu_style -c $c >> $out/main_shan.txt 2>&1
  env LD_PRELOAD=$NEW $F $V/bin/mpiexec -n 2 -bind-to core $SP/bin/shancoll_osu_style -c $c >> $out/new_shan.txt 2>&1
done
