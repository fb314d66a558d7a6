"""The documentation: README.md stays short, and every relative link in it and in docs/*.md
resolves (the file exists; a #anchor names a heading of the target, by GitHub's slug), and
every page of docs/ is linked from the README."""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

pytestmark = pytest.mark.quick  # bash test.sh --quick (tests/conftest.py)

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
MAX_README_LINES = 250

FENCE = re.compile(r"^ *(```|~~~).*?^ *\1[^\n]*$", re.M | re.S)  # fenced code blocks
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)  # `inline code`
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, ...


def prose(text: str) -> str:
    """The text without code blocks and code spans, where `[x](y)` and `# x` are not markdown."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: inline markup dropped, lowercased, punctuation other than
    `-` and `_` removed, spaces to `-`."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = text.replace("`", "").lower()
    text = "".join(c for c in text if c.isalnum() or c in "-_ ")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor of a page; a repeated heading's slug gets -1, -2, ... as on GitHub."""
    found, seen = set(), {}
    for heading in HEADING.findall(FENCE.sub("", path.read_text())):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(path: Path) -> list[str]:
    return [target for target in LINK.findall(prose(path.read_text())) if not EXTERNAL.match(target)]


def test_the_readme_is_short():
    n = len(README.read_text().splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines (at most {MAX_README_LINES}): move detail to docs/"


def test_there_are_pages():
    assert PAGES, "docs/ has no pages"


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    broken = []
    for target in links(page):
        file, _, anchor = target.partition("#")
        dest = (page.parent / unquote(file)).resolve() if file else page
        if not dest.exists():
            broken.append(f"{target}: no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
        elif anchor and (dest.suffix != ".md" or unquote(anchor) not in anchors(dest)):
            broken.append(f"{target}: {dest.name} has no heading with the anchor #{anchor}")
    assert not broken, f"{page.relative_to(ROOT)}: broken links:\n" + "\n".join(broken)


def test_every_page_is_linked_from_the_readme():
    linked = {(ROOT / unquote(t.partition("#")[0])).resolve() for t in links(README) if t.partition("#")[0]}
    missing = [str(p.relative_to(ROOT)) for p in PAGES if p.resolve() not in linked]
    assert not missing, f"README.md links no: {', '.join(missing)}"


@pytest.mark.parametrize("heading,anchor", [
    ("The registry (`ops.yaml`)", "the-registry-opsyaml"),
    ("Tensor–Scalar overloads", "tensorscalar-overloads"),
    ("How `generated/` is written", "how-generated-is-written"),
    ("An argument's value picks the kernel", "an-arguments-value-picks-the-kernel"),
    ("Sanitizers, on demand", "sanitizers-on-demand"),
    ("check_metal and [the build](build.md)", "check_metal-and-the-build"),
])
def test_slug_is_githubs(heading, anchor):
    assert slug(heading) == anchor


def test_a_broken_link_is_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## A section\n\n[ok](#a-section) [bad](#nowhere) [gone](missing.md)\n"
                    "```\n[not a link](nowhere.md)\n```\n`[nor this](nowhere.md)`\n")
    assert links(page) == ["#a-section", "#nowhere", "missing.md"]
    assert anchors(page) == {"title", "a-section"}
