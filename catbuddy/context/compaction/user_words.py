"""The user's own words across compaction (docs/architecture.md §5).

Every user message of the folded part is carried into the pinned summary verbatim (without its
runtime block), together with the ones earlier compactions carried, up to a token budget. Past the
budget the oldest are shortened first, then left out; a message that states a rule or a preference —
the model's summary quotes it, or it says "always", "never", "don't", "must", … — is kept longest:
it is shortened only once every other message is gone, and of the rules the longest go first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from catbuddy.messages import content_text, strip_runtime_block
from catbuddy.session.history import SUMMARY_PREFIX, HistoryEntry
from catbuddy.text import fit_middle

# Words that state a rule or a preference. Deliberately not "should", "remember" or "keep in mind":
# they are in half of all messages and would make everything a rule.
RULE_RE = re.compile(
    r"\b(?:always|never|don['’]?t|do not|must(?:n['’]?t)?|must not|make sure|avoid|i prefer|prefer(?:s|red)? to|"
    r"please (?:use|stop|don['’]?t|do not)|only use|from now on|no more|stop (?:using|doing)|"
    r"do ?n[o']t ever|under no circumstances)\b",
    re.I,
)
QUOTE_RE = re.compile(r"[\"“”«»„]([^\"“”«»„]{12,}?)[\"“”«»„]")
MIN_QUOTE_CHARS = 12
SHORT_CHARS = 280  # what a shortened message keeps (head and tail)
SHORTEN_WHY = " from the user's message; `recall` has it whole"


@dataclass
class UserWords:
    id: str  # the message id (of the first session message it came from)
    text: str
    rule: bool = False
    shortened: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> UserWords | None:
        if not isinstance(data, Mapping) or not isinstance(data.get("text"), str):
            return None
        return cls(
            str(data.get("id", "")),
            data["text"],
            bool(data.get("rule", False)),
            bool(data.get("shortened", False)),
        )


@dataclass
class CarriedWords:
    messages: list[UserWords]
    left_out: int  # messages no longer carried (all compactions so far); recall still finds them


def load_words(raw: Any) -> list[UserWords]:
    if not isinstance(raw, list):
        return []
    return [item for item in (UserWords.from_dict(r) for r in raw) if item is not None]


def folded_user_words(entries: Iterable[HistoryEntry]) -> list[UserWords]:
    """The user's messages among ``entries``, in order, as the user typed them."""
    found = []
    for entry in entries:
        message = entry.message
        if not isinstance(message, Mapping) or message.get("role") != "user":
            continue
        text = strip_runtime_block(content_text(message.get("content"))).strip()
        if text and not text.startswith(SUMMARY_PREFIX):
            found.append(UserWords(entry.id, text))
    return found


def quoted_fragments(prose: str) -> list[str]:
    """What the model's summary quotes, normalised: the quotes mark the user's rules."""
    return [
        _normal(m.group(1)) for m in QUOTE_RE.finditer(prose) if len(m.group(1).strip()) >= MIN_QUOTE_CHARS
    ]


def is_rule(text: str, quotes: Sequence[str] = ()) -> bool:
    if RULE_RE.search(text):
        return True
    normal = _normal(text)
    return any(quote and quote in normal for quote in quotes)


def carry_user_words(
    previous: Sequence[UserWords],
    folded: Iterable[HistoryEntry],
    *,
    prose: str,
    max_tokens: int,
    count: Callable[[str], int],
    left_out_before: int = 0,
) -> CarriedWords:
    """The earlier carried messages and the newly folded ones, fitted into ``max_tokens``."""
    quotes = quoted_fragments(prose)
    items = [UserWords(w.id, w.text, w.rule, w.shortened) for w in previous]
    items += folded_user_words(folded)
    for item in items:
        item.rule = item.rule or is_rule(item.text, quotes)
    sizes = [count(item.text) + 8 for item in items]  # + the label line
    total = sum(sizes)
    left_out = left_out_before
    # Non-rules first, oldest first; then rules, the longest first (a long message that happens to
    # state a rule frees the most; a short, explicit rule stays).
    rules = sorted((i for i, w in enumerate(items) if w.rule), key=lambda i: (-sizes[i], i))
    order = [i for i, w in enumerate(items) if not w.rule] + rules
    gone: set[int] = set()
    for rules_pass in (False, True):
        for step in ("shorten", "drop"):
            for index in order:
                if total <= max_tokens:
                    break
                item = items[index]
                if item.rule != rules_pass or index in gone:
                    continue
                if step == "shorten" and not item.shortened and len(item.text) > SHORT_CHARS + 40:
                    item.text = fit_middle(item.text, SHORT_CHARS, why=SHORTEN_WHY)
                    item.shortened = True
                    new_size = count(item.text) + 8
                    total += new_size - sizes[index]
                    sizes[index] = new_size
                elif step == "drop":
                    gone.add(index)
                    total -= sizes[index]
                    left_out += 1
    kept = [item for i, item in enumerate(items) if i not in gone]
    return CarriedWords(kept, left_out)


def _normal(text: str) -> str:
    return " ".join(text.lower().split())
