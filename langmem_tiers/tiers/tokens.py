"""Token counting, pluggable, offline by default.

Budgets in this package (the tiered context limit, the tier size targets) are in
tokens. Exact counts need a model's own tokenizer, which often downloads its tables on
first use (``tiktoken`` does, and fails offline), so the default is the approximation
langchain-core uses in ``count_tokens_approximately``: about four characters per token.
Any ``Callable[[str], int]`` can be passed instead, e.g. a chat model's
``get_num_tokens`` when its tokenizer is available.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> count_tokens("twelve chars")
    3
    >>> count_tokens("twelve chars", counter=lambda text: len(text.split()))
    2
    >>> count_message_tokens([HumanMessage("hi"), AIMessage("hello!")])
    12
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from langchain_core.messages import BaseMessage
from langchain_core.messages.utils import count_tokens_approximately

__all__ = [
    "CHARS_PER_TOKEN",
    "MESSAGE_OVERHEAD_TOKENS",
    "TokenCounter",
    "approximate_token_count",
    "count_message_tokens",
    "count_tokens",
]

TokenCounter = Callable[[str], int]
"""Counts the tokens of a text."""

CHARS_PER_TOKEN = 4.0
"""Characters per token of the default approximation (langchain-core's default too)."""

MESSAGE_OVERHEAD_TOKENS = 3
"""Tokens a chat format adds around each message (role markers), for custom counters."""


def approximate_token_count(text: str) -> int:
    """Tokens of ``text`` by the four-characters-per-token rule, rounded up.

    This is the rule ``count_tokens_approximately`` applies to message content, without
    the per-message overhead, so counts of texts and of messages agree.

    >>> [approximate_token_count(text) for text in ("", "abcd", "abcde")]
    [0, 1, 2]
    """
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def count_tokens(text: str, counter: TokenCounter | None = None) -> int:
    """Tokens of ``text``, by ``counter`` or the default approximation.

    >>> count_tokens("The deadline is March 1.")
    6
    """
    if counter is None:
        return approximate_token_count(text)
    return int(counter(text))


def count_message_tokens(
    messages: Iterable[BaseMessage], counter: TokenCounter | None = None
) -> int:
    """Tokens of a list of messages as a model would receive them.

    With no ``counter`` this is ``count_tokens_approximately`` (content, role, name, tool
    calls and a per-message overhead). With a ``counter``, each message counts as its
    text plus its role plus :data:`MESSAGE_OVERHEAD_TOKENS`.

    >>> from langchain_core.messages import HumanMessage
    >>> count_message_tokens([HumanMessage("abcdefgh")], counter=len)
    16
    """
    if counter is None:
        return count_tokens_approximately(list(messages))
    total = 0
    for message in messages:
        total += int(counter(message.text)) + int(counter(message.type))
        total += MESSAGE_OVERHEAD_TOKENS
    return total
