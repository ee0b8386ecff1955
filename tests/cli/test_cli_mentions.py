"""Headless @-mentions and images change the request as described: a mentioned file is attached with
numbered lines in the same user message, a folder as a listing, a name that is no file stays text; images
go out as image_url data URLs for models that take them and are refused before sending for others."""

from __future__ import annotations

import json

from image_helpers import png

from catbuddy.testing.script import Reply

CALC = "def add(a, b):\n    return a + b\n"


def user_content(scripted_llm) -> object:
    return scripted_llm.requests[0].messages[-1]["content"]


def test_a_mentioned_file_is_attached_with_numbered_lines(cli, project, scripted_llm):
    (project / "calc.py").write_text(CALC)
    scripted_llm.push(Reply.text("it adds"))

    done = cli("run", "explain @calc.py")

    assert done.returncode == 0, done.stderr
    content = user_content(scripted_llm)
    assert content.startswith('explain @calc.py\n\n<file path="calc.py">\n')
    assert "     1\tdef add(a, b):\n     2\t    return a + b" in content
    assert content.index("</file>") < content.index("[runtime:")  # the runtime block stays last


def test_a_mentioned_folder_is_attached_as_a_listing(cli, project, scripted_llm):
    (project / "src").mkdir()
    (project / "src" / "main.py").write_text("print(1)\n")
    scripted_llm.push(Reply.text("ok"))

    assert cli("run", "what is in @src/?").returncode == 0
    content = user_content(scripted_llm)
    assert '<directory path="src">' in content and "main.py" in content


def test_a_mention_that_names_no_file_stays_plain_text(cli, scripted_llm):
    scripted_llm.push(Reply.text("ok"))

    assert cli("run", "thank @someone for the @decorator idea").returncode == 0
    content = user_content(scripted_llm)
    assert content.startswith("thank @someone for the @decorator idea\n\n[runtime:")


def test_a_mention_outside_the_work_root_is_not_read_without_approval(cli, project, tmp_path, scripted_llm):
    secret = tmp_path / "outside.txt"
    secret.write_text("private notes\n")
    scripted_llm.push(Reply.text("ok"))

    done = cli("run", f"summarise @{secret}")

    assert done.returncode == 0
    assert "private notes" not in user_content(scripted_llm)
    assert "outside the work root" in done.stderr


def test_image_option_sends_a_data_url_and_the_session_keeps_a_reference(
    cli, project, isolated_home, scripted_llm
):
    (project / "shot.png").write_bytes(png())
    scripted_llm.push(Reply.text("a grey square"))

    done = cli(
        "run",
        "--json",
        "--image",
        str(project / "shot.png"),
        "what is this?",
        env={"CATBUDDY_MODEL": "gpt-4o"},
    )

    assert done.returncode == 0, done.stderr
    text, image = user_content(scripted_llm)
    assert text["type"] == "text" and text["text"].startswith("what is this?")
    assert image["type"] == "image_url" and image["image_url"]["url"].startswith("data:image/png;base64,")
    session_id = json.loads(done.stdout)["session_id"]
    session = next(isolated_home.rglob(f"{session_id}.jsonl")).read_text()
    assert "catbuddy-image://" in session and "base64" not in session
    assert len(list((isolated_home / "images").glob("*.png"))) == 1


def test_an_image_mention_attaches_the_image(cli, project, scripted_llm):
    (project / "shot.png").write_bytes(png())
    scripted_llm.push(Reply.text("grey"))

    done = cli("run", "what colour is @shot.png", env={"CATBUDDY_MODEL": "gpt-4o"})

    assert done.returncode == 0, done.stderr
    parts = user_content(scripted_llm)
    assert [p["type"] for p in parts] == ["text", "image_url"]


def test_a_model_without_vision_refuses_images_before_sending(cli, project, scripted_llm):
    (project / "shot.png").write_bytes(png())

    done = cli("run", "--image", str(project / "shot.png"), "what is this?")  # model "scripted"

    assert done.returncode == 2
    assert "scripted does not accept images; nothing was sent" in done.stderr
    assert scripted_llm.requests == []


def test_an_image_mention_for_a_model_without_vision_is_refused_before_sending(cli, project, scripted_llm):
    (project / "shot.png").write_bytes(png())

    done = cli("run", "look at @shot.png")

    assert done.returncode == 1
    assert "does not accept images" in done.stderr and scripted_llm.requests == []


def test_an_image_over_the_limit_is_refused_with_the_limit(cli, project, scripted_llm):
    big = project / "big.png"
    with big.open("wb") as handle:
        handle.write(png())
        handle.truncate(50 * 1024 * 1024)

    done = cli("run", "--image", str(big), "what is this?", env={"CATBUDDY_MODEL": "gpt-4o"})

    assert done.returncode == 2
    assert "50.0 MB; the limit is 20 MB" in done.stderr and scripted_llm.requests == []


def test_an_unsupported_image_format_is_refused(cli, project, scripted_llm):
    (project / "shot.png").write_bytes(b"BM" + b"\x00" * 64)  # a BMP named .png

    done = cli("run", "--image", str(project / "shot.png"), "hi", env={"CATBUDDY_MODEL": "gpt-4o"})

    assert done.returncode == 2
    assert "Supported formats: PNG, JPEG, GIF and WebP" in done.stderr
