/* One HTTP/1.1 exchange, start to end, for the master's AWS credential
 * fetches (its start-up and its refresh helper process; spend alerts'
 * helper still has its own client in master/alerts.c): blocking for the
 * caller, but bounded by one deadline over the connect, the TLS
 * handshake, the write and the read, so a dead or silent peer costs the
 * caller that long and no more. https:// is verified with
 * the one TLS client set-up (common/tls_client.h). Never called from the
 * master's loop. */
#ifndef KV_HTTP_FETCH_H
#define KV_HTTP_FETCH_H

#include <stddef.h>

struct kv_fetch_url {
	int	 tls;
	int	 v6;		/* the host is an IPv6 literal (brackets stripped) */
	char	 host[256];
	char	 port[8];
	char	 path[1024];	/* "/" when the URL has none */
};

/* http://HOST[:PORT][/PATH] or https://..., HOST a name, an IPv4 or a
 * bracketed IPv6 literal, into *OUT. 0, or -1 for anything else. */
int	kv_fetch_parse_url(const char *url, struct kv_fetch_url *out);

struct kv_fetch_req {
	const struct kv_fetch_url *url;
	const char	*method;
	const char	*path;		/* NULL: the URL's */
	const char	*headers;	/* extra header lines, each ending "\r\n"; NULL: none */
	const char	*body;
	size_t		 body_len;
	const char	*ca_file;	/* NULL or "": the system's anchors */
	int		 timeout_ms;	/* for all of it */
};

/* Send R (with Host, Content-Length when there is a body, Connection:
 * close) and read the answer into BUF[0..CAP): its status returned, its
 * body (a chunked one decoded) at *BODY, *BODY_LEN bytes, NUL-terminated.
 * -1 with the reason in ERR[0..ERRLEN) (no connection, timeout, TLS
 * failure, a malformed answer, one past CAP). */
int	kv_fetch(const struct kv_fetch_req *r, char *buf, size_t cap, const char **body,
	    size_t *body_len, char *err, size_t errlen);

/* NAME=S, S form-urlencoded (RFC 3986's unreserved kept, all else
 * %XX), onto OUT (CAP bytes) at *AT, after a '&' when *AT > 0; OUT stays
 * NUL-terminated. 0, or -1 when it does not fit. */
int	kv_fetch_form_add(char *out, size_t cap, size_t *at, const char *name, const char *s);

#endif
