/* The value grammars of kilovolt.ini that several keys share, documented
 * once in kilovolt.ini(5) (VALUES): durations and sizes, and their
 * printed forms for kilovoltd -T. */
#ifndef KV_CONFIG_UNITS_H
#define KV_CONFIG_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* A duration: a plain number in the key's own unit (UNIT_MS milliseconds:
 * every duration key today counts seconds, so "30" stays 30 s), or one or
 * more NUMBER UNIT parts with units ms, s, m, h, d: "500ms", "10s", "2m",
 * "1h30m". Milliseconds into *MS. Returns 0, or -1 for bad syntax, an
 * empty part, a unit given twice or out of order, or a value past a
 * year. */
int	kv_cfg_parse_duration(const char *s, int64_t unit_ms, int64_t *ms);

/* A size: bytes, or with a k, m or g (binary, either case) suffix:
 * "65536", "64k", "1m", "2G". At most 1 TiB. 0, or -1. */
int	kv_cfg_parse_size(const char *s, uint64_t *out);

/* SECS in the largest units that say it exactly: "0s", "45s", "10m",
 * "1h30m", "1d"; what kv_cfg_parse_duration reads back. */
void	kv_cfg_format_secs(long long secs, char *buf, size_t len);

/* N bytes with the largest suffix that divides it: "64m", "1g", "1000". */
void	kv_cfg_format_size(uint64_t n, char *buf, size_t len);

/* Nano-dollars as the shortest exact decimal: "2", "1.25", "0.000000001". */
void	kv_cfg_format_nano(int64_t nusd, char *buf, size_t len);

#endif
