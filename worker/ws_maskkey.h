/* The masking keys of the frames kilovolt sends upstream on a WebSocket
 * session (ws_maskkey.c): RFC 6455 5.3 asks a client for a fresh,
 * unpredictable key per frame, so that nobody choosing the payload can
 * predict the bytes on the wire (the cache-poisoning attack masking
 * defeats). */
#ifndef KV_WS_MASKKEY_H
#define KV_WS_MASKKEY_H

#include <stdint.h>

/* Four bytes for the next frame's key, from a pool this process fills
 * with RAND_bytes (OpenSSL's generator, seeded from getrandom) a
 * kilobyte at a time: no system call per frame. Emptied in a forked
 * child, so two workers never share keys. Never fails: should RAND_bytes
 * fail, getrandom fills the pool. */
void	kv_ws_maskkey(uint8_t key[4]);

#endif
