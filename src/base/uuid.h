/* Random identifiers: UUIDv4 strings and random lower-case hex; random numbers
 * (getrandom: any thread). */
#ifndef FL_BASE_UUID_H
#define FL_BASE_UUID_H
#include <stddef.h>

/* "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx" (36 chars + NUL). */
void fl_uuid4(char out[37]);
/* n random lower-case hex characters + NUL (out holds n+1). */
void fl_random_hex(char *out, size_t n);
/* A uniformly random 64-bit value. */
#include <stdint.h>
uint64_t fl_random_u64(void);
#endif
