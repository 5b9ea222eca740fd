/* What one more stream adds, by kind, learned from readings; see memcost.h. */

#include "worker/memcost.h"

#include <stddef.h>

static const int64_t start[KV_COST_KINDS] = {
	KV_COST_START_PLAIN, KV_COST_START_OWN, KV_COST_START_OPENSSL
};
static const int64_t floors[KV_COST_KINDS] = {
	KV_COST_FLOOR_PLAIN, KV_COST_FLOOR_OWN, KV_COST_FLOOR_OPENSSL
};
static const char *const names[KV_COST_KINDS] = {
	"plain HTTP", "TLS (own record layer)", "TLS (OpenSSL)"
};

static int
valid(int kind)
{
	return kind >= 0 && kind < KV_COST_KINDS ? kind : KV_COST_TLS_OPENSSL;
}

int64_t
kv_memcost_floor(int kind)
{
	return floors[valid(kind)];
}

int64_t
kv_memcost_start(int kind)
{
	return start[valid(kind)];
}

const char *
kv_memcost_name(int kind)
{
	return names[valid(kind)];
}

void
kv_memcost_init(struct kv_memcost *m)
{
	int k;

	for (k = 0; k < KV_COST_KINDS; k++) {
		m->est[k] = start[k];
		m->learned[k] = 0;
	}
}

int64_t
kv_memcost_of(const struct kv_memcost *m, int kind)
{
	return m->est[valid(kind)];
}

static int64_t
clamp(int kind, int64_t v)
{
	if (v < floors[kind])
		return floors[kind];
	return v > KV_COST_MAX ? KV_COST_MAX : v;
}

/* No kind dominates: the readings cannot tell the kinds apart, only that
 * the estimates together fall short of what the streams hold. */
static void
learn_mix(struct kv_memcost *m, int64_t growth, const int live[KV_COST_KINDS])
{
	int64_t sum = 0;
	int k;

	for (k = 0; k < KV_COST_KINDS; k++)
		sum += (int64_t)live[k] * m->est[k];
	if (sum <= 0 || growth <= sum)
		return;
	for (k = 0; k < KV_COST_KINDS; k++)
		if (live[k] > 0) {
			/* rounded up: the raise must cover the shortfall */
			m->est[k] = clamp(k, (m->est[k] * growth + sum - 1) / sum);
			m->learned[k]++;
		}
}

int
kv_memcost_learn(struct kv_memcost *m, int64_t growth, const int live[KV_COST_KINDS],
    int bound)
{
	int64_t total = 0, others = 0, sample, e;
	int k, dom = 0;

	for (k = 0; k < KV_COST_KINDS; k++) {
		if (live[k] < 0)
			return -1;
		total += live[k];
		if (live[k] > live[dom])
			dom = k;
	}
	if (total < KV_COST_MIN_LIVE)
		return -1;
	if ((int64_t)live[dom] * 8 < total * 7) {
		if (!bound)
			learn_mix(m, growth, live);
		return -1;
	}
	for (k = 0; k < KV_COST_KINDS; k++)
		if (k != dom)
			others += (int64_t)live[k] * m->est[k];
	sample = (growth - others) / live[dom];
	e = m->est[dom];
	if (sample > e && bound)
		return -1;
	if (sample > e)
		e = sample;
	else	/* toward the reading by 1/4 of the gap, rounded toward it */
		e -= (e - sample + (1 << KV_COST_DOWN_SHIFT) - 1) >> KV_COST_DOWN_SHIFT;
	m->est[dom] = clamp(dom, e);
	m->learned[dom]++;
	return dom;
}
