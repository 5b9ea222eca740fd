/* Unit tests of the WebSocket handshake and events kilovolt reads
 * (worker/ws_upgrade.c, worker/ws_event.c): which upgrades are relayed,
 * the subprotocol key, the client events' turn and session facts, and the
 * server events' type sniffed at every split; the masking keys of the
 * frames kilovolt writes upstream (worker/ws_maskkey.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/http.h"
#include "tests/unit.h"
#include "worker/ws_event.h"
#include "worker/ws_maskkey.h"
#include "worker/ws_upgrade.h"

static struct kv_http_request req;

/* Parse HEAD into req; 1 when it parsed whole. */
static int
head(const char *h)
{
	const char *reason;
	int status;

	return kv_http_parse_request(h, strlen(h), &req, &status, &reason) > 0;
}

#define UPG "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " \
	"dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"

static void
test_upgrade_kind(void)
{
	const char *why = NULL;
	char rest[64];
	size_t kl = 0;
	const char *k;

	CHECK(head("GET /v1/responses HTTP/1.1\r\nHost: x\r\n" UPG "\r\n"));
	CHECK_INT(kv_ws_upgrade_kind(&req, "/v1/responses", &why), KV_WSK_RESPONSES);
	CHECK(head("GET /v1/realtime?model=gpt-realtime HTTP/1.1\r\nHost: x\r\n" UPG
	    "Sec-WebSocket-Protocol: realtime, openai-insecure-api-key.sk-abc, "
	    "openai-beta.realtime-v1\r\n\r\n"));
	CHECK_INT(kv_ws_upgrade_kind(&req, "/v1/realtime?model=gpt-realtime", &why), KV_WSK_REALTIME);
	k = kv_ws_proto_key(&req, &kl);
	CHECK(k != NULL && kl == 6 && memcmp(k, "sk-abc", 6) == 0);
	CHECK_INT(kv_ws_proto_rest(&req, rest, sizeof(rest)), 33);
	CHECK_STR(rest, "realtime, openai-beta.realtime-v1");
	CHECK_INT(kv_ws_proto_rest(&req, rest, 10), -1);
	/* no upgrade, or another protocol: not ours */
	CHECK(head("GET /v1/responses HTTP/1.1\r\nHost: x\r\n\r\n"));
	CHECK_INT(kv_ws_upgrade_kind(&req, "/v1/responses", &why), KV_WSK_NONE);
	CHECK_INT(kv_ws_proto_key(&req, &kl) == NULL, 1);
	CHECK(head("GET /v1/responses HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\n"
	    "Connection: Upgrade\r\n\r\n"));
	CHECK_INT(kv_ws_upgrade_kind(&req, "/v1/responses", &why), KV_WSK_NONE);
	/* refused: another path, POST, no key, version 8, two keys */
	CHECK(head("GET /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" UPG "\r\n"));
	CHECK_INT(kv_ws_upgrade_kind(&req, "/v1/chat/completions", &why), -1);
	CHECK(head("POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n" UPG "\r\n"));
	CHECK_INT(kv_ws_upgrade_kind(&req, "/v1/responses", &why), -1);
	CHECK(head("GET /v1/responses HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
	    "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n"));
	CHECK_INT(kv_ws_upgrade_kind(&req, "/v1/responses", &why), -1);
	CHECK(head("GET /v1/responses HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
	    "Connection: Upgrade\r\nSec-WebSocket-Key: a\r\nSec-WebSocket-Version: 8\r\n\r\n"));
	CHECK_INT(kv_ws_upgrade_kind(&req, "/v1/responses", &why), -1);
	CHECK(head("GET /v1/responses HTTP/1.1\r\nHost: x\r\n" UPG "Sec-WebSocket-Key: b\r\n\r\n"));
	CHECK_INT(kv_ws_upgrade_kind(&req, "/v1/responses", &why), -1);
}

static void
test_headers(void)
{
	struct kv_http_header h = { .name = "Sec-WebSocket-Extensions", .name_len = 24 };
	struct kv_http_response res;
	const char *reason;
	static const char ok[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
	    "Connection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
	static const char ext[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
	    "Connection: Upgrade\r\nSec-WebSocket-Accept: x\r\n"
	    "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n";

	CHECK_INT(kv_ws_header_passes(&h), 0);
	h.name = "Sec-WebSocket-Protocol";
	h.name_len = 22;
	CHECK_INT(kv_ws_header_passes(&h), 0);
	h.name = "OpenAI-Beta";
	h.name_len = 11;
	CHECK_INT(kv_ws_header_passes(&h), 1);
	CHECK(kv_http_parse_response(ok, sizeof(ok) - 1, &res, &reason) > 0);
	CHECK_INT(kv_ws_accept_ok(&res), 1);
	CHECK(kv_http_parse_response(ext, sizeof(ext) - 1, &res, &reason) > 0);
	CHECK_INT(kv_ws_accept_ok(&res), 0);
}

static void
client_event(const char *json, int ret, enum kv_ws_cev_kind kind, const char *model,
    int64_t max_output, int64_t session_max, int auto_resp)
{
	struct kv_ws_cev ev;

	CHECK_INT(kv_ws_client_event(json, strlen(json), &ev), ret);
	if (ret != 0)
		return;
	CHECK_INT(ev.kind, kind);
	CHECK_STR(ev.model, model);
	CHECK_INT(ev.max_output, max_output);
	CHECK_INT(ev.session_max, session_max);
	CHECK_INT(ev.auto_resp, auto_resp);
}

static void
test_client_events(void)
{
	/* Responses: the body's members at the top level, type anywhere */
	client_event("{\"model\":\"gpt-5-codex\",\"input\":[{\"type\":\"message\"}],"
	    "\"type\":\"response.create\",\"max_output_tokens\":300,\"generate\":false}",
	    0, KV_WS_CEV_CREATE, "gpt-5-codex", 300, -1, 0);
	/* Realtime: in "response"; "inf" is no bound */
	client_event("{\"type\":\"response.create\",\"response\":{\"max_output_tokens\":\"inf\","
	    "\"output_modalities\":[\"audio\"]}}", 0, KV_WS_CEV_CREATE, "", KV_WS_INF, -1, 0);
	client_event("{\"type\":\"response.create\"}", 0, KV_WS_CEV_CREATE, "", -1, -1, 0);
	/* session.update: the bound, the model, turn detection (GA and beta) */
	client_event("{\"type\":\"session.update\",\"session\":{\"model\":\"gpt-realtime\","
	    "\"max_output_tokens\":200,\"audio\":{\"input\":{\"turn_detection\":null}}}}",
	    0, KV_WS_CEV_SESSION, "gpt-realtime", -1, 200, -1);
	client_event("{\"type\":\"session.update\",\"session\":{\"turn_detection\":"
	    "{\"type\":\"server_vad\"},\"max_response_output_tokens\":\"inf\"}}",
	    0, KV_WS_CEV_SESSION, "", -1, KV_WS_INF, 1);
	client_event("{\"type\":\"session.update\",\"session\":{\"turn_detection\":"
	    "{\"type\":\"server_vad\",\"create_response\":false}}}",
	    0, KV_WS_CEV_SESSION, "", -1, -1, -1);
	/* anything else is relayed as it is; a non-object is unreadable */
	client_event("{\"type\":\"input_audio_buffer.append\",\"audio\":\"AAAA\"}", 0,
	    KV_WS_CEV_OTHER, "", -1, -1, 0);
	client_event("[1]", -1, KV_WS_CEV_OTHER, "", -1, -1, 0);
	client_event("{\"type\":\"response.create\",", -1, KV_WS_CEV_OTHER, "", -1, -1, 0);
	client_event("{\"type\":\"response.create\"} x", -1, KV_WS_CEV_OTHER, "", -1, -1, 0);
}

/* A response.create's server tools, as the HTTP body's scan tells them. */
static void
test_tools(void)
{
	static const char j[] = "{\"type\":\"response.create\",\"tools\":[{\"type\":"
	    "\"function\",\"name\":\"shell\"},{\"type\":\"web_search\"},{\"type\":"
	    "\"file_search\"},7],\"max_tool_calls\":3}";
	struct kv_ws_cev ev;

	CHECK_INT(kv_ws_client_event(j, sizeof(j) - 1, &ev), 0);
	CHECK_INT(ev.server_tools, 2);
	CHECK_INT(ev.web_search, 1);
	CHECK_INT(ev.max_tool_calls, 3);
	CHECK_INT(kv_ws_client_event("{\"type\":\"response.create\",\"tools\":[]}", 37, &ev), 0);
	CHECK_INT(ev.server_tools, 0);
	CHECK_INT(ev.max_tool_calls, -1);
}

/* The type sniffed from S whole and split at every point. */
static void
sniffed(const char *s, const char *want)
{
	struct kv_ws_sniff sn;
	size_t n = strlen(s), cut;
	int bad = 0;

	for (cut = 0; cut <= n; cut++) {
		kv_ws_sniff_init(&sn);
		kv_ws_sniff_feed(&sn, (const uint8_t *)s, cut);
		kv_ws_sniff_feed(&sn, (const uint8_t *)s + cut, n - cut);
		bad += strcmp(kv_ws_sniff_type(&sn), want) != 0;
	}
	CHECK_INT(bad, 0);
}

static void
test_sniff(void)
{
	sniffed("{\"type\":\"response.completed\",\"response\":{\"usage\":{}}}",
	    "response.completed");
	sniffed("{\"event_id\":\"evt_1\", \"response\":{\"type\":\"x\"},\n \"type\" : "
	    "\"response.done\"}", "response.done");
	sniffed("{\"a\":[\"type\",{\"type\":\"no\"}],\"ty\\u0070e\":\"no\",\"type\":\"error\"}",
	    "error");
	sniffed("{\"delta\":\"he said \\\"type\\\":\\\"x\\\"\",\"type\":\"d\"}", "d");
	sniffed("{\"type\":1}", "");
	sniffed("{\"type\":\"a-type-of-fifty-bytes-or-more-is-not-one-of-ours-x\"}", "");
}

static int
cmp_key(const void *a, const void *b)
{
	return memcmp(a, b, 4);
}

/* Fresh keys: 2,048 of them (eight refills of the pool) all but a few
 * distinct (a birthday collision in 2^32 is possible, rarely), none the
 * one before; and a forked child draws its own, not its parent's next. */
static void
test_maskkey(void)
{
	static uint8_t k[2048][4];
	uint8_t mine[4], theirs[4] = { 0 };
	int i, same = 0, fd[2], st;
	pid_t pid;

	for (i = 0; i < 2048; i++) {
		kv_ws_maskkey(k[i]);
		if (i > 0 && memcmp(k[i], k[i - 1], 4) == 0)
			same++;
	}
	CHECK_INT(same, 0);
	qsort(k, 2048, 4, cmp_key);
	for (i = 1; i < 2048; i++)
		same += memcmp(k[i], k[i - 1], 4) == 0;
	CHECK(same <= 2);
	kv_ws_maskkey(mine);	/* the pool part used at the fork */
	CHECK(pipe(fd) == 0);
	if ((pid = fork()) == 0) {
		kv_ws_maskkey(mine);
		_exit(write(fd[1], mine, 4) == 4 ? 0 : 1);
	}
	CHECK(pid > 0);
	kv_ws_maskkey(mine);
	CHECK(read(fd[0], theirs, 4) == 4);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(memcmp(mine, theirs, 4) != 0);
	close(fd[0]);
	close(fd[1]);
}

int
main(void)
{
	test_upgrade_kind();
	test_headers();
	test_client_events();
	test_tools();
	test_sniff();
	test_maskkey();
	return unit_done();
}
