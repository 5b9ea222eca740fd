/* Per-key spend history: see history.h. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/history.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonline.h"
#include "shm/report_sort.h"

/* Move ring R (n buckets, newest at unit HAVE) forward to unit `unit`,
 * zeroing the buckets in between; then add delta to it. The caller stores
 * the new newest unit (rings that share it move together). */
static void
ring_step(_Atomic int64_t *r, int n, int64_t have, int64_t unit, int64_t delta)
{
	int64_t u;

	if (unit > have)
		for (u = have + 1 > unit - n + 1 ? have + 1 : unit - n + 1; u <= unit; u++)
			atomic_store_explicit(&r[u % n], 0, memory_order_relaxed);
	if (delta != 0 && unit >= have - n + 1)
		atomic_fetch_add_explicit(&r[unit % n], delta, memory_order_relaxed);
}

static void
ring_add(_Atomic int64_t *r, int n, _Atomic int64_t *newest, int64_t unit,
    int64_t delta)
{
	int64_t have = atomic_load_explicit(newest, memory_order_relaxed);

	ring_step(r, n, have, unit, delta);
	if (unit > have)
		atomic_store_explicit(newest, unit, memory_order_release);
}

void
kv_history_sample(struct kv_ledger *l, struct kv_account *a, int64_t now)
{
	struct kv_hist_slot *h = &l->history[a - l->accounts];
	int64_t cur = kv_account_spent(a);
	int64_t was = atomic_load_explicit(&a->hist_sampled_nusd, memory_order_relaxed);
	int64_t delta;

	if (now <= 0 || cur == was)
		return;	/* nothing moved: the ring's page stays untouched */
	delta = cur >= was ? cur - was : (cur > 0 ? cur : 0);
	if (delta != 0) {
		ring_add(h->minute_nusd, KV_HIST_MINUTES, &h->minute, now / 60, delta);
		ring_add(h->hour_nusd, KV_HIST_HOURS, &h->hour, now / 3600, delta);
	}
	atomic_store_explicit(&a->hist_sampled_nusd, cur, memory_order_relaxed);
}

void
kv_history_sample_all(struct kv_ledger *l, int64_t now)
{
	uint32_t i;

	KV_FOR_EACH_SLOT(l, i)
		if (atomic_load_explicit(&l->accounts[i].state, memory_order_acquire) ==
		    KV_SLOT_READY)
			kv_history_sample(l, &l->accounts[i], now);
}

static void
ring_read(const _Atomic int64_t *r, int n, int64_t newest, int64_t unit,
    int64_t *out)
{
	int64_t u;
	int i;

	for (i = 0; i < n; i++) {
		u = unit - n + 1 + i;
		out[i] = u <= newest && u > newest - n ?
		    atomic_load_explicit(&r[u % n], memory_order_relaxed) : 0;
	}
}

void
kv_history_read(const struct kv_ledger *l, const struct kv_account *a, int64_t now,
    int64_t minutes[KV_HIST_MINUTES], int64_t hours[KV_HIST_HOURS])
{
	const struct kv_hist_slot *h = &l->history[a - l->accounts];

	ring_read(h->minute_nusd, KV_HIST_MINUTES,
	    atomic_load_explicit(&h->minute, memory_order_acquire), now / 60, minutes);
	ring_read(h->hour_nusd, KV_HIST_HOURS,
	    atomic_load_explicit(&h->hour, memory_order_acquire), now / 3600, hours);
}

uint64_t
kv_history_errors(const struct kv_ledger *l)
{
	const struct kv_counters *c = &l->hdr->counters;

	return atomic_load_explicit(&c->responses_5xx_relayed_total, memory_order_relaxed) +
	    atomic_load_explicit(&c->upstream_errors_total, memory_order_relaxed) +
	    atomic_load_explicit(&c->responses_cut_total, memory_order_relaxed);
}

/* The rise of counter CUR since *WAS (all of CUR when it went down: a
 * reset), and *WAS moved to it. */
static int64_t
rise(_Atomic uint64_t *was, uint64_t cur)
{
	uint64_t w = atomic_load_explicit(was, memory_order_relaxed);

	atomic_store_explicit(was, cur, memory_order_relaxed);
	cur = cur >= w ? cur - w : cur;
	return cur > INT64_MAX ? INT64_MAX : (int64_t)cur;
}

void
kv_history_sample_totals(struct kv_ledger *l, int64_t now)
{
	struct kv_rate_hist *r = &l->hdr->rates;
	int64_t req, err, m, h;

	if (now <= 0)
		return;
	req = rise(&r->sampled_requests,
	    atomic_load_explicit(&l->hdr->counters.requests_total, memory_order_relaxed));
	err = rise(&r->sampled_errors, kv_history_errors(l));
	m = atomic_load_explicit(&r->minute, memory_order_relaxed);
	h = atomic_load_explicit(&r->hour, memory_order_relaxed);
	ring_step(r->minute_req, KV_HIST_MINUTES, m, now / 60, req);
	ring_step(r->minute_err, KV_HIST_MINUTES, m, now / 60, err);
	ring_step(r->hour_req, KV_HIST_HOURS, h, now / 3600, req);
	ring_step(r->hour_err, KV_HIST_HOURS, h, now / 3600, err);
	if (now / 60 > m)
		atomic_store_explicit(&r->minute, now / 60, memory_order_release);
	if (now / 3600 > h)
		atomic_store_explicit(&r->hour, now / 3600, memory_order_release);
}

void
kv_history_totals_read(const struct kv_ledger *l, int64_t now,
    int64_t req_min[KV_HIST_MINUTES], int64_t err_min[KV_HIST_MINUTES],
    int64_t req_hour[KV_HIST_HOURS], int64_t err_hour[KV_HIST_HOURS])
{
	const struct kv_rate_hist *r = &l->hdr->rates;
	int64_t m = atomic_load_explicit(&r->minute, memory_order_acquire);
	int64_t h = atomic_load_explicit(&r->hour, memory_order_acquire);

	ring_read(r->minute_req, KV_HIST_MINUTES, m, now / 60, req_min);
	ring_read(r->minute_err, KV_HIST_MINUTES, m, now / 60, err_min);
	ring_read(r->hour_req, KV_HIST_HOURS, h, now / 3600, req_hour);
	ring_read(r->hour_err, KV_HIST_HOURS, h, now / 3600, err_hour);
}

static void
series_json(FILE *f, const char *name, const int64_t *v, int n)
{
	int i;

	fprintf(f, ",\"%s\":[", name);
	for (i = 0; i < n; i++)
		fprintf(f, "%s%" PRId64, i ? "," : "", v[i]);
	fputc(']', f);
}

void
kv_history_json(FILE *f, const struct kv_ledger *l, int64_t now)
{
	const struct kv_account **v;
	int64_t mins[KV_HIST_MINUTES], hours[KV_HIST_HOURS];
	char id[13], label[KV_LABEL_MAX];
	size_t i, n;

	n = kv_report_sorted_accounts(l, &v);
	fputs(",\"history\":[", f);
	for (i = 0; i < n; i++) {
		kv_key_id(v[i]->hash, id);
		memcpy(label, v[i]->label, sizeof(label));
		label[sizeof(label) - 1] = '\0';
		fprintf(f, "%s{\"id\":\"%s\",\"label\":", i ? "," : "", id);
		if (label[0] != '\0')
			kv_json_write_string(f, label);
		else
			fputs("null", f);
		kv_history_read(l, v[i], now, mins, hours);
		series_json(f, "minute_nusd", mins, KV_HIST_MINUTES);
		series_json(f, "hour_nusd", hours, KV_HIST_HOURS);
		fputc('}', f);
	}
	fputc(']', f);
	free(v);
}
