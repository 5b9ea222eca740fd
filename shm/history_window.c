/* A report's window over the spend history: see history_window.h. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/history_window.h"

#include "shm/history.h"

int
kv_history_window(int64_t now, int64_t since, int64_t until, struct kv_hist_window *w)
{
	int64_t lo, hi, cur;

	if (since < 0 || since > now || until <= since)
		return -2;
	w->step = since / 60 > now / 60 - KV_HIST_MINUTES ? 60 : 3600;
	cur = now / w->step;
	lo = since / w->step;
	if (lo <= cur - (w->step == 60 ? KV_HIST_MINUTES : KV_HIST_HOURS))
		return -1;
	hi = until / w->step + (until % w->step != 0);
	if (hi > cur + 1)
		hi = cur + 1;
	w->from = lo * w->step;
	w->to = hi * w->step;
	return 0;
}

int64_t
kv_history_window_spent(const struct kv_ledger *l, const struct kv_account *a, int64_t now,
    const struct kv_hist_window *w)
{
	int64_t mins[KV_HIST_MINUTES], hours[KV_HIST_HOURS], sum = 0, u, first;
	const int64_t *ring = w->step == 60 ? mins : hours;
	int n = w->step == 60 ? KV_HIST_MINUTES : KV_HIST_HOURS;

	kv_history_read(l, a, now, mins, hours);
	first = now / w->step - (n - 1);	/* ring[0]'s bucket */
	for (u = w->from / w->step; u < w->to / w->step; u++)
		if (u >= first && u < first + n)
			sum += ring[u - first];
	return sum;
}
