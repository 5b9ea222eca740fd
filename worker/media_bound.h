/* Upper bounds of what a provider bills for an inline image: its size read
 * from the image's own header (PNG, JPEG, GIF, WebP: read, never decoded),
 * priced by each provider's published rule. Pure functions, no state. */
#ifndef KV_MEDIA_BOUND_H
#define KV_MEDIA_BOUND_H

#include <stddef.h>
#include <stdint.h>

/* The image-token rules (media_bound.c says where each is published). */
enum kv_img_rule {
	KV_IMG_TILE_4O,		/* gpt-4o, gpt-4.1, gpt-4.5: 85 + 170/tile */
	KV_IMG_TILE_4O_MINI,	/* gpt-4o-mini: 2833 + 5667/tile */
	KV_IMG_TILE_O,		/* o1, o1-pro, o3: 75 + 150/tile */
	KV_IMG_TILE_5,		/* gpt-5, gpt-5-chat: 70 + 140/tile */
	KV_IMG_TILE_CUA,	/* computer-use-preview: 65 + 129/tile */
	KV_IMG_PATCH_162,	/* gpt-4.1-mini, gpt-5-mini: 32px patches x 1.62 */
	KV_IMG_PATCH_246,	/* gpt-4.1-nano, gpt-5-nano: x 2.46 */
	KV_IMG_PATCH_172,	/* o4-mini: x 1.72 */
	KV_IMG_ANTHROPIC,	/* Claude: (w x h) / 750 after its resize */
	KV_IMG_NRULES
};

/* Read an image's width and height from the first n bytes of the file.
 * Returns 0 with *w, *h (both > 0), or -1 when the bytes are no PNG, GIF,
 * WebP or JPEG header that states them within n bytes. */
int	kv_media_image_dims(const uint8_t *p, size_t n, uint32_t *w, uint32_t *h);

/* 1 when the bytes start with the magic of an image format read above. */
int	kv_media_is_image(const uint8_t *p, size_t n);

/* Tokens RULE bills for a w x h image at most (high detail); w == 0 means
 * the size is unknown: the most RULE bills for any image. */
int64_t	kv_media_image_tokens(enum kv_img_rule rule, uint32_t w, uint32_t h);

/* The rule for MODEL (an OpenAI name unless anthropic; a Bedrock id of a
 * Claude model is Anthropic's on any API), or -1 when no published rule is
 * known for it (then the dearest of all applies). */
int	kv_media_rule_for(const char *model, int anthropic);

#endif
