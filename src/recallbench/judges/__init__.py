"""LLM judges: providers (any OpenAI-compatible endpoint, a local GGUF model), judge tasks
with versioned prompts, a cache that replays judgments, agreement with people (kappa, tau)
and prediction-powered inference, and cost.

Work in progress: the pieces land one at a time; nothing here is wired into the command
line until it is whole.
"""
