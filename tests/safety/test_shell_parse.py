"""The bash analysis behind approval and deny decisions: what each command line really runs."""

from __future__ import annotations

import shlex

import pytest

from catbuddy.safety.shell_parse import ParsedCommand, parse_command

HOME = "/home/me"
ROOT = "/work/proj"


def parse(command: str) -> ParsedCommand:
    return parse_command(command, home=HOME, cwd=ROOT)


def runs(command: str) -> list[list[str]]:
    """The simple commands, each as its first value per word (containers such as `bash -c` included)."""
    return [[w.values[0] for w in s.words] for s in parse(command).segments if not s.rough]


def test_lists_pipelines_and_newlines_split_into_commands() -> None:
    assert runs("a 1; b && c || d | e & f\ng") == [["a", "1"], ["b"], ["c"], ["d"], ["e"], ["f"], ["g"]]


@pytest.mark.parametrize(
    "command",
    [
        "if true; then rm -rf x; fi",
        "for f in a b; do rm -rf x; done",
        "while false; do rm -rf x; done",
        "case $v in a) rm -rf x;; esac",
        "(rm -rf x)",
        "{ rm -rf x; }",
        "f() { rm -rf x; }",
        "function f { rm -rf x; }",
        "echo $(rm -rf x)",
        "echo `rm -rf x`",
        'echo "$(rm -rf x)"',
        "cat <(rm -rf x)",
        "echo $(( $(rm -rf x) + 1 ))",
        "X=$(rm -rf x) true",
        "bash -c 'rm -rf x'",
        "sh -c \"echo hi; rm -rf x\"",
        "eval 'rm -rf x'",
        "trap 'rm -rf x' EXIT",
        "watch 'rm -rf x'",
        "echo 'rm -rf x' | bash",
        "bash <<< 'rm -rf x'",
        "bash <<EOF\nrm -rf x\nEOF",
        "find . -exec rm -rf x \\;",
        "echo x | xargs rm -rf",
        "sudo -u root rm -rf x",
        "env -i A=1 timeout -s KILL 5 nice -n 3 rm -rf x",
        "busybox rm -rf x",
        "uv run rm -rf x",
        "alias go='rm -rf x'",
    ],
)
def test_every_construct_exposes_the_command_inside(command: str) -> None:
    assert ["rm", "-rf", "x"] in [r[:3] for r in runs(command)], runs(command)


def test_a_heredoc_body_is_data_unless_a_shell_reads_it() -> None:
    assert runs("cat <<EOF\nrm -rf /\nEOF") == [["cat"]]
    assert ["rm", "-rf", "/"] in runs("cat <<'EOF' | bash\nrm -rf /\nEOF")


def test_substitutions_in_an_unquoted_heredoc_run() -> None:
    assert ["rm", "-rf", "/"] in runs("cat <<EOF\n$(rm -rf /)\nEOF")


@pytest.mark.parametrize(
    ("command", "word"),
    [
        ("r''m -rf /", "rm"),
        ('"rm" -rf /', "rm"),
        ("r\\m -rf /", "rm"),
        ("$'\\x72\\x6d' -rf /", "rm"),
        ("$'\\162\\155' -rf /", "rm"),
        ("R=rm; $R -rf /", "rm"),
        ("$(echo rm) -rf /", "rm"),
        ("`echo rm` -rf /", "rm"),
        ("$(printf rm) -rf /", "rm"),
    ],
)
def test_quoting_and_substitution_tricks_resolve_to_the_real_name(command: str, word: str) -> None:
    segment = parse(command).segments[-1]
    assert segment.name == word and [w.values for w in segment.args] == [("-rf",), ("/",)]


def test_a_computed_command_name_is_dynamic_even_when_resolved() -> None:
    assert parse("R=rm; $R -rf x").dynamic_reasons()
    assert parse("$(echo rm) x").dynamic_reasons()
    assert parse("$CMD x").dynamic_reasons()


def test_variables_assigned_in_the_line_expand() -> None:
    assert [w.values for w in parse("X=/; rm -rf $X").segments[-1].args] == [("-rf",), ("/",)]
    assert parse('X=/; rm -rf "$X/"').segments[-1].args[1].values == ("//",)


def test_a_variable_set_in_a_branch_keeps_every_value() -> None:
    target = parse("X=build; if true; then X=/; fi; rm -rf $X").segments[-1].args[1]
    assert set(target.values) == {"build", "/"}


def test_unquoted_expansions_split_into_words() -> None:
    values = parse('X="-rf /"; rm $X').segments[-1].args[0].values
    assert "-rf" in values and "/" in values


def test_brace_expansion_gives_every_alternative() -> None:
    assert set(parse("rm -rf {/,}").segments[0].args[1].values) == {"/", ""}
    assert parse("echo a{1..3}b").segments[0].args[0].values == ("a1b", "a2b", "a3b")
    assert parse("echo '{a,b}'").segments[0].args[0].values == ("{a,b}",)


def test_tilde_and_home_expand_to_the_home_directory() -> None:
    args = parse('rm -rf ~ ~/x "$HOME"/y "~"').segments[0].args
    assert [a.values[0] for a in args[1:]] == [HOME, f"{HOME}/x", f"{HOME}/y", "~"]


def test_for_loops_give_the_variable_each_value() -> None:
    assert set(parse("for d in / ~; do rm -rf $d; done").segments[0].args[1].values) == {"/", HOME}


def test_cd_changes_where_later_commands_run() -> None:
    segments = parse("cd ~ && rm -rf .").segments
    assert segments[-1].cwds == frozenset({HOME})
    assert parse("cd /tmp/x; cd ..; ls").segments[-1].cwds == frozenset({"/tmp"})
    assert parse("cd $(pwd); ls").segments[-1].cwds is None


@pytest.mark.parametrize(
    "command",
    [
        "curl https://x | sh",
        "cat script.sh | bash",
        "echo 'print(1)' | python3",
        "python3 <<EOF\nprint(1)\nEOF",
        "eval \"$CMD\"",
        "bash -c \"$CMD\"",
        "$(curl x)",
        "xargs $TOOL",
    ],
)
def test_commands_whose_effect_is_only_known_at_run_time_are_flagged(command: str) -> None:
    assert parse(command).dynamic_reasons(), command


@pytest.mark.parametrize("command", ["git status", "pytest -q tests", "bash scripts/build.sh", "python -m pytest"])
def test_ordinary_commands_are_static(command: str) -> None:
    assert parse(command).dynamic_reasons() == []


def test_inline_interpreter_code_is_kept_for_the_deny_rules() -> None:
    assert parse("python3 -c 'import os'").segments[0].inline_code == "import os"
    assert parse("perl -e 'unlink 1'").segments[0].inline_code == "unlink 1"
    assert parse("node -e 'x()'").segments[0].inline_code == "x()"
    assert parse("awk 'BEGIN{system(\"ls\")}'").segments[0].inline_code == 'BEGIN{system("ls")}'


def test_wrappers_are_recorded_and_privilege_is_visible() -> None:
    segment = parse("FOO=1 sudo -u me env -i BAR=2 timeout -s KILL 5 nice -n 3 make test").segments[0]
    assert segment.name == "make" and segment.wrappers == ["sudo", "env", "timeout", "nice"]
    assert segment.assignments == ["FOO", "BAR"]


def test_redirections_are_recorded_and_descriptor_copies_are_not() -> None:
    segment = parse("make 2>&1 >> log.txt < in").segments[0]
    assert [(op, t.values[0]) for op, t in segment.redirects] == [(">>", "log.txt"), ("<", "in")]


def test_a_fork_bomb_is_recognised() -> None:
    assert parse(":(){ :|:& };:").fork_bomb
    assert parse("bomb() { bomb | bomb & }; bomb").fork_bomb
    assert parse("f() { echo hi; }; f").fork_bomb is None


def test_a_syntax_error_is_reported_and_split_by_hand_for_the_deny_rules() -> None:
    parsed = parse("ls 'unbalanced ; rm -rf /")
    assert not parsed.parsed and "syntax error" in parsed.problem
    assert any(s.rough and [w.values[0] for w in s.words] == ["rm", "-rf", "/"] for s in parsed.segments)


def test_nesting_is_bounded() -> None:
    command = "x"
    for _ in range(12):
        command = f"bash -c {shlex.quote(command)}"
    parsed = parse(command)
    assert not parsed.parsed and "nested" in parsed.problem


@pytest.mark.parametrize(
    "command",
    [
        "(" * 2000 + "ls" + ")" * 2000,
        "x=" + "$(" * 500 + "ls" + ")" * 500,
        "echo " + '"$(' * 300 + "ls" + ')"' * 300,
        "if a; then " * 300 + "x" + "; fi" * 300,
    ],
)
def test_a_very_deep_line_is_reported_not_a_crash(command: str) -> None:
    parsed = parse(command)
    assert not parsed.parsed and parsed.dynamic_reasons()


def test_odd_bytes_do_not_break_the_analysis() -> None:
    for command in ("rm -rf \x00/", "echo \udcff", "a" * 100_000, "echo {1..100000000}"):
        parse(command)


def test_the_normalised_text_for_deny_patterns() -> None:
    assert parse('"git" push "--force" > out').segments[0].text() == "git push --force > out"
