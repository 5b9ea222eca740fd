/* An issued key's state as kv:issued holds it (issued_state.h). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/issued_state.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common/hex.h"

void
kv_issued_hex(const uint8_t h[32], char out[65])
{
	static const char d[] = "0123456789abcdef";
	int i;

	for (i = 0; i < 32; i++) {
		out[2 * i] = d[h[i] >> 4];
		out[2 * i + 1] = d[h[i] & 0xf];
	}
	out[64] = '\0';
}

int
kv_issued_unhex(const char *s, size_t len, uint8_t h[32])
{
	int i, hi, lo;

	if (len != 64)
		return -1;
	for (i = 0; i < 32; i++) {
		if ((hi = kv_hexval((unsigned char)s[2 * i])) < 0 ||
		    (lo = kv_hexval((unsigned char)s[2 * i + 1])) < 0)
			return -1;
		h[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

void
kv_issued_read(const struct kv_ledger *l, const struct kv_account *a, struct kv_issued *s)
{
	uint32_t ai = kv_ledger_account_index(l, a) + 1, i, p;

	memset(s, 0, sizeof(*s));
	if (atomic_load(&a->aflags) & KV_AF_REVOKED)
		s->flags |= KV_ISSUED_REVOKED;
	if (atomic_load(&a->aflags) & KV_AF_ROTATED)
		s->flags |= KV_ISSUED_ROTATED;
	s->budget = atomic_load(&a->budget_nusd);
	s->rpm = atomic_load(&a->rpm);
	s->tpm = atomic_load(&a->tpm);
	p = atomic_load(&a->period);
	s->period = p == 0 ? -1 : (int64_t)p - 1;
	s->expires = atomic_load(&a->expires);
	memcpy(s->label, a->label, sizeof(s->label));
	s->label[sizeof(s->label) - 1] = '\0';
	KV_FOR_EACH_SLOT(l, i) {
		const struct kv_account *k = &l->accounts[i];

		if (s->nlinks == KV_ISSUED_LINKS)
			break;
		if (atomic_load(&k->state) != KV_SLOT_LINK || atomic_load(&k->link) != ai ||
		    atomic_load(&k->link_tag) != atomic_load(&a->tag))
			continue;
		memcpy(s->link[s->nlinks], k->hash, 32);
		s->link_rotated[s->nlinks++] = (atomic_load(&k->aflags) & KV_AF_ROTATED) != 0;
	}
}

void
kv_issued_format(const struct kv_issued *s, char *out, size_t cap)
{
	size_t n, i;
	char hx[65];

	n = (size_t)snprintf(out, cap, "1 %u %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64
	    " %" PRId64 " %s", s->flags, s->budget, s->rpm, s->tpm, s->period, s->expires,
	    s->label);
	for (i = 0; i < s->nlinks && n < cap; i++) {
		kv_issued_hex(s->link[i], hx);
		n += (size_t)snprintf(out + n, cap - n, " %s:%u", hx, s->link_rotated[i]);
	}
}

int
kv_issued_parse(const char *value, size_t len, struct kv_issued *s)
{
	char buf[KV_ISSUED_TEXT], *tok, *save;
	int used = 0;

	memset(s, 0, sizeof(*s));
	if (len >= sizeof(buf))
		return -1;
	memcpy(buf, value, len);
	buf[len] = '\0';
	if (sscanf(buf, "1 %u %" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64
	    " %47s%n", &s->flags, &s->budget, &s->rpm, &s->tpm, &s->period, &s->expires,
	    s->label, &used) != 7 || used == 0)
		return -1;
	for (tok = strtok_r(buf + used, " ", &save); tok != NULL;
	    tok = strtok_r(NULL, " ", &save)) {
		if (s->nlinks == KV_ISSUED_LINKS || strlen(tok) != 66 || tok[64] != ':' ||
		    kv_issued_unhex(tok, 64, s->link[s->nlinks]) == -1)
			return -1;
		s->link_rotated[s->nlinks++] = tok[65] == '1';
	}
	return 0;
}

void
kv_issued_union(struct kv_issued *s, const struct kv_issued *r)
{
	size_t i, j;

	s->flags |= r->flags;
	for (i = 0; i < r->nlinks && s->nlinks < KV_ISSUED_LINKS; i++) {
		for (j = 0; j < s->nlinks; j++)
			if (memcmp(s->link[j], r->link[i], 32) == 0)
				break;
		if (j < s->nlinks) {
			s->link_rotated[j] |= r->link_rotated[i];
			continue;
		}
		memcpy(s->link[s->nlinks], r->link[i], 32);
		s->link_rotated[s->nlinks++] = r->link_rotated[i];
	}
}
