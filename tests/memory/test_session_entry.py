"""A finished session's entry: the user's words and the final replies, bounded, keys scrubbed."""

from __future__ import annotations

from catbuddy.memory.session_entry import MAX_ENTRY_CHARS, digest_session
from catbuddy.session.history import SUMMARY_PREFIX


def msgs(*items: dict) -> list[tuple[str, dict]]:
    return [(f"m{n:06d}", item) for n, item in enumerate(items, start=1)]


def user(text: str) -> dict:
    return {"role": "user", "content": f"{text}\n\n[runtime: time=2025-03-14T10:00:00, channel=tui]"}


def test_each_turn_is_the_user_message_and_the_final_reply_without_tool_traffic() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    digest = digest_session(
        msgs(
            user("I always use pnpm, never npm"),
            {"role": "assistant", "content": "Let me look.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "x" * 5000},
            {"role": "assistant", "content": "Switched the scripts to pnpm."},
            user("thanks"),
        ),
        None,
    )
    assert digest is not None
    assert digest.content == (
        "User: I always use pnpm, never npm\nAssistant: Switched the scripts to pnpm.\n\nUser: thanks"
    )
    assert digest.through == "m000005" and digest.turns == 2
    assert "runtime" not in digest.content and "xxxx" not in digest.content


def test_only_messages_after_the_last_entry_count() -> None:
    history = msgs(user("first"), {"role": "assistant", "content": "a"}, user("second"))
    digest = digest_session(history, "m000002")
    assert digest is not None and digest.content == "User: second"
    assert digest_session(history, "m000003") is None


def test_a_session_without_a_new_user_message_leaves_no_entry() -> None:
    assert digest_session([], None) is None
    assert digest_session(msgs({"role": "user", "content": SUMMARY_PREFIX + "old"}), None) is None


def test_entries_are_bounded_and_keys_scrubbed() -> None:
    key = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2"
    history = msgs(*[user(f"message {n} " + "word " * 400) for n in range(40)], user(f"my key is {key}"))
    digest = digest_session(history, None, secrets=("configured-secret",))
    assert digest is not None
    assert len(digest.content) <= MAX_ENTRY_CHARS
    assert key not in digest.content
    assert "characters cut" in digest.content


def test_passwords_and_tokens_said_in_a_session_are_masked_in_its_entry() -> None:
    digest = digest_session(
        msgs(user("the staging password is hunter2, deploy token: ghp_" + "x1" * 15)), None
    )
    assert digest is not None
    assert "hunter2" not in digest.content and "ghp_" not in digest.content
    assert "<redacted>" in digest.content
