"""Fixtures of the tier tests: scripted fake chat models and the sync/async driver."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import Field

if TYPE_CHECKING:
    from conftest import Twin

TwinOf = Callable[[Any], "Twin"]


class ScriptedModelError(RuntimeError):
    """What a scripted model raises in place of answering."""


def scripted(*replies: str | BaseException) -> Iterator[AIMessage]:
    """Replies for ``GenericFakeChatModel``; an exception in the script is raised."""
    for reply in replies:
        if isinstance(reply, BaseException):
            raise reply
        yield AIMessage(reply)


class RecordingChatModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` that also keeps every prompt it was given."""

    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.prompts.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


def fake_model(*replies: str | BaseException) -> RecordingChatModel:
    """A chat model that answers with ``replies`` in order (and raises the exceptions)."""
    return RecordingChatModel(messages=scripted(*replies))
