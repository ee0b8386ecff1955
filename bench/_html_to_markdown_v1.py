"""A pinned copy of the HTML to Markdown converter before it was made linear (issue 15), kept only so
bench_tools.py can compare the two on the same input in the same run. Not used by catbuddy.

Original docstring: HTML to Markdown for web_fetch, on the standard library's HTMLParser.

Good enough for a model to read a page: headings, paragraphs, links (made absolute), emphasis, inline
code and fenced ``pre`` blocks, nested lists, blockquotes, images and rough tables. Scripts, styles
and other invisible parts are dropped. Nested content is collected in "sinks" (a list item, a cell,
a link text) and rendered when its element closes, so prefixes and indentation come out right.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from html.parser import HTMLParser
from urllib.parse import urljoin

SKIPPED_TAGS = {"script", "style", "noscript", "template", "svg", "iframe", "object", "canvas", "head"}
BLOCK_TAGS = {
    "p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "form", "figure",
    "figcaption", "dl", "dt", "dd", "details", "summary", "address", "fieldset",
}  # fmt: skip
VOID_TAGS = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "wbr"}
EMPHASIS = {"strong": "**", "b": "**", "em": "*", "i": "*", "del": "~~", "s": "~~"}


def html_to_markdown(html: str, base_url: str = "") -> str:
    converter = _Converter(base_url)
    converter.feed(html)
    converter.close()
    return converter.result()


class _Sink:
    def __init__(self, tag: str, finish: Callable[[str], None]) -> None:
        self.tag = tag
        self.parts: list[str] = []
        self.finish = finish


class _Converter(HTMLParser):
    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.sinks: list[_Sink] = [_Sink("root", lambda _: None)]
        self.skip: list[str] = []  # open skipped elements
        self.pre = 0
        self.pre_lang = ""
        self.lists: list[list[int]] = []  # per open list: [is_ordered, next number, open item's sink or -1]
        self.tables: list[dict[str, list]] = []
        self.title = ""
        self.in_title = False

    # output helpers --------------------------------------------------------------------------------
    @property
    def parts(self) -> list[str]:
        return self.sinks[-1].parts

    def write(self, text: str) -> None:
        self.parts.append(text)

    def tail(self) -> str:
        return "".join(self.parts[-3:])

    def block(self, newlines: int = 2) -> None:
        """End the current block: make the output end with ``newlines`` line breaks."""
        current = "".join(self.parts)
        if not current.strip():
            return
        have = len(current) - len(current.rstrip("\n"))
        if have < newlines:
            self.write("\n" * (newlines - have))

    def open(self, tag: str, finish: Callable[[str], None]) -> None:
        self.sinks.append(_Sink(tag, finish))

    def close(self, tag: str | None = None) -> None:  # type: ignore[override]
        if tag is None:  # HTMLParser.close(): flush everything still open
            super().close()
            while len(self.sinks) > 1:
                self._pop()
            return
        if all(s.tag != tag for s in self.sinks[1:]):
            return
        while self.sinks[-1].tag != tag:
            self._pop()
        self._pop()

    def _pop(self) -> None:
        sink = self.sinks.pop()
        sink.finish("".join(sink.parts))

    # parser callbacks ----------------------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {k: v or "" for k, v in attrs}
        if tag == "title":
            self.in_title = True
        if self.skip or tag in SKIPPED_TAGS:
            if tag not in VOID_TAGS:
                self.skip.append(tag)
            return
        if tag in BLOCK_TAGS:
            self.block()
        elif re.fullmatch(r"h[1-6]", tag):
            self.block()
            self.open(tag, partial(self._heading, int(tag[1])))
        elif tag == "br":
            self.write("\n")
        elif tag == "hr":
            self.block()
            self.write("---")
            self.block()
        elif tag in EMPHASIS and not self.pre:
            self.open(tag, partial(self._emphasis, EMPHASIS[tag]))
        elif tag == "a":
            href = attr.get("href", "")
            self.open("a", partial(self._link, href))
        elif tag == "img":
            alt, src = attr.get("alt", ""), attr.get("src", "")
            if src and not src.startswith("data:"):
                self.write(f"![{alt}]({urljoin(self.base_url, src)})")
        elif tag == "pre":
            self.block()
            self.pre += 1
            self.pre_lang = _language(attr.get("class", ""))
            self.open("pre", self._pre)
        elif tag == "code":
            if self.pre:
                self.pre_lang = self.pre_lang or _language(attr.get("class", ""))
            else:
                self.open("code", self._code)
        elif tag in ("ul", "ol"):
            self.block(1 if self.lists else 2)
            start = attr.get("start", "1")
            self.lists.append([tag == "ol", int(start) if start.isdigit() else 1, -1])
        elif tag == "li":
            if not self.lists:
                self.lists.append([False, 1, -1])
            self._close_item()
            self.open("li", self._item)
            self.lists[-1][2] = len(self.sinks) - 1
        elif tag == "blockquote":
            self.block()
            self.open("blockquote", self._quote)
        elif tag == "table":
            self.block()
            self.tables.append({"rows": []})
            self.open("table", self._table)
        elif tag == "tr" and self.tables:
            self.close("tr")
            self.tables[-1]["rows"].append([])
            self.open("tr", lambda _: None)
        elif tag in ("td", "th") and self.tables:
            self.close("td")
            self.close("th")
            if not self.tables[-1]["rows"]:
                self.tables[-1]["rows"].append([])
            self.open(tag, self._cell)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if self.skip:
            if tag in self.skip:
                while self.skip and self.skip.pop() != tag:
                    pass
            return
        if tag in BLOCK_TAGS:
            self.block()
        elif tag in ("ul", "ol"):
            self._close_item()
            if self.lists:
                self.lists.pop()
            self.block(1 if self.lists else 2)
        elif tag == "li":
            self._close_item()
        elif tag == "pre":
            self.close("pre")
        elif tag == "code" and self.pre:
            return
        else:
            self.close(tag)

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title += data
        if self.skip:
            return
        if self.pre:
            self.write(data)
            return
        text = re.sub(r"\s+", " ", data)
        if not text.strip() and (not self.parts or self.tail().endswith((" ", "\n"))):
            return
        if self.tail().endswith("\n") or not "".join(self.parts):
            text = text.lstrip()
        self.write(text)

    # renderers ---------------------------------------------------------------------------------------
    def _heading(self, level: int, text: str) -> None:
        self.write("#" * level + " " + " ".join(text.split()))
        self.block()

    def _emphasis(self, mark: str, text: str) -> None:
        self.write(f"{mark}{text.strip()}{mark}" if text.strip() else text)

    def _link(self, href: str, text: str) -> None:
        label = " ".join(text.split())
        if not href or href.startswith(("javascript:", "#")) or not label:
            self.write(label or text)
            return
        self.write(f"[{label}]({urljoin(self.base_url, href)})")

    def _code(self, text: str) -> None:
        fence = "``" if "`" in text else "`"
        self.write(f"{fence}{text}{fence}")

    def _pre(self, text: str) -> None:
        self.pre -= 1
        fence = "````" if "```" in text else "```"
        self.block()
        self.write(f"{fence}{self.pre_lang}\n{text.strip(chr(10))}\n{fence}")
        self.block()
        self.pre_lang = ""

    def _close_item(self) -> None:
        """Close the open item of the innermost list (``</li>`` is optional in HTML)."""
        if not self.lists or self.lists[-1][2] < 0:
            return
        index = self.lists[-1][2]
        self.lists[-1][2] = -1
        while len(self.sinks) > index:
            self._pop()

    def _item(self, text: str) -> None:
        ordered, number = (self.lists[-1][0], self.lists[-1][1]) if self.lists else (False, 1)
        marker = f"{number}. " if ordered else "- "
        if self.lists:
            self.lists[-1][1] += 1
        body = text.strip("\n").strip(" ")
        lines = [line.rstrip() for line in body.split("\n")]
        lines = [lines[0]] + [(" " * len(marker) + line) if line else "" for line in lines[1:]]
        self.block(1)
        self.write(marker + "\n".join(lines))
        self.write("\n")

    def _quote(self, text: str) -> None:
        lines = text.strip("\n").split("\n")
        self.block()
        self.write("\n".join(f"> {line}".rstrip() for line in lines))
        self.block()

    def _cell(self, text: str) -> None:
        if self.tables and self.tables[-1]["rows"]:
            self.tables[-1]["rows"][-1].append(" ".join(text.split()).replace("|", "\\|"))

    def _table(self, _: str) -> None:
        rows = [r for r in self.tables.pop()["rows"] if r]
        if not rows:
            return
        width = max(len(r) for r in rows)
        lines = []
        for index, row in enumerate(rows):
            cells = row + [""] * (width - len(row))
            lines.append("| " + " | ".join(cells) + " |")
            if index == 0:
                lines.append("|" + "|".join(["---"] * width) + "|")
        self.block()
        self.write("\n".join(lines))
        self.block()

    def result(self) -> str:
        text = "".join(self.sinks[0].parts)
        text = re.sub(r"[ \t]+\n", "\n", text)
        text = re.sub(r"\n{3,}", "\n\n", text).strip()
        title = " ".join(self.title.split())
        if title and not text.startswith("# "):
            text = f"# {title}\n\n{text}" if text else f"# {title}"
        return text


def _language(classes: str) -> str:
    match = re.search(r"(?:language|lang)-([\w+-]+)", classes)
    return match.group(1) if match else ""
