/* What a tool or content block type makes the provider do beyond the
 * request's bytes (reqscan_int.h): run the tool itself in a loop, fetch
 * content, or bill what no price names. Pure functions of the type's
 * name, and the loop bound a tools element leaves in the result. */
#include <string.h>

#include "worker/reqscan_int.h"

/* "type" values of content blocks and tools whose cost the body's bytes do
 * not bound: server tools bill what they fetch as input, and files and
 * documents expand (a PDF page is an image). A trailing '*' is a prefix. */
static const char *const fetch_types[] = {
	"web_search*", "web_fetch*", "file_search*", "mcp", "code_interpreter*",
	"code_execution*", "image_generation*", "computer_use*", "local_shell*",
	"input_file", "document", "input_audio", "item_reference", "container_upload",
	NULL,
};

/* Tools the provider runs itself, calling the model again after each call. */
int
kv_rs_server_tool(const char *v, size_t n)
{
	static const char *const server[] = { "web_search", "web_fetch", "code_execution",
	    "file_search", "code_interpreter", "mcp", "image_generation", "computer_use",
	    "local_shell", NULL };
	const char *const *s;

	for (s = server; *s != NULL; s++)
		if (n >= strlen(*s) && memcmp(v, *s, strlen(*s)) == 0)
			return s == server ? T_WEB_SEARCH : s == server + 1 ? T_WEB_FETCH : T_SERVER;
	return T_NONE;
}

/* A dated tool type ("web_search_20250305", "advisor_20260301"): one the
 * provider versions, and may run itself. Those kilovolt knows are the
 * server tools above and Anthropic's client-run ones; any other may bill
 * what no price names (Anthropic's advisor tool runs another model inside
 * the request, reported only in usage.iterations): refused (issue 33). */
int
kv_rs_unknown_dated_tool(const char *v, size_t n)
{
	static const char *const known[] = { "bash_", "text_editor_", "computer_", "memory_",
	    "tool_search_tool_", NULL };
	const char *const *k;
	size_t i;

	if (n < 10 || v[n - 9] != '_')
		return 0;
	for (i = n - 8; i < n; i++)
		if (v[i] < '0' || v[i] > '9')
			return 0;
	if (kv_rs_server_tool(v, n) != T_NONE)
		return 0;
	for (k = known; *k != NULL; k++)
		if (n >= strlen(*k) && memcmp(v, *k, strlen(*k)) == 0)
			return 0;
	return 1;
}

int
kv_rs_type_fetches(const char *v, size_t n)
{
	const char *const *t;
	size_t l;

	for (t = fetch_types; *t != NULL; t++) {
		l = strlen(*t);
		if ((*t)[l - 1] == '*' ? n >= l - 1 && memcmp(*t, v, l - 1) == 0 :
		    n == l && memcmp(*t, v, n) == 0)
			return 1;
	}
	return 0;
}

void
kv_rs_tool_end(struct kv_reqscan *r)
{
	struct kv_request_info *ri = &r->ri;

	if (r->tkind == T_NONE)
		return;
	if (r->tuses >= 0)
		ri->tool_uses += r->tuses;
	else
		ri->tools_unbounded++;
	if (r->tkind == T_WEB_SEARCH && r->tuses >= 0)
		ri->ws_uses += r->tuses;
	else if (r->tkind == T_WEB_SEARCH)
		ri->ws_unbounded++;
	if (r->tkind == T_WEB_FETCH && r->tuses >= 0)
		ri->wf_uses += r->tuses;
	else if (r->tkind == T_WEB_FETCH)
		ri->wf_unbounded++;
	r->tkind = T_NONE;
}
