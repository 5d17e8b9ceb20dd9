"""An image with its detected boxes drawn on it (Pillow only): each box outlined in its class's
colour, with its label and score above it, as the Detect page's canvas draws them."""

from __future__ import annotations

from PIL import Image, ImageDraw

COLOURS = ("#e6194b", "#3cb44b", "#0082c8", "#f58230", "#911eb4", "#46f0f0")


def draw_boxes(image: Image.Image, boxes: list[dict], classes: list[str] | None = None) -> Image.Image:
    """A copy of ``image`` (RGB) with ``boxes`` ({label, score, box} in its pixels) drawn."""
    drawn = image.convert("RGB")
    pen = ImageDraw.Draw(drawn)
    width = max(1, round(max(drawn.size) / 300))
    for i, found in enumerate(boxes):
        label = str(found["label"])
        at = classes.index(label) if classes and label in classes else i
        colour = COLOURS[at % len(COLOURS)]
        x1, y1, x2, y2 = (float(v) for v in found["box"])
        pen.rectangle((x1, y1, x2, y2), outline=colour, width=width)
        pen.text((x1 + 2, max(0.0, y1 - 12)), f"{label} {float(found['score']):.2f}", fill=colour)
    return drawn
