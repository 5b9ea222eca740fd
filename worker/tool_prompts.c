/* The hidden tool prompts. See tool_prompts.h.
 *
 * Source: Anthropic, "Tool use with Claude", Pricing (read 2026-12-02):
 *   https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/overview#pricing
 *   tool-use system prompt: 346 (auto, none) / 313 (any, tool) tokens on
 *   Claude 4.x, 3.7 and 3.5 Sonnet; 530 / 281 on Claude 3 Opus; 264 / 340
 *   on the Haikus: the base is the largest, 530.
 * and "Computer use tool", "Bash tool", "Text editor tool":
 *   https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/computer-use-tool
 *   computer: 735 tokens a tool definition, plus the computer-use system
 *   prompt of 466-499 tokens; bash: 245; text_editor: 700.
 * OpenAI publishes no per-tool figure: function definitions are rendered
 * into the system message from their JSON (bounded by its bytes). */
#include "worker/tool_prompts.h"

#include <string.h>

static const struct {
	const char	*prefix;	/* the versioned type: bash_20250124 */
	int64_t		 tokens;
} tools[] = {
	{ "bash_", 245 },
	{ "text_editor_", 700 },
	{ "computer_", 735 + 499 },
};

int64_t
kv_tool_prompt_tokens(const char *t, size_t n)
{
	size_t i, l;

	for (i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		l = strlen(tools[i].prefix);
		if (n > l && memcmp(t, tools[i].prefix, l) == 0)
			return tools[i].tokens;
	}
	return 0;
}
