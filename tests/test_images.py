"""Images: header sizes, OpenAI's tile rule for their tokens, one stored copy per content, references
turned into data URLs only in the request, and which models take images."""

from __future__ import annotations

import base64
import struct
from pathlib import Path

import pytest
from image_helpers import png

from catbuddy.context.counting.tokens import counter_for
from catbuddy.images import (
    ImageError,
    content_image_tokens,
    image_size,
    read_image,
    resolve_images,
    store_image,
    supports_vision,
    tile_tokens,
)


# OpenAI's worked examples (platform.openai.com/docs/guides/images-vision, "Calculating costs").
@pytest.mark.parametrize(
    ("width", "height", "tokens"), [(1024, 1024, 765), (2048, 4096, 1105), (4096, 8192, 1105)]
)
def test_tokens_follow_openai_tile_rule(width: int, height: int, tokens: int) -> None:
    assert tile_tokens(width, height) == tokens


def test_an_image_of_unknown_size_costs_the_most_a_high_detail_image_can() -> None:
    assert tile_tokens(None, None) == 1105


def test_sizes_are_read_from_png_gif_and_jpeg_headers() -> None:
    gif = b"GIF89a" + struct.pack("<HH", 640, 480) + b"\x00" * 8
    jpeg = (
        b"\xff\xd8"
        + b"\xff\xe0\x00\x04\x00\x00"
        + b"\xff\xc0\x00\x11\x08"
        + struct.pack(">HH", 300, 200)
        + b"\x00" * 8
    )
    assert image_size(png(7, 5)) == (7, 5)
    assert image_size(gif) == (640, 480)
    assert image_size(jpeg) == (200, 300)


def test_the_same_image_is_stored_once(tmp_path: Path) -> None:
    first = store_image(tmp_path, png(), "image/png")
    second = store_image(tmp_path, png(), "image/png")
    assert first.path == second.path and len(list((tmp_path / "images").iterdir())) == 1


def test_a_reference_becomes_a_data_url_only_in_the_request(tmp_path: Path) -> None:
    stored = store_image(tmp_path, png(), "image/png")
    message = {"role": "user", "content": [{"type": "text", "text": "look"}, stored.part()]}

    (sent,) = resolve_images([message])

    url = sent["content"][1]["image_url"]["url"]
    assert base64.b64decode(url.removeprefix("data:image/png;base64,")) == png()
    assert message["content"][1]["image_url"]["url"].startswith("catbuddy-image://")  # stored as it was


def test_a_message_with_an_image_counts_its_tiles(tmp_path: Path) -> None:
    stored = store_image(tmp_path, png(1024, 1024), "image/png")
    with_image = {"role": "user", "content": [{"type": "text", "text": "look"}, stored.part()]}
    counter = counter_for("o200k_base")

    assert content_image_tokens(with_image["content"]) == 765
    assert (
        counter.count_message(with_image) >= counter.count_message({"role": "user", "content": "look"}) + 765
    )


def test_a_file_that_is_no_image_is_refused_with_the_formats(tmp_path: Path) -> None:
    fake = tmp_path / "fake.png"
    fake.write_text("not an image")
    with pytest.raises(ImageError, match="Supported formats"):
        read_image(fake, "fake.png")


@pytest.mark.parametrize(
    ("model", "configured", "expected"),
    [("gpt-4o", None, True), ("gpt-4o-mini", None, True), ("o3-mini", None, False), ("qwen2.5-coder:32b", None, False),
     ("qwen2.5-vl:7b", None, True), ("my-local", True, True), ("gpt-4o", False, False)],
)  # fmt: skip
def test_vision_is_guessed_from_the_name_unless_configured(
    model: str, configured: bool | None, expected: bool
) -> None:
    assert supports_vision(model, configured) is expected


def test_the_anthropic_provider_gets_an_attached_image_as_its_own_image_block(tmp_path: Path) -> None:
    from catbuddy.llm.anthropic_wire import convert_messages

    stored = store_image(tmp_path, png(), "image/png")
    _, (message,) = convert_messages(
        [{"role": "user", "content": [{"type": "text", "text": "look"}, stored.part()]}]
    )

    text, image = message["content"]
    assert text == {"type": "text", "text": "look"}
    assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
    assert base64.b64decode(image["source"]["data"]) == png()
