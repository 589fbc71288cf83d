/* memcpy against the distance between destination and source modulo 4 KiB (session19/README.md). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <emmintrin.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static void vec_copy(char* d,const char* s,size_t n){size_t i=0;for(;i+64<=n;i+=64){__m128i a=_mm_loadu_si128((const __m128i*)(s+i)),b=_mm_loadu_si128((const __m128i*)(s+i+16)),c=_mm_loadu_si128((const __m128i*)(s+i+32)),e=_mm_loadu_si128((const __m128i*)(s+i+48));_mm_storeu_si128((__m128i*)(d+i),a);_mm_storeu_si128((__m128i*)(d+i+16),b);_mm_storeu_si128((__m128i*)(d+i+32),c);_mm_storeu_si128((__m128i*)(d+i+48),e);}memcpy(d+i,s+i,n-i);}
int main(int argc,char**argv){
  char* base=aligned_alloc(4096,(64<<20));
  memset(base,1,64<<20);
  size_t sizes[]={2048,3072,4096,16384,65536,262144,393216,524288};
  int offs[]={0,16,17,20,24,28,31,32,40,63,64};
  printf("%7s","size");for(int oi=0;oi<11;oi++)printf(" %6d",offs[oi]);printf(" | vec@0 vec@16 vec@-16\n");
  for(int si=0;si<8;si++){size_t n=sizes[si];printf("%7zu",n);
    for(int oi=0;oi<14;oi++){
      int off=oi<11?offs[oi]:(oi==11?0:(oi==12?16:-16));
      char* s=base+(8<<20)+16; char* d=base+(24<<20)+16+off;
      double best=1e30;
      for(int r=0;r<30;r++){double t0=now(); if(oi<11) memcpy(d,s,n); else vec_copy(d,s,n); double t=now()-t0; if(t<best)best=t;}
      printf(" %6.2f",best/1e3); if(oi==10)printf(" |");}
    printf("\n");}
}
