"""Check that a .drawio file is well-formed and that draw.io will open it as intended.

Usage: python check_drawio.py FILE.drawio [...]
Prints one line per problem and exits 1 if any; prints "ok" lines and exits 0 otherwise.
Only uncompressed diagrams (an <mxGraphModel> inside <diagram>) are checked.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET


def check(path: str) -> list[str]:
    try:
        tree = ET.parse(path)
    except (OSError, ET.ParseError) as exc:
        return [f"{path}: not readable XML: {exc}"]
    problems: list[str] = []
    mxfile = tree.getroot()
    if mxfile.tag != "mxfile":
        return [f"{path}: the root element is <{mxfile.tag}>, expected <mxfile>"]
    diagrams = mxfile.findall("diagram")
    if not diagrams:
        return [f"{path}: no <diagram> inside <mxfile>"]
    for number, diagram in enumerate(diagrams, start=1):
        where = f"{path}: page {number} ({diagram.get('name', 'unnamed')})"
        model = diagram.find("mxGraphModel")
        if model is None:
            problems.append(f"{where}: no <mxGraphModel> (compressed pages are not checked)")
            continue
        problems += [f"{where}: {message}" for message in _check_model(model)]
    return problems


def _check_model(model: ET.Element) -> list[str]:
    root = model.find("root")
    if root is None:
        return ["no <root> inside <mxGraphModel>"]
    cells = root.findall("mxCell")
    problems: list[str] = []
    ids: dict[str, ET.Element] = {}
    for cell in cells:
        cell_id = cell.get("id")
        if not cell_id:
            problems.append("an <mxCell> has no id")
        elif cell_id in ids:
            problems.append(f"id {cell_id!r} is used twice")
        else:
            ids[cell_id] = cell
    if "0" not in ids or "1" not in ids or ids["1"].get("parent") != "0":
        problems.append('the first cells must be <mxCell id="0"/> and <mxCell id="1" parent="0"/>')
    for cell_id, cell in ids.items():
        if cell_id == "0":
            continue
        parent = cell.get("parent")
        if parent not in ids:
            problems.append(f"cell {cell_id!r}: parent {parent!r} does not exist")
        is_vertex, is_edge = cell.get("vertex") == "1", cell.get("edge") == "1"
        if is_vertex and is_edge:
            problems.append(f"cell {cell_id!r} is both vertex and edge")
        if (is_vertex or is_edge) and cell.find("mxGeometry") is None:
            problems.append(f'cell {cell_id!r} has no <mxGeometry as="geometry">')
        if is_vertex:
            geometry = cell.find("mxGeometry")
            if geometry is not None and not (geometry.get("width") and geometry.get("height")):
                problems.append(f"vertex {cell_id!r} needs width and height on its geometry")
        if is_edge:
            for end in ("source", "target"):
                ref = cell.get(end)
                if ref is not None and ref not in ids:
                    problems.append(f"edge {cell_id!r}: {end} {ref!r} does not exist")
    return problems


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    failed = False
    for path in argv:
        problems = check(path)
        failed = failed or bool(problems)
        print("\n".join(problems) if problems else f"{path}: ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
