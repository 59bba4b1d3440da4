/* hash.h: the apps' input data as a hash of an index (ours).
 *
 * Inputs are made from the index of the item, never from a sequential
 * generator, so every thread can make its own share and the data does not
 * depend on the thread count. The mix is the splitmix64 finaliser.
 */
#ifndef SPLASH2_HASH_H
#define SPLASH2_HASH_H

#include <stdint.h>

static inline uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Uniform in [0, 1): the top 53 bits of mix(i). */
static inline double unit(uint64_t i) { return (double)(mix(i) >> 11) * (1.0 / 9007199254740992.0); }

#endif
