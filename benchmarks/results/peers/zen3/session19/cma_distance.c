/* process_vm_readv from the process itself against dst - src modulo 4 KiB (session19/README.md). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
int main(){
  char* base=aligned_alloc(4096,64<<20); memset(base,1,64<<20);
  size_t sizes[]={16384,65536,262144,1<<20,4<<20};
  int offs[]={0,8,16,31,32,64,2048};
  printf("%8s","size");for(int o=0;o<7;o++)printf(" %8d",offs[o]);printf("   (process_vm_readv from self, dst - src mod 4096, best of 20, us)\n");
  for(int si=0;si<5;si++){size_t n=sizes[si];printf("%8zu",n);
    for(int o=0;o<7;o++){char* s=base+16; char* d=base+(32<<20)+16+offs[o];
      struct iovec l={d,n},r={s,n}; double best=1e30;
      for(int k=0;k<20;k++){double t0=now(); if(process_vm_readv(getpid(),&l,1,&r,1,0)!=(ssize_t)n){perror("cma");return 1;} double t=now()-t0; if(t<best)best=t;}
      printf(" %8.2f",best/1e3);}
    printf("\n");}
}
