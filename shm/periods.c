/* Budget periods: the civil calendar's period starts (UTC, no libc time
 * zone), an account's period, and its roll to a new one. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/ledger.h"
#include "shm/ledger-int.h"
#include "shm/keys.h"

#include <stdint.h>

static int64_t
floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's
 * days_from_civil), and its inverse for the year and month. */
static int64_t
days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = floor_div(y, 400);
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void
civil_from_days(int64_t z, int64_t *y, unsigned *m)
{
	int64_t era, doe, yoe, doy, mp;

	z += 719468;
	era = floor_div(z, 146097);
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

int64_t
kv_period_start(enum kv_period period, int64_t now)
{
	int64_t days = floor_div(now, 86400), y;
	unsigned m;

	switch (period) {
	case KV_PERIOD_DAILY:
		return days * 86400;
	case KV_PERIOD_WEEKLY:
		/* 1970-01-01 was a Thursday: day 0 is weekday 3 counting from Monday. */
		return (days - ((days + 3) % 7 + 7) % 7) * 86400;
	case KV_PERIOD_MONTHLY:
		civil_from_days(days, &y, &m);
		return days_from_civil(y, m, 1) * 86400;
	case KV_PERIOD_NONE:
	default:
		return 0;
	}
}

int64_t
kv_account_period(const struct kv_account *a)
{
	int64_t ps = atomic_load(&a->period_start);

	return ps < 0 ? -ps : ps;
}

void
kv_ledger_period_roll(struct kv_ledger *l, struct kv_account *a,
    enum kv_period period, int64_t now)
{
	int64_t start, ps;

	period = kv_keys_period(a, period);	/* an issued key's own --period */
	if (period == KV_PERIOD_NONE)
		return;
	start = kv_period_start(period, now);
	/* Fast path, outside the bracket: nothing to roll. A negative value
	 * (a roll under way) compares as current. */
	ps = atomic_load(&a->period_start);
	if (ps >= start || ps < 0)
		return;
	op_enter(l);
	while (ps >= 0 && ps < start) {
		if (!atomic_compare_exchange_weak(&a->period_start, &ps, -start))
			continue;
		/* A cluster lease is the old period's: cap first, so no
		 * admission sees the cleared spent under the old cap. */
		atomic_store(&a->lease_cap_nusd, 0);
		(void)atomic_exchange(&a->spent_nusd, KV_SPENT_ROLLED);
		atomic_store(&a->period_start, start);
		atomic_fetch_and(&a->spent_nusd, ~KV_SPENT_ROLLED);
		break;
	}
	op_leave(l);
}

int
kv_ledger_roll_finish(struct kv_account *a)
{
	int64_t ps = atomic_load(&a->period_start);

	if (ps < 0) {
		/* Stopped after step 1 or 2: the old spend is still there
		 * (the bit is not set) and goes now; after 3 it went already. */
		atomic_store(&a->lease_cap_nusd, 0);
		if (!(atomic_load(&a->spent_nusd) & KV_SPENT_ROLLED))
			atomic_store(&a->spent_nusd, 0);
		atomic_fetch_and(&a->spent_nusd, ~KV_SPENT_ROLLED);
		atomic_store(&a->period_start, -ps);
		return 1;
	}
	if (atomic_load(&a->spent_nusd) & KV_SPENT_ROLLED) {	/* after 4 */
		atomic_fetch_and(&a->spent_nusd, ~KV_SPENT_ROLLED);
		return 1;
	}
	return 0;
}
