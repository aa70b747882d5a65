"""Which stored facts a turn brings to mind: the full-text query for the user's words, and the budget.

The store's index is FTS5 with the trigram tokenizer, so a query term needs three characters: English
words of three letters or more (but the commonest ones), and each run of Chinese characters cut into
trigrams; Chinese words are mostly two characters, so the run's bigrams are also looked for as
substrings (`Query.contains`). The store ranks what matches (most terms first); `within` keeps what
fits the prompt's budget.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_STOP = {"the", "and", "you", "your", "yours", "are", "was", "were", "did", "does", "doing", "done", "what", "whats",
         "what's", "that", "this", "there", "here", "with", "for", "from", "about", "have", "has", "had", "can",
         "could", "would", "should", "will", "just", "really", "tell", "know", "remember", "please", "stella",
         "again", "still", "any", "some", "how", "who", "which", "why", "when", "its", "it's", "not", "but",
         "they", "them", "their", "then", "than", "also", "too", "very", "much", "more", "okay", "yes", "yeah",
         "hey", "hello", "say", "said", "think", "thing", "things", "something", "anything", "like", "our"}
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_CJK_CHAR = re.compile(r"[\u4e00-\u9fff]")
_CJK_COMMON = {"我的", "你的", "一下", "是不", "不是", "知道", "记得", "告诉", "你知", "道我", "得我", "诉我", "我们",
               "是什", "一个", "这个", "那个", "吗我"}


@dataclass(frozen=True)
class Query:
    match: str  # an FTS5 MATCH expression ("" when nothing to match)
    contains: tuple[str, ...]  # short Chinese words to look for as substrings

    @property
    def empty(self) -> bool:
        return not (self.match or self.contains)


def query_of(text: str) -> Query:
    """What to search the facts for, for the user's words `text`."""
    terms = [w for w in re.findall(r"[a-z0-9']+", text.lower()) if len(w) >= 3 and w not in _STOP]
    bigrams: list[str] = []
    for run in _CJK_RUN.findall(text):
        terms += [run[i:i + 3] for i in range(len(run) - 2)]
        bigrams += [b for i in range(len(run) - 1) if (b := run[i:i + 2]) not in _CJK_COMMON]
    quoted = [f'"{t.replace(chr(34), "")}"' for t in dict.fromkeys(terms)]
    return Query(" OR ".join(quoted), tuple(dict.fromkeys(bigrams)))


def within(sentences: Iterable[str], budget_tokens: int) -> list[str]:
    """The first sentences that fit in `budget_tokens` of prompt, in order."""
    kept: list[str] = []
    for sentence in sentences:
        cost = tokens_of(sentence)
        if cost > budget_tokens:
            break
        kept.append(sentence)
        budget_tokens -= cost
    return kept


def tokens_of(sentence: str) -> int:
    """A sentence's tokens inside the one message the facts share (no template of its own): a Chinese character
    is about a token, other text three characters a token (sidecar.conversation)."""
    chinese = len(_CJK_CHAR.findall(sentence))
    return chinese + (len(sentence) - chinese) // 3 + 1
