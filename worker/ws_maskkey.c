/* Masking keys for the frames kilovolt writes upstream (ws_maskkey.h):
 * a per-process pool of random bytes, refilled when used up. */
#include "worker/ws_maskkey.h"

#include <pthread.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/rand.h>

#include "common/log.h"

#define POOL	1024	/* 256 keys a refill */

static uint8_t pool[POOL];
static size_t pos = POOL;	/* empty */
static int hooked;

/* A forked child must not reuse its parent's bytes. */
static void
forked(void)
{
	pos = POOL;
}

static void
refill(void)
{
	size_t n = 0;
	ssize_t r;

	if (!hooked && pthread_atfork(NULL, NULL, forked) == 0)
		hooked = 1;
	if (RAND_bytes(pool, POOL) != 1) {
		/* OpenSSL's generator failed: the kernel's, directly */
		while (n < POOL && (r = getrandom(pool + n, POOL - n, 0)) > 0)
			n += (size_t)r;
		if (n < POOL)
			kv_log_warn("KV0565", "getrandom for WebSocket masking keys");
	}
	pos = 0;
}

void
kv_ws_maskkey(uint8_t key[4])
{
	if (pos + 4 > POOL)
		refill();
	memcpy(key, pool + pos, 4);
	pos += 4;
}
