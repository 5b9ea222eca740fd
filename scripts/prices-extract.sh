#!/bin/sh
# Regenerate data/prices-DATE.json from LiteLLM's model_prices_and_context_window.json:
# keep only the entries of the providers kilovolt routes to (openai, anthropic).
# usage: scripts/prices-extract.sh model_prices_and_context_window.json > data/prices-DATE.json
exec jq -S 'with_entries(select(.value | type == "object" and (.litellm_provider == "openai" or .litellm_provider == "anthropic")))' "$1"
