"""How to reach the judge model: the ``[judge]`` table of ``recallbench.toml``.

    [judge]
    provider = "openai"                 # any OpenAI-compatible endpoint
    base_url = "http://localhost:11434/v1"
    model = "qwen2.5:7b-instruct"
    api_key_env = "OPENAI_API_KEY"      # the variable's NAME; the key itself is never stored
    concurrency = 4
    rpm = 60
    price_in = 0.15                     # USD per 1M input tokens, for cost reports
    price_out = 0.60
    max_failure_rate = 0.1              # above it, judged numbers are marked unreliable

    [judge]
    provider = "local"                  # in-process GGUF via llama-cpp-python
    model = "models/SmolLM2-135M-Instruct.Q4_1.gguf"

Bad values are errors located at ``judge.<key>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from recallbench.core._errors import DatasetError
from recallbench.core._model import Record
from recallbench.core._validation import problems_of
from recallbench.judges._judgment import MAX_FAILURE_RATE

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class JudgeConfig(Record):
    """The judge model and how hard to call it."""

    provider: Literal["openai", "local"] = "openai"
    """``openai``: any OpenAI-compatible chat endpoint; ``local``: a GGUF file in-process."""
    base_url: str | None = None
    """The API root, the part before ``/chat/completions`` (``openai`` only)."""
    model: str
    """The model name the endpoint knows, or the GGUF file path for ``local``."""
    api_key_env: str | None = None
    """The name of the environment variable holding the API key (none: no key sent)."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    seed: int | None = 0
    """Sent where supported so repeated judgments agree; ``None`` sends none."""
    timeout: float = Field(default=60.0, gt=0)
    """Seconds one call may take before it counts as failed."""
    retries: int = Field(default=3, ge=0, le=20)
    """Extra attempts after a timeout, refused connection, 429 or 5xx."""
    backoff: float = Field(default=0.5, ge=0)
    """Seconds before the first retry; doubles each time, with jitter."""
    max_backoff: float = Field(default=30.0, ge=0)
    """The longest wait between attempts; a Retry-After beyond it fails the call instead."""
    concurrency: int = Field(default=4, ge=1, le=256)
    """Calls in flight at once."""
    rpm: float | None = Field(default=None, gt=0)
    """Requests per minute at most (none: unlimited)."""
    price_in: float = Field(default=0.0, ge=0)
    """USD per 1M input tokens."""
    price_out: float = Field(default=0.0, ge=0)
    """USD per 1M output tokens."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Longest answer in tokens (none: the server's default; ``local`` uses 512)."""
    context: int = Field(default=4096, ge=256)
    """Context window in tokens for ``local`` models."""
    max_failure_rate: float = Field(default=MAX_FAILURE_RATE, ge=0, le=1)
    """Share of failed judgments above which a judged measure is marked unreliable (and a
    strict gate fails closed)."""

    @field_validator("api_key_env")
    @classmethod
    def _a_name_not_a_key(cls, value: str | None) -> str | None:
        # A pasted key would end up in a committed file; refuse anything not shaped like a name.
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError("must be the name of an environment variable, not the key itself")
        return value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _provider_needs(self) -> JudgeConfig:
        if self.provider == "openai" and self.base_url is None:
            raise ValueError("provider 'openai' needs base_url")
        return self

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        """USD for the given token counts at the configured prices."""
        return (tokens_in * self.price_in + tokens_out * self.price_out) / 1_000_000


def judge_config(data: Mapping[str, Any], source: str = "recallbench.toml") -> JudgeConfig:
    """The ``[judge]`` table validated; every problem is located at ``judge.<key>``."""
    try:
        return JudgeConfig.model_validate(data)
    except ValidationError as error:
        raise DatasetError(source, problems_of(error, ("judge",))) from None
