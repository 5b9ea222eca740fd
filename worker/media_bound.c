/* Image header readers and the providers' image-token rules. See
 * media_bound.h.
 *
 * Sources (read 2026-12-02):
 *  OpenAI, "Images and vision", Calculating costs:
 *   https://platform.openai.com/docs/guides/images-vision#calculating-costs
 *   tile models: fit in 2048x2048, then the shortest side scaled to 768
 *   (never up), 512px tiles, base + tile x tiles; detail low = base only.
 *   patch models: 32px patches, at most 1536, times the model's multiplier.
 *  Anthropic, "Vision", Evaluate image size:
 *   https://docs.anthropic.com/en/docs/build-with-claude/vision
 *   tokens = (width x height) / 750; a long edge past 1568px or more than
 *   ~1.15 megapixels is scaled down first: at most ~1,600 tokens an image.
 * Every figure here rounds up: the result is a bound, not an estimate. */
#include "worker/media_bound.h"

#include <string.h>

static uint32_t
be16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

static uint32_t
be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint32_t
le16(const uint8_t *p)
{
	return (uint32_t)p[1] << 8 | p[0];
}

static uint32_t
le24(const uint8_t *p)
{
	return (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/* SOF0..SOF15 but DHT (C4), JPG (C8) and DAC (CC) carry the frame size. */
static int
jpeg_sof(uint8_t m)
{
	return m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc;
}

/* Walk the marker segments up to the first frame header. */
static int
jpeg_dims(const uint8_t *p, size_t n, uint32_t *w, uint32_t *h)
{
	size_t i = 2, len;
	uint8_t m;

	while (i + 1 < n) {
		if (p[i] != 0xff)
			return -1;
		m = p[i + 1];
		if (m == 0xff) {	/* fill byte */
			i++;
			continue;
		}
		i += 2;
		if (m == 0x01 || (m >= 0xd0 && m <= 0xd8))
			continue;	/* no length */
		if (m == 0xd9 || m == 0xda || i + 2 > n)
			return -1;	/* image data before any frame header */
		len = be16(p + i);
		if (len < 2)
			return -1;
		if (jpeg_sof(m)) {
			if (i + 7 > n || len < 7)
				return -1;
			*h = be16(p + i + 3);
			*w = be16(p + i + 5);
			return 0;
		}
		i += len;
	}
	return -1;
}

static int
webp_dims(const uint8_t *p, size_t n, uint32_t *w, uint32_t *h)
{
	if (n < 30)
		return -1;
	if (memcmp(p + 12, "VP8 ", 4) == 0) {
		if (p[23] != 0x9d || p[24] != 0x01 || p[25] != 0x2a)
			return -1;
		*w = le16(p + 26) & 0x3fff;
		*h = le16(p + 28) & 0x3fff;
		return 0;
	}
	if (memcmp(p + 12, "VP8L", 4) == 0) {
		uint32_t b = (uint32_t)p[21] | (uint32_t)p[22] << 8 |
		    (uint32_t)p[23] << 16 | (uint32_t)p[24] << 24;

		if (p[20] != 0x2f)
			return -1;
		*w = (b & 0x3fff) + 1;
		*h = ((b >> 14) & 0x3fff) + 1;
		return 0;
	}
	if (memcmp(p + 12, "VP8X", 4) == 0) {
		*w = le24(p + 24) + 1;
		*h = le24(p + 27) + 1;
		return 0;
	}
	return -1;
}

int
kv_media_is_image(const uint8_t *p, size_t n)
{
	return (n >= 8 && memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0) ||
	    (n >= 6 && (memcmp(p, "GIF87a", 6) == 0 || memcmp(p, "GIF89a", 6) == 0)) ||
	    (n >= 12 && memcmp(p, "RIFF", 4) == 0 && memcmp(p + 8, "WEBP", 4) == 0) ||
	    (n >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff);
}

int
kv_media_image_dims(const uint8_t *p, size_t n, uint32_t *w, uint32_t *h)
{
	int rc = -1;

	*w = *h = 0;
	if (!kv_media_is_image(p, n))
		return -1;
	if (p[0] == 0x89) {
		if (n >= 24 && memcmp(p + 12, "IHDR", 4) == 0) {
			*w = be32(p + 16);
			*h = be32(p + 20);
			rc = 0;
		}
	} else if (p[0] == 'G') {
		if (n >= 10) {
			*w = le16(p + 6);
			*h = le16(p + 8);
			rc = 0;
		}
	} else if (p[0] == 'R')
		rc = webp_dims(p, n, w, h);
	else
		rc = jpeg_dims(p, n, w, h);
	if (rc == -1 || *w == 0 || *h == 0) {
		*w = *h = 0;
		return -1;
	}
	return 0;
}

/* ceil() for the positive values here, without libm */
static double
up(double x)
{
	double t = (double)(int64_t)x;

	return t < x ? t + 1 : t;
}

static const struct {
	int64_t	base, tile;	/* tile rules */
	double	mult;		/* patch rules (base 0) */
} rules[KV_IMG_NRULES] = {
	[KV_IMG_TILE_4O] = { 85, 170, 0 },
	[KV_IMG_TILE_4O_MINI] = { 2833, 5667, 0 },
	[KV_IMG_TILE_O] = { 75, 150, 0 },
	[KV_IMG_TILE_5] = { 70, 140, 0 },
	[KV_IMG_TILE_CUA] = { 65, 129, 0 },
	[KV_IMG_PATCH_162] = { 0, 0, 1.62 },
	[KV_IMG_PATCH_246] = { 0, 0, 2.46 },
	[KV_IMG_PATCH_172] = { 0, 0, 1.72 },
};

#define ANTHROPIC_MAX	1600	/* "~1,600 tokens" for the largest image */
#define PATCH_MAX	1536

static int64_t
tile_tokens(int r, double w, double h)
{
	double s;
	int64_t tiles;

	if (w > 2048 || h > 2048) {
		s = 2048 / (w > h ? w : h);
		w *= s;
		h *= s;
	}
	if ((w < h ? w : h) > 768) {
		s = 768 / (w < h ? w : h);
		w *= s;
		h *= s;
	}
	tiles = (int64_t)up(w / 512 - 1e-9) * (int64_t)up(h / 512 - 1e-9);
	if (tiles > 8)		/* 768 x 2048 is the most: 2 x 4 */
		tiles = 8;
	return rules[r].base + rules[r].tile * tiles;
}

int64_t
kv_media_image_tokens(enum kv_img_rule rule, uint32_t w, uint32_t h)
{
	double patches, t;

	if ((int)rule < 0 || rule >= KV_IMG_NRULES)
		return 0;
	if (rule == KV_IMG_ANTHROPIC) {
		if (w == 0)
			return ANTHROPIC_MAX;
		t = up((double)w * (double)h / 750);
		return t > ANTHROPIC_MAX ? ANTHROPIC_MAX : (int64_t)t;
	}
	if (rules[rule].tile > 0)
		return w == 0 ? rules[rule].base + rules[rule].tile * 8 :
		    tile_tokens(rule, w, h);
	patches = w == 0 ? PATCH_MAX : up(w / 32.0) * up(h / 32.0);
	if (patches > PATCH_MAX)
		patches = PATCH_MAX;
	return (int64_t)up(patches * rules[rule].mult);
}

/* Longest prefix first: "gpt-4o-mini" before "gpt-4o". */
static const struct {
	const char	*prefix;
	int		 rule;
} families[] = {
	{ "gpt-4o-mini", KV_IMG_TILE_4O_MINI }, { "gpt-4.1-mini", KV_IMG_PATCH_162 },
	{ "gpt-4.1-nano", KV_IMG_PATCH_246 }, { "gpt-5-mini", KV_IMG_PATCH_162 },
	{ "gpt-5-nano", KV_IMG_PATCH_246 }, { "o4-mini", KV_IMG_PATCH_172 },
	{ "computer-use-preview", KV_IMG_TILE_CUA }, { "gpt-4o", KV_IMG_TILE_4O },
	{ "gpt-4.1", KV_IMG_TILE_4O }, { "gpt-4.5", KV_IMG_TILE_4O },
	{ "gpt-5", KV_IMG_TILE_5 }, { "o1", KV_IMG_TILE_O }, { "o3", KV_IMG_TILE_O },
};

int
kv_media_rule_for(const char *model, int anthropic)
{
	size_t i;

	/* Bedrock's ids for Claude, on any of its APIs: anthropic.claude-...,
	 * us.anthropic.claude-..., an ARN ending in either */
	if (anthropic || strstr(model, "anthropic.claude") != NULL)
		return KV_IMG_ANTHROPIC;
	for (i = 0; i < sizeof(families) / sizeof(families[0]); i++)
		if (strncmp(model, families[i].prefix, strlen(families[i].prefix)) == 0)
			return families[i].rule;
	return -1;
}
