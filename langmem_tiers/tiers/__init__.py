"""Tier generation (offline and LLM), summarisation, token counting and the marker language."""

from __future__ import annotations

from langmem_tiers.tiers.base import MessageTiers, Summarizer, Summary, Tierer, TierLevel
from langmem_tiers.tiers.extraction import Fact, format_facts, parse_tier1
from langmem_tiers.tiers.llm import TIER_SYSTEM_PROMPT, TIER_USER_PROMPT, LLMTierer
from langmem_tiers.tiers.markers import (
    MARKER_INSTRUCTIONS,
    ParsedAnswer,
    TierRequest,
    has_markers,
    parse_markers,
    strip_markers,
)
from langmem_tiers.tiers.offline import OfflineTierer
from langmem_tiers.tiers.summarizer import (
    SUMMARY_SYSTEM_PROMPT,
    SUMMARY_USER_PROMPT,
    LLMSummarizer,
    OfflineSummarizer,
)
from langmem_tiers.tiers.tokens import TokenCounter, count_message_tokens, count_tokens

__all__ = [
    "MARKER_INSTRUCTIONS",
    "SUMMARY_SYSTEM_PROMPT",
    "SUMMARY_USER_PROMPT",
    "TIER_SYSTEM_PROMPT",
    "TIER_USER_PROMPT",
    "Fact",
    "LLMSummarizer",
    "LLMTierer",
    "MessageTiers",
    "OfflineSummarizer",
    "OfflineTierer",
    "ParsedAnswer",
    "Summarizer",
    "Summary",
    "TierLevel",
    "TierRequest",
    "Tierer",
    "TokenCounter",
    "count_message_tokens",
    "count_tokens",
    "format_facts",
    "has_markers",
    "parse_markers",
    "parse_tier1",
    "strip_markers",
]
