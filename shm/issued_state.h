/* An issued key's state as Redis's kv:issued holds it, one field per
 * account (docs/cluster.md, "Issued keys"): "1 FLAGS BUDGET RPM TPM PERIOD
 * EXPIRES LABEL" and a "HASH:ROTATED" per later secret. The master's
 * issued-key sync (master/cluster_keys.c) and kvctl, which writes what it
 * changes there itself, read, write and merge it here alike. */
#ifndef KV_SHM_ISSUED_STATE_H
#define KV_SHM_ISSUED_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "shm/ledger.h"

#define KV_ISSUED_LINKS		16	/* secrets of one account carried (rotations) */
#define KV_ISSUED_TEXT		(128 + KV_LABEL_MAX + KV_ISSUED_LINKS * 67)

#define KV_ISSUED_REVOKED	0x1u
#define KV_ISSUED_ROTATED	0x2u

/* One account's state, parsed or read from the ledger. */
struct kv_issued {
	unsigned	 flags;
	int64_t		 budget, rpm, tpm, period, expires;
	char		 label[KV_LABEL_MAX];
	size_t		 nlinks;
	uint8_t		 link[KV_ISSUED_LINKS][32];
	unsigned char	 link_rotated[KV_ISSUED_LINKS];
};

/* The 64 lower-case hex digits of a hash (kv:issued's field), and back:
 * 0, or -1 for anything but 64 hex digits. */
void	kv_issued_hex(const uint8_t h[32], char out[65]);
int	kv_issued_unhex(const char *s, size_t len, uint8_t h[32]);

/* A's state from the ledger: its flags, limits, and the link slots that
 * name it (its later secrets), in slot order. */
void	kv_issued_read(const struct kv_ledger *l, const struct kv_account *a,
	    struct kv_issued *s);

/* S as kv:issued's value, in OUT (KV_ISSUED_TEXT bytes). */
void	kv_issued_format(const struct kv_issued *s, char *out, size_t cap);

/* VALUE (LEN bytes) into S; 0, or -1 when it is not this format. */
int	kv_issued_parse(const char *value, size_t len, struct kv_issued *s);

/* Adds to S what R knows and S does not: R's flags, and R's secrets (a
 * rotation R has seen marks S's copy too). Redis's state only grows. */
void	kv_issued_union(struct kv_issued *s, const struct kv_issued *r);

#endif
