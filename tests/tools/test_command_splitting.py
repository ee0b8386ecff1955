from __future__ import annotations

from catbuddy.tools.commands import analyze


def texts(command: str) -> list[str]:
    return [s.text() for s in analyze(command).segments]


def test_compound_commands_split_into_segments() -> None:
    assert texts("a 1; b && c || d | e & f\ng") == ["a 1", "b", "c", "d", "e", "f", "g"]


def test_substitutions_and_nested_shells_are_analysed() -> None:
    assert texts("echo $(whoami) `date`") == ["whoami", "date", "echo $(…) `…`"]
    assert texts("bash -c 'ls -la; pwd'") == ["bash -c ls -la; pwd", "ls -la", "pwd"]


def test_wrappers_assignments_and_keywords_are_stripped() -> None:
    segments = analyze("FOO=1 sudo -u me env -i BAR=2 timeout -s KILL 5 nice -n 3 make test").segments
    assert [s.text() for s in segments] == ["make test"]
    assert segments[0].wrappers == ["sudo", "env", "timeout", "nice"]


def test_quotes_comments_and_redirections() -> None:
    assert texts("echo \"a b\" 'c' d\\ e # note") == ["echo a b c d e"]
    assert texts("make 2>&1 >> log.txt < in") == ["make >> log.txt < in"]


def test_unbalanced_quotes_are_reported_not_guessed() -> None:
    analysis = analyze("echo 'oops")
    assert not analysis.parsed and "quote" in analysis.problem
