/* The strict streaming JSON validator (RFC 8259). See jsonv.h; the scan
 * loop is in jsonv_feed.h. */
#include "worker/jsonv.h"

/* Events go to the caller's callback, if any. */
#define JV_EMIT(f, ev, level, p, n) do {					\
	if ((f)->cb != NULL)							\
		(f)->cb((f)->arg, ev, level, (f)->v->off, p, n);		\
} while (0)
#include "worker/jsonv_feed.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

void
kv_jv_init(struct kv_jv *v)
{
	memset(v, 0, offsetof(struct kv_jv, err));	/* err: its bytes are as good */
	v->err[0] = '\0';
	v->state = S_START;
}

int
kv_jv_feed(struct kv_jv *v, const char *buf, size_t len, kv_jv_cb cb, void *arg)
{
	return jv_feed(v, buf, len, cb, arg);
}

int
kv_jv_finish(struct kv_jv *v)
{
	if (v->state == S_ERR)
		return -1;
	if (v->state == S_END)
		return 0;
	if (v->state == S_NUM && v->depth == 0 &&
	    (v->nstate == N_ZERO || v->nstate == N_INT || v->nstate == N_FRAC ||
	    v->nstate == N_EXP))
		return 0;
	snprintf(v->err, sizeof(v->err), v->state == S_START ? "the body is empty" :
	    "the body ends inside the JSON value (byte %llu)", (unsigned long long)v->off);
	v->state = S_ERR;
	return -1;
}
