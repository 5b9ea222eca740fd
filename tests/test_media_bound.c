/* Unit tests for the image header readers and the image-token rules
 * (worker/media_bound.c): sizes read from real header layouts, the figures
 * the providers' docs give, and the request scanner summing them. */
#include <stdint.h>
#include <string.h>

#include "worker/media_bound.h"
#include "worker/reqscan.h"
#include "tests/unit.h"

static void
put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static void
test_headers(void)
{
	uint8_t png[33] = "\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR";
	uint8_t gif[13] = "GIF89a\x40\x01\xf0\x00";
	uint8_t vp8[30] = "RIFF\0\0\0\0WEBPVP8 \0\0\0\0\0\0\0\x9d\x01\x2a\x00\x04\x00\x03";
	uint8_t vp8l[30] = "RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f";
	uint8_t vp8x[30] = "RIFF\0\0\0\0WEBPVP8X\0\0\0\0\0\0\0\0\xff\x07\0\xff\x03\0";
	uint8_t jpg[64] = { 0xff, 0xd8, 0xff, 0xe0, 0, 4, 0, 0, 0xff, 0xff, 0xc2, 0, 17, 8,
	    0x02, 0x58, 0x03, 0x20, 3 };
	uint32_t w, h, b;

	put_be32(png + 16, 2048);
	put_be32(png + 20, 1536);
	CHECK_INT(kv_media_image_dims(png, sizeof(png), &w, &h), 0);
	CHECK_INT(w, 2048);
	CHECK_INT(h, 1536);
	CHECK_INT(kv_media_image_dims(png, 20, &w, &h), -1);	/* cut short */
	CHECK_INT(kv_media_image_dims(gif, sizeof(gif), &w, &h), 0);
	CHECK_INT(w, 320);
	CHECK_INT(h, 240);
	CHECK_INT(kv_media_image_dims(vp8, sizeof(vp8), &w, &h), 0);
	CHECK_INT(w, 1024);
	CHECK_INT(h, 768);
	b = (1000 - 1) | (500 - 1) << 14;
	vp8l[21] = (uint8_t)b; vp8l[22] = (uint8_t)(b >> 8); vp8l[23] = (uint8_t)(b >> 16);
	vp8l[24] = (uint8_t)(b >> 24);
	CHECK_INT(kv_media_image_dims(vp8l, sizeof(vp8l), &w, &h), 0);
	CHECK_INT(w, 1000);
	CHECK_INT(h, 500);
	CHECK_INT(kv_media_image_dims(vp8x, sizeof(vp8x), &w, &h), 0);
	CHECK_INT(w, 2048);
	CHECK_INT(h, 1024);
	/* APP0 of length 4, a fill byte, then SOF2: 800 x 600 */
	CHECK_INT(kv_media_image_dims(jpg, sizeof(jpg), &w, &h), 0);
	CHECK_INT(w, 800);
	CHECK_INT(h, 600);
	jpg[10] = 0xda;		/* scan data before any frame header */
	CHECK_INT(kv_media_image_dims(jpg, sizeof(jpg), &w, &h), -1);
	CHECK_INT(kv_media_image_dims((const uint8_t *)"%PDF-1.7", 8, &w, &h), -1);
	CHECK_INT(kv_media_is_image((const uint8_t *)"GIF87a", 6), 1);
	CHECK_INT(kv_media_is_image((const uint8_t *)"hello", 5), 0);
}

static void
test_rules(void)
{
	/* OpenAI's examples: 1024 x 1024 high = 765 (gpt-4o); 2048 x 4096 = 1105 */
	CHECK_INT(kv_media_image_tokens(KV_IMG_TILE_4O, 1024, 1024), 765);
	CHECK_INT(kv_media_image_tokens(KV_IMG_TILE_4O, 2048, 4096), 1105);
	/* the row: 2048 x 2048 on gpt-4o-mini is 25,501 */
	CHECK_INT(kv_media_image_tokens(KV_IMG_TILE_4O_MINI, 2048, 2048), 25501);
	CHECK_INT(kv_media_image_tokens(KV_IMG_TILE_4O_MINI, 0, 0), 2833 + 8 * 5667);
	CHECK_INT(kv_media_image_tokens(KV_IMG_TILE_4O, 100, 100), 255);
	/* patches: 1024 x 1024 = 1024 patches x 1.62; the cap is 1536 */
	CHECK_INT(kv_media_image_tokens(KV_IMG_PATCH_162, 1024, 1024), 1659);
	CHECK_INT(kv_media_image_tokens(KV_IMG_PATCH_246, 4000, 4000), 3779);
	/* Anthropic: 1000 x 1000 = 1334, the largest ~1600 */
	CHECK_INT(kv_media_image_tokens(KV_IMG_ANTHROPIC, 1000, 1000), 1334);
	CHECK_INT(kv_media_image_tokens(KV_IMG_ANTHROPIC, 8000, 8000), 1600);
	CHECK_INT(kv_media_image_tokens(KV_IMG_ANTHROPIC, 0, 0), 1600);
	CHECK_INT(kv_media_rule_for("gpt-4o-mini-2024-07-18", 0), KV_IMG_TILE_4O_MINI);
	CHECK_INT(kv_media_rule_for("gpt-4o", 0), KV_IMG_TILE_4O);
	CHECK_INT(kv_media_rule_for("gpt-5-nano", 0), KV_IMG_PATCH_246);
	CHECK_INT(kv_media_rule_for("llama-3", 0), -1);
	CHECK_INT(kv_media_rule_for("claude-sonnet-4-5", 1), KV_IMG_ANTHROPIC);
	CHECK_INT(kv_media_rule_for("us.anthropic.claude-sonnet-4-20250514-v1:0", 0),
	    KV_IMG_ANTHROPIC);
	CHECK_INT(kv_media_rule_for("arn:aws:bedrock:us-east-1::foundation-model/"
	    "anthropic.claude-3-5-haiku-20241022-v1:0", 0), KV_IMG_ANTHROPIC);
	CHECK_INT(kv_media_rule_for("amazon.nova-pro-v1:0", 0), -1);
}

/* 2048 x 2048 PNG header, and an 800 x 600 JPEG, base64 */
#define PNG64 "iVBORw0KGgoAAAANSUhEUgAACAAAAAgACAYAAAAAAAAAAAAAAElFTkSuQmCC"
#define JPG64 "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAD/wAARCAJYAyADAAAAAAAAAAAA/9k="

static int
scan(const char *body, enum kv_api api, struct kv_reqscan *r)
{
	static struct kv_reqscan b;
	size_t i, n = strlen(body);
	int ok1, ok2;

	kv_reqscan_init(r, api);
	ok1 = kv_reqscan_feed(r, body, n) == 0 && kv_reqscan_finish(r) == 0;
	kv_reqscan_init(&b, api);
	for (ok2 = 1, i = 0; i < n && ok2; i++)
		ok2 = kv_reqscan_feed(&b, body + i, 1) == 0;
	ok2 = ok2 && kv_reqscan_finish(&b) == 0;
	CHECK_INT(ok1, ok2);
	if (ok1 && ok2)
		CHECK(memcmp(&b.ri, &r->ri, sizeof(r->ri)) == 0);
	return ok1 ? 0 : -1;
}

static void
test_scan(void)
{
	static struct kv_reqscan r;

	CHECK_INT(scan("{\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":\"user\",\"content\":["
	    "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64," PNG64 "\"}},"
	    "{\"type\":\"input_image\",\"image_url\":\"data:image/jpeg;base64," JPG64 "\"}]}]}",
	    KV_API_OPENAI_CHAT, &r), 0);
	CHECK_INT(r.ri.images, 2);
	CHECK_INT(r.ri.img_tok[KV_IMG_TILE_4O_MINI], 25501 + 2833 + 4 * 5667);
	CHECK_INT(r.ri.img_tok[KV_IMG_TILE_4O], 765 + 765);
	CHECK_STR(r.ri.fetches, "");
	/* Anthropic base64 source */
	CHECK_INT(scan("{\"model\":\"claude\",\"messages\":[{\"role\":\"user\",\"content\":["
	    "{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/jpeg\","
	    "\"data\":\"" JPG64 "\"}}]}]}", KV_API_ANTHROPIC_MESSAGES, &r), 0);
	CHECK_INT(r.ri.img_tok[KV_IMG_ANTHROPIC], 640);
	/* an image/ data URL whose header is unreadable: the most an image bills */
	CHECK_INT(scan("{\"messages\":[{\"content\":[{\"type\":\"image_url\",\"image_url\":"
	    "{\"url\":\"data:image/png;base64,AAAA\"}}]}]}", KV_API_OPENAI_CHAT, &r), 0);
	CHECK_INT(r.ri.img_tok[KV_IMG_TILE_4O_MINI], 2833 + 8 * 5667);
	/* an inline PDF: recall, never bytes */
	CHECK_INT(scan("{\"messages\":[{\"content\":[{\"type\":\"file\",\"file\":"
	    "{\"file_data\":\"data:application/pdf;base64,JVBERi0xLjcK\"}}]}]}",
	    KV_API_OPENAI_CHAT, &r), 0);
	CHECK_STR(r.ri.fetches, "an inline file (data: URL)");
	CHECK_INT(scan("{\"input\":[{\"type\":\"item_reference\",\"id\":\"msg_1\"}]}",
	    KV_API_OPENAI_RESPONSES, &r), 0);
	CHECK(r.ri.fetches[0] != '\0');
	/* legacy completions: 8 prompts x n 2 */
	CHECK_INT(scan("{\"prompt\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\"],\"n\":2}",
	    KV_API_OPENAI_COMPLETIONS, &r), 0);
	CHECK_INT(r.ri.mult, 16);
	CHECK_INT(scan("{\"prompt\":[[1,2],[3]],\"best_of\":3}", KV_API_OPENAI_COMPLETIONS, &r), 0);
	CHECK_INT(r.ri.mult, 6);
	CHECK_INT(scan("{\"prompt\":[1,2,3]}", KV_API_OPENAI_COMPLETIONS, &r), 0);
	CHECK_INT(r.ri.mult, 1);
	/* Anthropic's hidden tool prompts */
	CHECK_INT(scan("{\"model\":\"claude-sonnet-4\",\"tools\":[{\"type\":\"bash_20250124\","
	    "\"name\":\"bash\"},{\"type\":\"text_editor_20250728\",\"name\":\"e\"},"
	    "{\"type\":\"computer_20250124\",\"name\":\"computer\"}],\"messages\":[]}",
	    KV_API_ANTHROPIC_MESSAGES, &r), 0);
	CHECK_INT(r.ri.hidden, 530 + 245 + 700 + 735 + 499);
	CHECK_INT(scan("{\"tools\":[{\"name\":\"f\",\"input_schema\":{\"type\":\"object\"}}]}",
	    KV_API_ANTHROPIC_MESSAGES, &r), 0);
	CHECK_INT(r.ri.hidden, 530);
	CHECK_INT(scan("{\"tools\":[{\"type\":\"function\"}]}", KV_API_OPENAI_CHAT, &r), 0);
	CHECK_INT(r.ri.hidden, 0);
	/* where the client's include_usage false lies, to be overwritten */
	CHECK_INT(scan("{\"stream_options\":{\"include_usage\":false}}", KV_API_OPENAI_CHAT, &r), 0);
	CHECK_INT(r.ri.so_iu_off, 35);
	CHECK_INT(r.ri.so_iu_len, 5);
	CHECK_INT(scan("{\"stream_options\":{\"include_usage\":\"no\"}}", KV_API_OPENAI_CHAT, &r), -1);
	/* server tools: max_uses bound the loop */
	CHECK_INT(scan("{\"tools\":[{\"type\":\"web_search_20250305\",\"max_uses\":25},"
	    "{\"type\":\"code_execution_20250825\"},{\"name\":\"f\",\"input_schema\":{}}],"
	    "\"max_tool_calls\":7}", KV_API_ANTHROPIC_MESSAGES, &r), 0);
	CHECK_INT(r.ri.tool_uses, 25);
	CHECK_INT(r.ri.ws_uses, 25);
	CHECK_INT(r.ri.tools_unbounded, 1);
	CHECK_INT(r.ri.max_tool_calls, 7);
	CHECK(r.ri.fetches[0] != '\0');
	CHECK_INT(scan("{\"tools\":[{\"type\":\"web_search\",\"max_uses\":1.5}]}",
	    KV_API_OPENAI_RESPONSES, &r), -1);
	/* type-strict switches */
	CHECK_INT(scan("{\"background\":\"true\"}", KV_API_OPENAI_RESPONSES, &r), -1);
	CHECK_STR(r.err, "background must be true or false");
	CHECK_INT(scan("{\"background\":1}", KV_API_OPENAI_RESPONSES, &r), -1);
	CHECK_INT(scan("{\"store\":\"yes\"}", KV_API_OPENAI_RESPONSES, &r), -1);
	CHECK_INT(scan("{\"store\":false,\"background\":false}", KV_API_OPENAI_RESPONSES, &r), 0);
}

int
main(void)
{
	test_headers();
	test_rules();
	test_scan();
	return unit_done();
}
