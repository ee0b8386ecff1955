"""How Dream numbers a MEMORY.md: facts numbered, structure shown as it is, any shape readable."""

from __future__ import annotations

from catbuddy.memory.document import MemoryDoc, normalise, replace_fact
from catbuddy.workspace import shipped_default


def test_bullets_are_numbered_in_order_and_shown_without_their_marker() -> None:
    doc = MemoryDoc.parse(
        "# Memory\n\n## Testing\n- Run `pytest -q`.\n* Docker for e2e\n\n## Style\n1. Tabs\n"
    )
    assert [item.text for item in doc.items] == ["Run `pytest -q`.", "Docker for e2e", "Tabs"]
    assert (
        doc.numbered()
        == "# Memory\n\n## Testing\n[1] Run `pytest -q`.\n[2] Docker for e2e\n\n## Style\n[3] Tabs"
    )


def test_a_file_edited_into_prose_has_its_lines_numbered_as_they_are() -> None:
    doc = MemoryDoc.parse("The user likes short answers.\nThey work on a Mac.\n\nThe CI runs on GitHub.")
    assert [item.text for item in doc.items] == [
        "The user likes short answers.",
        "They work on a Mac.",
        "The CI runs on GitHub.",
    ]
    assert "[3] The CI runs on GitHub." in doc.numbered()


def test_comments_and_code_fences_are_structure_not_facts() -> None:
    doc = MemoryDoc.parse("<!-- a note\nspanning lines -->\n```bash\nmake test\n```\n- fact")
    assert [item.text for item in doc.items] == ["make test", "fact"]


def test_the_shipped_template_and_a_missing_file_hold_no_facts() -> None:
    assert MemoryDoc.parse(shipped_default("MEMORY.md")).items == []
    missing = MemoryDoc.parse(None)
    assert missing.items == [] and not missing.existed


def test_an_item_number_out_of_range_is_none() -> None:
    doc = MemoryDoc.parse("- a\n- b")
    assert doc.item(2) is not None and doc.item(0) is None and doc.item(3) is None


def test_normalising_ignores_case_whitespace_dates_and_final_punctuation() -> None:
    assert normalise("2025-03-14: Prefers   PNPM.") == normalise("prefers pnpm")
    assert normalise("Prefers pnpm") != normalise("Prefers npm")


def test_replacing_a_fact_keeps_indent_and_marker() -> None:
    assert replace_fact("  * old", "new") == "  * new"
    assert replace_fact("3. old", "new") == "3. new"
    assert replace_fact("  plain old line", "new") == "  new"
