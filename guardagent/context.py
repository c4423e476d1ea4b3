"""Runtime settings of the guard graph (LangGraph `context_schema`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(kw_only=True)
class GuardContext:
    """Settings for one run; every field has a safe default so `{}` is a valid context.

    Attributes:
        profile: Built-in profile name (`eicu-ac`, `mind2web-sc`) or a path to a profile.
        model: `"offline"` (verified programs only, no LLM), an `init_chat_model` spec such
            as `"openai:gpt-4o"`, or a LangChain `BaseChatModel` instance.
        base_url: OpenAI-compatible endpoint (vLLM, Ollama `/v1`, llama.cpp) for `model`.
        k: Demonstrations retrieved per event; `None` uses the profile's default.
        max_attempts: Program runs before failing closed (the paper's debugging budget).
        memory_dir: Directory of the embedded Chroma memory; `None` uses the user data dir.
        memory_url: `http://host:port` of a Chroma server, to share memory between processes.
        reuse_programs: Reuse verified programs from memory instead of calling the model.
        timeout_seconds: Wall-clock limit of one program run in the sandbox.
    """

    profile: str = "eicu-ac"
    model: Any = "offline"
    base_url: str | None = None
    k: int | None = None
    max_attempts: int = 3
    memory_dir: str | None = None
    memory_url: str | None = None
    reuse_programs: bool = True
    timeout_seconds: float = 5.0
