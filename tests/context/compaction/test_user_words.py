"""The user's own words across compaction (docs/architecture.md §5): verbatim up to a budget, the oldest
shortened first, rules kept longest, earlier compactions' words carried forward."""

from __future__ import annotations

from catbuddy.context.compaction.user_words import UserWords, carry_user_words, folded_user_words, is_rule
from catbuddy.context.counting.tokens import counter_for
from catbuddy.session.history import HistoryEntry

COUNTER = counter_for("o200k_base")
LONG = "Some background on the parser that matters for later. " * 20


def entries(*texts: str) -> list[HistoryEntry]:
    out = []
    for i, text in enumerate(texts):
        out.append(HistoryEntry(f"m{2 * i + 1:06d}", {"role": "user", "content": text}))
        out.append(HistoryEntry(f"m{2 * i + 2:06d}", {"role": "assistant", "content": "ok"}))
    return out


def carry(previous: list[UserWords], folded: list[HistoryEntry], budget: int, prose: str = "") -> list[UserWords]:
    return carry_user_words(previous, folded, prose=prose, max_tokens=budget, count=COUNTER.count_text).messages


def test_every_user_message_is_carried_verbatim_without_its_runtime_block() -> None:
    folded = entries("Fix the login bug.\n\n[runtime: time=2026-01-01T10:00:00+00:00, channel=tui]", "Now the tests.")
    words = carry([], folded, 2000)
    assert [(w.id, w.text, w.shortened) for w in words] == [
        ("m000001", "Fix the login bug.", False),
        ("m000003", "Now the tests.", False),
    ]


def test_only_user_messages_count_and_multipart_content_is_read() -> None:
    folded = [
        HistoryEntry("m000001", {"role": "assistant", "content": "I will"}),
        HistoryEntry("m000002", {"role": "tool", "tool_call_id": "c", "content": "output"}),
        HistoryEntry("m000003", {"role": "user", "content": [{"type": "text", "text": "look at this"}]}),
        HistoryEntry("m000004", {"role": "user", "content": "   "}),
    ]
    assert [w.text for w in folded_user_words(folded)] == ["look at this"]


def test_past_the_budget_the_oldest_are_shortened_first() -> None:
    folded = entries(f"first: {LONG}", f"second: {LONG}", f"third: {LONG}")
    full = sum(COUNTER.count_text(w.text) + 8 for w in carry([], folded, 10**6))
    words = carry([], folded, full - 50)
    assert [w.shortened for w in words] == [True, False, False]
    assert words[0].text.startswith("first: ") and "cut from the user's message" in words[0].text


def test_far_past_the_budget_the_oldest_are_left_out_and_counted() -> None:
    folded = entries(*(f"message {i}: {LONG}" for i in range(10)))
    result = carry_user_words([], folded, prose="", max_tokens=300, count=COUNTER.count_text)
    assert result.left_out > 0
    assert result.messages[-1].text.startswith("message 9: ")
    assert sum(COUNTER.count_text(w.text) + 8 for w in result.messages) <= 300


def test_rules_are_kept_longest() -> None:
    rule = "Never commit to main directly, always open a branch."
    folded = entries(rule, *(f"chatter {i}: {LONG}" for i in range(8)))
    words = carry([], folded, 250)
    assert words[0].text == rule and words[0].rule and not words[0].shortened
    assert all(not w.rule for w in words[1:])


def test_a_message_the_models_summary_quotes_is_a_rule() -> None:
    folded = entries("use tabs for indentation in the Makefile please", f"later: {LONG}")
    prose = '## Rules and preferences\n- "use tabs for indentation in the Makefile"'
    words = carry([], folded, 10**6, prose=prose)
    assert words[0].rule and not words[1].rule


def test_rule_words() -> None:
    assert is_rule("Don't touch the vendored code.")
    assert is_rule("You must keep the API stable")
    assert is_rule("always use pnpm")
    assert is_rule("From now on answer in French")
    assert not is_rule("Can you look at the parser? It should be faster, keep that in mind.")


def test_earlier_compactions_words_carry_forward_before_the_new_ones() -> None:
    previous = [UserWords("m000001", "Never use sudo.", rule=True), UserWords("m000003", "Start with the API.")]
    words = carry(previous, entries("and now the UI")[:1], 2000)
    assert [w.text for w in words] == ["Never use sudo.", "Start with the API.", "and now the UI"]
    assert words[0].rule


def test_the_summary_prefix_is_never_carried_as_the_users_words() -> None:
    folded = [HistoryEntry("m000001", {"role": "user", "content": "[Previous conversation summary]: ## Goal"})]
    assert folded_user_words(folded) == []


def test_stored_words_load_back_and_garbage_is_skipped() -> None:
    from catbuddy.context.compaction.user_words import load_words

    stored = [UserWords("m000001", "hi", True).to_dict(), {"text": 5}, "nope", {"id": "m000009", "text": "ok"}]
    assert [(w.id, w.text, w.rule) for w in load_words(stored)] == [("m000001", "hi", True), ("m000009", "ok", False)]
    assert load_words("not a list") == []
