/* The bytes HTTP/1.1 allows where (RFC 9110 5.6.2, 5.5): shared by the head
 * parser (http.c) and the chunked decoder (chunked.c), and by nothing else. */
#ifndef KV_HTTP_CHARS_H
#define KV_HTTP_CHARS_H

/* tchar per RFC 9110 5.6.2: ALPHA DIGIT and !#$%&'*+-.^_`|~ (http.c) */
extern const unsigned char kv_http_tchar[256];

#define IS_TCHAR(ch)	(kv_http_tchar[(unsigned char)(ch)] != 0)
#define IS_OWS(ch)	((ch) == ' ' || (ch) == '\t')
/* field-vchar / SP / HTAB: everything but CTLs and DEL (obs-text allowed) */
#define IS_FIELD(ch)	((unsigned char)(ch) >= 0x20 ? (ch) != 0x7f : (ch) == '\t')

#endif
