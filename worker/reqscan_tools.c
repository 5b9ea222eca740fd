/* What a tool or content block type makes the provider do beyond the
 * request's bytes (reqscan_int.h): run the tool itself in a loop, fetch
 * content, or bill what no price names. Pure functions of the type's
 * name, and the loop bound a tools element leaves in the result. */
#include <string.h>

#include "worker/reqscan_int.h"

/* "type" values of content blocks and tools whose cost the body's bytes do
 * not bound: server tools bill what they fetch as input, and files and
 * documents expand (a PDF page is an image). A prefix matches any type it
 * starts; the lengths are kept: every "type" of every body is looked up. */
#define T(name, prefix) { name, sizeof(name) - 1, prefix }
static const struct {
	const char	*name;
	size_t		 len;
	int		 prefix;
} fetch_types[] = {
	T("web_search", 1), T("web_fetch", 1), T("file_search", 1), T("mcp", 0),
	T("code_interpreter", 1), T("code_execution", 1), T("image_generation", 1),
	T("computer_use", 1), T("local_shell", 1), T("input_file", 0), T("document", 0),
	T("input_audio", 0), T("item_reference", 0), T("container_upload", 0),
};
#undef T

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
	size_t i, l;

	for (i = 0; i < sizeof(fetch_types) / sizeof(fetch_types[0]); i++) {
		l = fetch_types[i].len;
		if ((fetch_types[i].prefix ? n >= l : n == l) && memcmp(fetch_types[i].name, v, l) == 0)
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
