"""Every relative link of the README and docs/ resolves (the README is a front door to
docs/, and a page moved or renamed must not leave a dead link behind)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import DOC_PAGES, ROOT

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"```.*?```", re.S)


def heading_anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as dashes."""
    headings = re.findall(r"^#+ (.+)$", FENCE.sub("", page.read_text()), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def broken_links(page: Path) -> list[str]:
    """The relative links of `page` (outside code blocks) whose file, or heading, does not exist."""
    broken = []
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in heading_anchors(linked):
            broken.append(f"{target}: no heading #{anchor}")
    return broken


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# Here we are\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](there.md) [ok](there.md#here-we-are) [web](https://example.com) ![img](there.md)\n"
        "[gone](docs/gone.md) [no heading](there.md#elsewhere)\n```\n[in code](not-checked.md)\n```\n"
    )
    assert broken_links(page) == ["docs/gone.md: no such file", "there.md#elsewhere: no heading #elsewhere"]


def test_the_readme_is_a_front_door_that_links_every_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert len(pages) >= 6 and [p for p in pages if f"(docs/{p})" not in readme] == []


CITED = re.compile(r"`([A-Za-z0-9_./-]+/[A-Za-z0-9_.-]+\.(?:py|yaml|md|json|sh))(?:[ :][^`]*)?`")
USERS_FILES = ("refs/", "../")  # paths in a user's checkout, shown as examples; the ground truth beside ours


def stale_citations(page: Path) -> list[str]:
    """The files `page` cites in code spans (`execute/attempt/classify.py`, `tests/fake_ncu/ncu_app.py`) that are
    in no place a reader would look: the checkout, the package, tests/, or beside the page."""
    places = (ROOT, ROOT / "ncucampaign", ROOT / "tests", page.parent)
    return [
        path
        for path in CITED.findall(page.read_text())
        if not path.startswith(USERS_FILES) and not any((place / path).exists() for place in places)
    ]


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_file_a_page_cites_is_there(page: Path) -> None:
    """docs/ncu-behaviour.md cited execute/classify.py, execute/diagnose.py and execute/process.py after they moved."""
    assert stale_citations(page) == []


def test_a_stale_citation_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("`execute/attempt/classify.py` and `execute/classify.py` (moved), `refs/A100.yaml`\n")
    assert stale_citations(page) == ["execute/classify.py"]
