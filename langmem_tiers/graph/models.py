"""Which chat model a graph uses: one passed in, a provider string, or the offline model.

Example:
    >>> type(resolve_chat_model(None)).__name__
    'OfflineChatModel'
    >>> type(resolve_chat_model("offline")).__name__
    'OfflineChatModel'
"""

from __future__ import annotations

import importlib
from typing import Any

from langchain_core.language_models import BaseChatModel

from langmem_tiers.errors import ConfigurationError
from langmem_tiers.graph.offline_model import OfflineChatModel

__all__ = ["OFFLINE_MODEL", "resolve_chat_model"]

OFFLINE_MODEL = "offline"
"""The provider string that names :class:`OfflineChatModel`."""


def resolve_chat_model(model: BaseChatModel | str | None, **kwargs: Any) -> BaseChatModel:
    """A chat model from an object, a provider string (``openai:gpt-4o-mini``) or ``None``.

    ``None`` and ``"offline"`` give the deterministic :class:`OfflineChatModel`. A provider
    string goes through LangChain's ``init_chat_model`` (from the ``langchain`` package,
    with ``kwargs``); the provider's own package must be installed.

    Raises:
        ConfigurationError: the string cannot be turned into a model (the message says why).
    """
    if model is None or model == OFFLINE_MODEL:
        return OfflineChatModel()
    if isinstance(model, BaseChatModel):
        return model
    if not isinstance(model, str) or not model.strip():
        raise ConfigurationError(
            f"model must be a LangChain chat model, a provider string like "
            f"'openai:gpt-4o-mini', or None for the offline model; got {model!r}."
        )
    try:
        chat_models = importlib.import_module("langchain.chat_models")
    except ImportError as err:
        raise ConfigurationError(
            f"model={model!r} is a provider string, which needs the 'langchain' package: "
            "pip install langchain langchain-<provider> (or pass a chat model object)."
        ) from err
    try:
        created = chat_models.init_chat_model(model, **kwargs)
    except Exception as err:
        raise ConfigurationError(
            f"model={model!r} could not be created ({type(err).__name__}: {err}); check the "
            "provider prefix, its package (pip install langchain-<provider>) and its API key."
        ) from err
    if not isinstance(created, BaseChatModel):
        raise ConfigurationError(
            f"model={model!r} gave {type(created).__name__}, not a chat model; name one model."
        )
    return created
