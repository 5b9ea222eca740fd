/* The input tokens a provider adds to a request for the tools it names,
 * beyond the request's own bytes (the hidden tool-use system prompts). */
#ifndef KV_TOOL_PROMPTS_H
#define KV_TOOL_PROMPTS_H

#include <stddef.h>
#include <stdint.h>

/* Anthropic's tool-use system prompt, added once when "tools" is not
 * empty: the largest of any model and tool_choice (tool_prompts.c). */
#define KV_TOOL_PROMPT_BASE	530

/* Hidden tokens for one tool of type T (n bytes, not NUL-terminated) on
 * the Anthropic Messages API: 0 for a type with no documented prompt. */
int64_t	kv_tool_prompt_tokens(const char *t, size_t n);

#endif
