/* The cluster lease words of an account; see lease.h. */
#include "shm/lease.h"

#include "shm/ledger.h"

static _Atomic int64_t *
rate_cap(struct kv_account *a, enum kv_lease_rate r)
{
	return r == KV_LEASE_REQUESTS ? &a->rl_req_cap : &a->rl_tok_cap;
}

static int64_t
word_lower(_Atomic int64_t *w, int64_t v)
{
	int64_t cur = atomic_load(w);

	while (cur > v && !atomic_compare_exchange_weak(w, &cur, v))
		;
	return cur > v ? v : cur;
}

int64_t
kv_lease_cap_lower(struct kv_account *a, int64_t v)
{
	return word_lower(&a->lease_cap_nusd, v);
}

int
kv_lease_cap_grant(struct kv_account *a, int64_t *expect, int64_t v)
{
	return atomic_compare_exchange_strong(&a->lease_cap_nusd, expect, v);
}

int64_t
kv_lease_rate_cap(struct kv_account *a, enum kv_lease_rate r)
{
	return atomic_load(rate_cap(a, r));
}

int64_t
kv_lease_rate_cap_lower(struct kv_account *a, enum kv_lease_rate r, int64_t v)
{
	return word_lower(rate_cap(a, r), v);
}

int
kv_lease_rate_grant(struct kv_account *a, enum kv_lease_rate r, int64_t *expect, int64_t v,
    int64_t tat_ns)
{
	int set = atomic_compare_exchange_strong(rate_cap(a, r), expect, v);

	atomic_store(r == KV_LEASE_REQUESTS ? &a->rpm_tat : &a->tpm_tat, tat_ns);
	return set;
}

void
kv_lease_open(struct kv_account *a, int64_t open)
{
	atomic_store(&a->lease_cap_nusd, open);
	atomic_store(&a->rl_req_cap, open);
	atomic_store(&a->rl_tok_cap, open);
}

int64_t
kv_lease_need_take(struct kv_account *a)
{
	return atomic_exchange(&a->lease_need_nusd, 0);
}

int64_t
kv_lease_rate_need_take(struct kv_account *a)
{
	return atomic_exchange(&a->rl_need, 0);
}

void
kv_lease_view_set(struct kv_account *a, int64_t others, int64_t cluster_spent,
    int64_t expires_ms)
{
	atomic_store(&a->cluster_other_nusd, others);
	atomic_store(&a->cluster_spent_nusd, cluster_spent);
	atomic_store(&a->lease_expires_ms, expires_ms);
}

int
kv_lease_budget_adopt(struct kv_account *a, int64_t *expect, int64_t v)
{
	return atomic_compare_exchange_strong(&a->budget_nusd, expect, v);
}

void
kv_lease_base_add(struct kv_account *a, int64_t x)
{
	atomic_fetch_add(&a->cluster_base_nusd, x);
}

void
kv_lease_base_clear(struct kv_account *a)
{
	atomic_store(&a->cluster_base_nusd, 0);
}

int64_t
kv_lease_zero_follow(struct kv_account *a, int64_t zero)
{
	int64_t base = atomic_load(&a->cluster_base_nusd), spent = kv_account_spent(a), x;

	if (zero <= base || spent >= KV_SPENT_MAX)
		return 0;
	x = zero - base < spent ? zero - base : spent;
	if (x <= 0)
		return 0;
	(void)kv_lease_cap_lower(a, 0);
	atomic_fetch_sub(&a->spent_nusd, x);	/* beside KV_SPENT_ROLLED */
	atomic_fetch_add(&a->cluster_base_nusd, x);
	return x;
}

void
kv_lease_reset_ask(struct kv_account *a)
{
	atomic_fetch_or(&a->aflags, KV_AF_RESET);
}

void
kv_lease_reset_done(struct kv_account *a)
{
	atomic_fetch_and(&a->aflags, ~KV_AF_RESET);
}

int
kv_lease_reset_asked(const struct kv_account *a)
{
	return (atomic_load(&a->aflags) & KV_AF_RESET) != 0;
}
