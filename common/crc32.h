/* CRC-32 (IEEE 802.3, the one zlib, PNG and the AWS event stream use). */
#ifndef KV_CRC32_H
#define KV_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32 of the bytes already summed into CRC (0 for none) followed by
 * P[0..LEN): kv_crc32(kv_crc32(0, a, n), b, m) is the CRC of a then b,
 * as zlib's crc32() computes it. P may be NULL when LEN is 0. */
uint32_t	kv_crc32(uint32_t crc, const void *p, size_t len);

#endif
