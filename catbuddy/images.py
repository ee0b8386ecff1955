"""Images in messages: checked (format, size), stored once in the catbuddy home, referenced from the
session, sent as a data URL, and counted with OpenAI's tile rule.

A user message with an image keeps a reference part ``{"type": "image_url", "image_url": {"url":
"catbuddy-image:///…/images/<sha256>.png?w=800&h=600"}}`` on disk and in the working history, so the
session file holds a path, not megabytes of base64 in every record. The provider turns each reference
into a ``data:`` URL just before the request goes out (``resolve_images``).
"""

from __future__ import annotations

import base64
import hashlib
import math
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlparse

from catbuddy.errors import EXIT_USAGE, CatbuddyError

IMAGE_SCHEME = "catbuddy-image"
IMAGES_DIR = "images"  # under the catbuddy home
MAX_IMAGE_BYTES = 20 * 1024 * 1024  # OpenAI's per-image limit; larger files are refused before sending
IMAGE_SUFFIXES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
                  ".webp": "image/webp"}  # fmt: skip
EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}
# OpenAI's rule (platform.openai.com/docs/guides/images-vision, "Calculating costs"): fit in 2048×2048,
# then shortest side 768, then 170 tokens per 512-px tile plus 85. Counted at "high" detail, never fewer.
TILE_SIZE, TILE_TOKENS, BASE_TOKENS, FIT_SIZE, SHORT_SIDE = 512, 170, 85, 2048, 768
UNKNOWN_SIZE_TOKENS = 1_105  # a 2048×768-or-larger image: 6 tiles, the most a "high" image costs
# Model names that accept images, matched as substrings of the lower-cased name; a model's
# `vision = true|false` in config.toml overrides this guess.
VISION_HINTS = ("gpt-4o", "gpt-4.1", "gpt-4-turbo", "gpt-4-vision", "gpt-5", "o1", "o3", "o4", "claude-3",
                "claude-sonnet", "claude-opus", "claude-haiku", "gemini", "llava", "-vl", "vision", "pixtral",
                "gemma3", "gemma-3", "minicpm-v", "moondream", "grok-4", "scripted-vision")  # fmt: skip
NOT_VISION_HINTS = ("o1-mini", "o3-mini", "gpt-4o-audio", "gpt-4o-mini-audio")


class ImageError(CatbuddyError):
    """An image that cannot be sent: its format, size or model. Bad input: exit 2 in `catbuddy run`."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True)
class StoredImage:
    path: Path  # the copy in the catbuddy home
    mime: str
    width: int | None
    height: int | None
    size: int

    def part(self) -> dict[str, Any]:
        """The reference content part kept in the session."""
        query = f"?w={self.width}&h={self.height}" if self.width and self.height else ""
        return {"type": "image_url", "image_url": {"url": f"{IMAGE_SCHEME}://{quote(str(self.path))}{query}"}}


def stored_reference(path: Path) -> dict[str, Any]:
    """The reference part for an image already in the catbuddy home (its size read from its header)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(64 * 1024)
    except OSError:
        head = b""
    width, height = image_size(head)
    return StoredImage(path, sniff_mime(head) or "image/png", width, height, 0).part()


def is_image_path(path: Path) -> bool:
    return path.suffix.lower() in IMAGE_SUFFIXES


def supports_vision(model: str, configured: bool | None = None) -> bool:
    """Whether ``model`` takes images: the config's ``vision`` when set, else a guess from its name."""
    if configured is not None:
        return configured
    name = model.lower()
    if any(hint in name for hint in NOT_VISION_HINTS):
        return False
    return any(hint in name for hint in VISION_HINTS)


def sniff_mime(data: bytes) -> str | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def read_image(path: Path, shown: str) -> tuple[bytes, str]:
    """The file's bytes and type, or ImageError naming the limit or the formats accepted."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ImageError(f"cannot read image {shown}: {exc.strerror or exc}") from None
    if size > MAX_IMAGE_BYTES:
        raise ImageError(
            f"image {shown} is {size / 1024 / 1024:.1f} MB; the limit is {MAX_IMAGE_BYTES // 1024 // 1024} MB",
            "Resize or compress it (e.g. to PNG or JPEG under the limit) and attach it again.",
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ImageError(f"cannot read image {shown}: {exc.strerror or exc}") from None
    mime = sniff_mime(data)
    if mime is None:
        raise ImageError(
            f"{shown} is not an image format models accept",
            "Supported formats: PNG, JPEG, GIF and WebP; convert it to one of them.",
        )
    return data, mime


def store_image(home: Path, data: bytes, mime: str) -> StoredImage:
    """Keep one copy per content (named by its sha256) under ``home/images``."""
    folder = home / IMAGES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{hashlib.sha256(data).hexdigest()}.{EXTENSIONS[mime]}"
    if not target.exists():
        partial = target.with_suffix(f".{os.getpid()}.part")
        partial.write_bytes(data)
        os.replace(partial, target)
    width, height = image_size(data)
    return StoredImage(target, mime, width, height, len(data))


def image_size(data: bytes) -> tuple[int | None, int | None]:
    """Width and height from the header (PNG, GIF, JPEG, WebP), or (None, None)."""
    try:
        if data.startswith(b"\x89PNG"):
            width, height = struct.unpack(">II", data[16:24])
            return int(width), int(height)
        if data[:3] == b"GIF":
            width, height = struct.unpack("<HH", data[6:10])
            return int(width), int(height)
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return _webp_size(data)
        if data.startswith(b"\xff\xd8"):
            return _jpeg_size(data)
    except struct.error:
        pass
    return None, None


def _webp_size(data: bytes) -> tuple[int | None, int | None]:
    chunk = data[12:16]
    if chunk == b"VP8X":
        return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
    if chunk == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", data[26:30])
        return int(width) & 0x3FFF, int(height) & 0x3FFF
    return None, None


def _jpeg_size(data: bytes) -> tuple[int | None, int | None]:
    index = 2
    while index + 9 < len(data):
        if data[index] != 0xFF:
            index += 1
            continue
        marker = data[index + 1]
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
            height, width = struct.unpack(">HH", data[index + 5 : index + 9])
            return int(width), int(height)
        index += 2 + int.from_bytes(data[index + 2 : index + 4], "big")
    return None, None


def tile_tokens(width: int | None, height: int | None) -> int:
    """OpenAI's image token rule at "high" detail."""
    if not width or not height:
        return UNKNOWN_SIZE_TOKENS
    w, h = float(width), float(height)
    if max(w, h) > FIT_SIZE:
        scale = FIT_SIZE / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > SHORT_SIDE:
        scale = SHORT_SIDE / min(w, h)
        w, h = w * scale, h * scale
    return BASE_TOKENS + TILE_TOKENS * math.ceil(w / TILE_SIZE) * math.ceil(h / TILE_SIZE)


def image_parts(content: Any) -> list[Mapping[str, Any]]:
    if not isinstance(content, list):
        return []
    return [p for p in content if isinstance(p, Mapping) and p.get("type") == "image_url"]


def content_image_tokens(content: Any) -> int:
    """The tokens the images of a message's content cost (references and data URLs alike)."""
    total = 0
    for part in image_parts(content):
        url = str((part.get("image_url") or {}).get("url", ""))
        if url.startswith(f"{IMAGE_SCHEME}:"):
            query = parse_qs(urlparse(url).query)
            width = _int(query.get("w"))
            height = _int(query.get("h"))
        elif url.startswith("data:"):
            width, height = _data_url_size(url)
        else:
            width = height = None
        total += tile_tokens(width, height)
    return total


def _int(values: list[str] | None) -> int | None:
    return int(values[0]) if values and values[0].isdigit() else None


def _data_url_size(url: str) -> tuple[int | None, int | None]:
    head = url.partition(",")[2][:64]  # enough base64 for any header we read
    try:
        return image_size(base64.b64decode(head[: len(head) // 4 * 4]))
    except ValueError:
        return None, None


def reference_path(url: str) -> Path | None:
    if not url.startswith(f"{IMAGE_SCHEME}://"):
        return None
    return Path(unquote(urlparse(url).path))


def image_source(url: str) -> tuple[str, str] | None:
    """(mime type, base64 data) of a data URL or a stored reference (for providers with their own image
    blocks, such as Anthropic's); None when it cannot be had."""
    if url.startswith("data:"):
        head, _, encoded = url.partition(",")
        return head.removeprefix("data:").partition(";")[0] or "image/png", encoded
    path = reference_path(url)
    if path is None:
        return None
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    return sniff_mime(raw) or "image/png", base64.b64encode(raw).decode("ascii")


def resolve_images(messages: list[Any]) -> list[Any]:
    """The messages as sent: every image reference becomes a ``data:`` URL (a missing file: a note)."""
    if not any(image_parts(m.get("content")) for m in messages if isinstance(m, Mapping)):
        return messages
    return [
        _resolve_message(m) if isinstance(m, Mapping) and image_parts(m.get("content")) else m
        for m in messages
    ]


def _resolve_message(message: Mapping[str, Any]) -> dict[str, Any]:
    parts: list[Any] = []
    for part in message["content"]:
        url = str((part.get("image_url") or {}).get("url", "")) if isinstance(part, Mapping) else ""
        path = reference_path(url)
        if path is None:
            parts.append(part)
            continue
        try:
            data = path.read_bytes()
        except OSError:
            parts.append({"type": "text", "text": f"[image {path.name} is no longer in the catbuddy home]"})
            continue
        mime = sniff_mime(data) or "image/png"
        encoded = base64.b64encode(data).decode("ascii")
        parts.append({"type": "image_url", "image_url": {"url": f"data:{mime};base64,{encoded}"}})
    return {**message, "content": parts}
