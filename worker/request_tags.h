/* A request's tags header ([budget] tags_header, x-kilovolt-tags by
 * default): the [tag] nodes it is charged to as well as its key's tree
 * (docs/ledger.md "Tags"). The header is kilovolt's: never forwarded. */
#ifndef KV_WORKER_REQUEST_TAGS_H
#define KV_WORKER_REQUEST_TAGS_H

#include "common/http.h"
#include "worker/conn.h"

/* The tags of REQ's head into c->req.tag/ntags (0 when it has no tags
 * header). -1 with *WHY for a 400: a malformed name, more than
 * [budget] max_tags distinct names, a tag no [tag] section names (its
 * name in *WHY, from a buffer of the worker), or the header sent twice. */
int	kv_request_tags(struct kv_conn *c, const struct kv_http_request *req, const char **why);

/* Whether the client's header NAME (LEN bytes) is the tags header. */
int	kv_request_tags_header(const struct kv_conn *c, const char *name, size_t len);

#endif
