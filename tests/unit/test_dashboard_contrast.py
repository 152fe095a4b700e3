"""Every colour of the dashboard can be seen: WCAG 2.1's contrast ratio, computed from the stylesheet and scripts as
they are, so a new colour (or a lighter one) fails here instead of in front of someone who cannot tell it from white.

The rules (WCAG 1.4.11, non-text contrast, and 1.4.3 for text):

- each state's colour (``--done``, ``--pending``...) is a border, a bar, a line: at least 3:1 against every light
  surface of the page (the page, the header, table heads, buttons) and against its own fill (``--done-bg``: the
  border of a node or a badge is seen against both), and the text drawn on a fill (``--ink``) at least 4.5:1;
- every stroke, border colour and fill of a rule is a graphic that carries meaning (a node's border, a timeline's
  bar or pending span, an edge): at least 3:1 against the surfaces it is drawn on; in a rule that also sets a stroke
  or border, the fill is that shape's background, and the stroke must stand out from it instead;
- every text colour: at least 4.5:1 against its background (its own rule's, that of the element it sits in, else
  every light surface);
- every colour a script writes into the page (an SVG arrowhead): at least 3:1 against the page.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[2] / "dashboard" / "static"
CSS = (STATIC / "dashboard.css").read_text()
SCRIPTS = sorted(STATIC.glob("*.js"))
TONES = ("done", "running", "pending", "trouble", "failed", "waiting", "skipped")
DECORATIVE = {".timeline svg .axis": "the timeline's grid lines: the times are written under them"}
"""Rules whose colours carry no meaning of their own (WCAG 1.4.11 exempts them), and why."""
HEX = re.compile(r"#(?:[0-9a-fA-F]{6}|[0-9a-fA-F]{3})\b")


def luminance(colour: str) -> float:
    digits = colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(c * 2 for c in digits)
    channels = [int(digits[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def ratio(a: str, b: str) -> float:
    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def rules(css: str) -> dict[str, dict[str, str]]:
    """Each selector's declarations (a rule with several selectors counts for each), comments removed."""
    found: dict[str, dict[str, str]] = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", re.sub(r"/\*.*?\*/", "", css, flags=re.S)):
        declarations = dict((name.strip(), value.strip()) for name, _, value in
                            (part.partition(":") for part in body.split(";")) if value.strip())
        for selector in selectors.split(","):
            found.setdefault(" ".join(selector.split()), {}).update(declarations)
    return found


RULES = rules(CSS)
VARIABLES = {name: value for name, value in RULES[":root"].items() if name.startswith("--")}


def colour(value: str | None) -> str | None:
    """The colour a value is (following ``var(--x)``), or None when it is none (``none``, a shorthand...)."""
    if value is None:
        return None
    named = re.fullmatch(r"var\((--[\w-]+)\)", value)
    if named:
        return colour(VARIABLES[named.group(1)])
    return value if HEX.fullmatch(value) else None


def background(selector: str) -> str | None:
    return colour(RULES.get(selector, {}).get("background") or RULES.get(selector, {}).get("background-color"))


SURFACES = sorted({found for selector in ("body", ".top", ".grid th", "button") if (found := background(selector))})
"""The light surfaces of the page: text, borders and bars are drawn on these."""


def test_the_surfaces_are_the_pages_own() -> None:
    assert "#fff" in SURFACES and len(SURFACES) >= 3


@pytest.mark.parametrize("tone", TONES)
def test_each_state_colour_stands_out_from_the_page_and_from_its_own_fill(tone: str) -> None:
    line, fill = colour(VARIABLES[f"--{tone}"]), colour(VARIABLES[f"--{tone}-bg"])
    for surface in SURFACES:
        assert ratio(line, surface) >= 3, f"--{tone} {line} on {surface}: {ratio(line, surface):.2f}:1 < 3:1"
    assert ratio(line, fill) >= 3, f"--{tone} {line} on --{tone}-bg {fill}: {ratio(line, fill):.2f}:1 < 3:1"
    ink = colour(VARIABLES["--ink"])
    assert ratio(ink, fill) >= 4.5, f"text {ink} on --{tone}-bg {fill}: {ratio(ink, fill):.2f}:1 < 4.5:1"


GRAPHICS = [(selector, declarations) for selector, declarations in RULES.items()
            if selector != ":root" and selector not in DECORATIVE
            and any(colour(declarations.get(p)) for p in ("stroke", "border-color", "fill"))]


@pytest.mark.parametrize(("selector", "declarations"), GRAPHICS, ids=[s for s, _ in GRAPHICS])
def test_every_stroke_border_and_fill_is_seen_against_what_it_is_drawn_on(selector: str, declarations: dict) -> None:
    edge = colour(declarations.get("stroke")) or colour(declarations.get("border-color"))
    fill = colour(declarations.get("fill")) or background(selector)
    if edge is None:  # a shape whose fill is all of it: a timeline bar, a pending span, an arrowhead, text
        for surface in SURFACES:
            assert ratio(fill, surface) >= 3, f"{selector}: {fill} on {surface} is {ratio(fill, surface):.2f}:1"
        return
    behind = [fill] if fill else []
    for surface in [*SURFACES, *behind]:
        assert ratio(edge, surface) >= 3, f"{selector}: {edge} on {surface} is {ratio(edge, surface):.2f}:1"


def test_the_timelines_pending_span_and_every_bar_are_graphics_checked_above() -> None:
    checked = {selector for selector, _ in GRAPHICS}
    assert ".timeline svg .pending" in checked
    assert {f".timeline svg .bar.tone-{tone}" for tone in TONES} <= checked
    assert {f".node.tone-{tone} rect" for tone in TONES} <= checked
    assert {f".tone-{tone}.badge" for tone in TONES} <= checked


TEXTS = [(selector, declarations["color"]) for selector, declarations in RULES.items()
         if colour(declarations.get("color"))]


@pytest.mark.parametrize(("selector", "value"), TEXTS, ids=[s for s, _ in TEXTS])
def test_every_text_colour_is_readable_on_its_background(selector: str, value: str) -> None:
    text = colour(value)
    # Its own background, else the element it sits in (".cluster strong" sits in ".cluster"), else the page's.
    container = selector.split(" ")[0]
    own = background(selector) or (background(container) if container != selector else None)
    for surface in [own] if own else SURFACES:
        assert ratio(text, surface) >= 4.5, f"{selector}: text {text} on {surface} is {ratio(text, surface):.2f}:1"


@pytest.mark.parametrize("script", SCRIPTS, ids=[script.name for script in SCRIPTS])
def test_every_colour_a_script_draws_is_seen_against_the_page(script: Path) -> None:
    for found in HEX.findall(script.read_text()):
        for surface in SURFACES:
            assert ratio(found, surface) >= 3, f"{script.name}: {found} on {surface} is {ratio(found, surface):.2f}:1"


def test_the_ratio_is_wcags() -> None:
    assert ratio("#000", "#fff") == pytest.approx(21)
    assert ratio("#fcefd2", "#fff") == pytest.approx(1.14, abs=0.01)  # the old pending span: not seen
    assert ratio("#767676", "#fff") == pytest.approx(4.54, abs=0.01)
