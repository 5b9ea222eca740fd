#!/bin/sh
# Regenerate data/prices-DATE.json from LiteLLM's model_prices_and_context_window.json:
# keep every provider's entries of the kinds kilovolt meters (mode chat, completion,
# responses, embedding, or none), and every entry of openai and anthropic (their
# realtime, audio and image entries too, as before issue 35).
# usage: scripts/prices-extract.sh model_prices_and_context_window.json > data/prices-DATE.json
exec jq -S 'with_entries(select(.value | type == "object" and (.litellm_provider | type == "string")
    and (.litellm_provider == "openai" or .litellm_provider == "anthropic"
         or ((.mode // "chat") as $m | ["chat", "completion", "responses", "embedding"] | index([$m]) != null))))' "$1"
