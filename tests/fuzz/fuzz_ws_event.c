/* libFuzzer target: the WebSocket events and handshake kilovolt reads
 * (worker/ws_event.c, worker/ws_upgrade.c). A client event is read whole:
 * any bytes, no crash, limits within their range. A server event's type
 * is sniffed as its bytes go by: the type found must not depend on where
 * the reads split it (whole, cut at a point from the input, byte by byte).
 * The input is also parsed as a request head and its upgrade checked. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/http.h"
#include "worker/ws_event.h"
#include "worker/ws_upgrade.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
sniff_split(const uint8_t *data, size_t size)
{
	struct kv_ws_sniff whole, cut, bytes;
	size_t at = size > 0 ? data[0] % (size + 1) : 0, i;

	kv_ws_sniff_init(&whole);
	kv_ws_sniff_feed(&whole, data, size);
	kv_ws_sniff_init(&cut);
	kv_ws_sniff_feed(&cut, data, at);
	kv_ws_sniff_feed(&cut, data + at, size - at);
	kv_ws_sniff_init(&bytes);
	for (i = 0; i < size; i++)
		kv_ws_sniff_feed(&bytes, data + i, 1);
	if (strlen(kv_ws_sniff_type(&whole)) >= KV_WS_TYPE_MAX ||
	    strcmp(kv_ws_sniff_type(&whole), kv_ws_sniff_type(&cut)) != 0 ||
	    strcmp(kv_ws_sniff_type(&whole), kv_ws_sniff_type(&bytes)) != 0)
		abort();
}

static void
upgrade(const uint8_t *data, size_t size)
{
	static struct kv_http_request req;
	const char *why, *reason, *k;
	char target[1024], rest[256];
	size_t kl;
	int status, r;

	if (kv_http_parse_request((const char *)data, size, &req, &status, &reason) <= 0)
		return;
	if (req.target_len >= sizeof(target))
		return;
	memcpy(target, req.target, req.target_len);
	target[req.target_len] = '\0';
	r = kv_ws_upgrade_kind(&req, target, &why);
	if (r < -1 || r > KV_WSK_REALTIME)
		abort();
	if ((k = kv_ws_proto_key(&req, &kl)) != NULL &&
	    (kl == 0 || k < (const char *)data || k + kl > (const char *)data + size))
		abort();
	r = kv_ws_proto_rest(&req, rest, sizeof(rest));
	if (r >= (int)sizeof(rest) || (r >= 0 && strlen(rest) != (size_t)r))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kv_ws_cev ev;
	char *copy;

	/* an exact-size copy: ASan sees a read past its end */
	if ((copy = malloc(size + 1)) == NULL)
		abort();
	memcpy(copy, data, size);
	if (kv_ws_client_event(copy, size, &ev) == 0 &&
	    (ev.max_output < -1 || ev.session_max < -1 || ev.auto_resp < -1 ||
	    ev.auto_resp > 1 || strlen(ev.model) >= KV_WS_MODEL_MAX))
		abort();
	free(copy);
	sniff_split(data, size);
	upgrade(data, size);
	return 0;
}
