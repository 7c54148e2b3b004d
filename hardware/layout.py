"""The layout check: what a frame drawn through the recording canvas got wrong.

:class:`hardware.draw.Canvas` records every item it draws (text with its
font, fill and ink; filled bars and rectangles; lines; icons; other shapes).
:func:`problems` reads those records and the final image and names every
rule a frame breaks:

* **edge** — a glyph's or icon's ink is outside the panel or on its clear
  one-pixel margin;
* **cut** — a text's or icon's ink pixels are not all intact in the final
  frame: something drew over them (a bar, a band, another text);
* **bar** — a highlighted (inverted) text is not inside a lit bar with at
  least one lit row above and below its ink (and a lit column each side);
* **overlap** — the ink boxes of two texts or icons overlap, or a line or
  shape crosses a text's ink.

Items drawn before a full-frame overlay (a message panel clears the whole
frame) are hidden, not cut, and are not checked.
"""

from __future__ import annotations

from . import draw as d


def _intersects(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _inside(inner, outer) -> bool:
    return outer[0] <= inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2] and inner[3] <= outer[3]


def _label(item) -> str:
    if item["kind"] == "text":
        return repr(item["text"])
    if item["kind"] == "icon":
        return f"icon {item['name']}"
    return f"{item['kind']} {item['box']}"


def visible_items(canvas) -> list[dict]:
    """The items still on screen: those after the last full-frame overlay."""
    items = list(canvas.items)
    for i in range(len(items) - 1, -1, -1):
        if items[i].get("overlay"):
            return items[i:]
    return items


def problems(canvas) -> list[str]:
    """Every layout rule the frame on ``canvas`` breaks, as readable lines ([] if none)."""
    found: list[str] = []
    items = visible_items(canvas)
    image = canvas.image
    inky = [it for it in items if it["kind"] in ("text", "icon")]
    m = d.MARGIN
    for it in inky:
        x0, y0, x1, y1 = it["box"]
        if x0 < m or y0 < m or x1 > d.WIDTH - m or y1 > d.HEIGHT - m:
            found.append(f"edge: {_label(it)} ink {it['box']} reaches the panel's clear margin")
        # Intact: every ink pixel of the item still has the item's fill.
        mask, fill = it["mask"], it["fill"]
        broken = 0
        for yy in range(mask.height):
            for xx in range(mask.width):
                if mask.getpixel((xx, yy)):
                    px, py = x0 + xx, y0 + yy
                    if not (0 <= px < d.WIDTH and 0 <= py < d.HEIGHT) or image.getpixel((px, py)) != fill:
                        broken += 1
        if broken:
            found.append(f"cut: {broken} ink pixel(s) of {_label(it)} at {it['box']} drawn over or off the panel")
        if it["fill"] == d.OFF and not _ringed(image, (x0 - 1, y0 - 1, x1 + 1, y1 + 1)):
            found.append(f"bar: highlighted {_label(it)} ink {it['box']} lacks a lit row/column around it")
    for i, a in enumerate(inky):
        for b in inky[i + 1:]:
            if a.get("parent") is b or b.get("parent") is a or (a.get("parent") is not None and a.get("parent") is b.get("parent")):
                continue
            if _intersects(a["box"], b["box"]):
                found.append(f"overlap: {_label(a)} {a['box']} and {_label(b)} {b['box']}")
    for line in (it for it in items if it["kind"] in ("line", "shape", "rect")):
        for t in inky:
            if _intersects(line["box"], t["box"]) and not (line["kind"] == "rect" and _inside(t["box"], _inner(line["box"]))):
                found.append(f"overlap: {_label(line)} crosses {_label(t)} {t['box']}")
    return found


def _inner(box):
    return box[0] + 1, box[1] + 1, box[2] - 1, box[3] - 1



def _ringed(image, box) -> bool:
    """Whether every pixel of the one-pixel ring ``box`` (right/bottom
    exclusive) is lit in the final frame: the bar a highlighted text needs."""
    x0, y0, x1, y1 = box
    if x0 < 0 or y0 < 0 or x1 > d.WIDTH or y1 > d.HEIGHT:
        return False
    ring = [(x, y0) for x in range(x0, x1)] + [(x, y1 - 1) for x in range(x0, x1)]
    ring += [(x0, y) for y in range(y0, y1)] + [(x1 - 1, y) for y in range(y0, y1)]
    return all(image.getpixel(p) for p in ring)
