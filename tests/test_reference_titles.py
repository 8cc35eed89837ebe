"""Does each entry of notebooks/references.md name what it links? Checked offline, against a store.

``tests/fixtures/reference_titles.json`` keeps, per entry, the link and the title of what it links,
with how that title was obtained:

- a title read from GitHub's own copy of an issue or pull request, or from the page itself: the
  entry must quote it exactly (``"..."``), so a paraphrased or wrong title fails;
- ``url``: a source file or a generated API page, whose title is its path or its API name, read off
  the link; the test derives it again and the entry must name it in backticks;
- ``unverified``: the title (or the heading of the linked section) as we believe it, not read in a
  stored copy; the entry must still name it, quoted or in backticks. A few records have no title at
  all (an issue whose thread was not in the store): such an entry quotes nothing, and the list of
  them may only shrink.

Every entry has a record and its link is the stored one: a changed link needs its title read again.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.test_references import _entries

ROOT = Path(__file__).resolve().parents[1]
STORE = json.loads((ROOT / "tests" / "fixtures" / "reference_titles.json").read_text(encoding="utf-8"))
LINK = re.compile(r"<(https?://[^>\s]+)>")
QUOTED = re.compile(r'"([^"]+)"')


def title_from_url(url: str) -> str | None:
    """The title a link carries in itself: a PyTorch source path, or a generated API page's name."""
    for pattern in (r"https://github\.com/pytorch/pytorch/blob/[^/]+/(.+)$",
                    r"https://docs\.pytorch\.org/docs/stable/generated/(.+)\.html$"):
        found = re.match(pattern, url)
        if found:
            return found.group(1)
    return None


def problems(number: int, body: str, record: dict | None) -> list[str]:
    """What is wrong with one entry against its stored record (empty when nothing)."""
    if record is None:
        return [f"R{number}: no stored title (add it to tests/fixtures/reference_titles.json)"]
    url = LINK.search(body).group(1)
    head = body[:body.index("<http")]
    quoted = QUOTED.search(head)
    found = [] if url == record["url"] else [f"R{number}: links {url}, the stored title is of "
                                             f"{record['url']}: read the new page's title"]
    if record["checked"] == "url":
        derived = title_from_url(url)
        if derived != record["title"] or f"`{derived}`" not in head:
            found.append(f"R{number}: should name `{derived}` (what {url} is)")
    elif record["checked"] != "unverified":
        if f'"{record["title"]}"' not in head:
            found.append(f'R{number}: the linked page is titled "{record["title"]}"')
    elif record["title"]:
        if f'"{record["title"]}"' not in head and f'`{record["title"]}`' not in head:
            found.append(f'R{number}: should name "{record["title"]}" (quoted or in backticks)')
    elif quoted:
        found.append(f'R{number}: quotes "{quoted.group(1)}", the store has no title for it')
    return found


@pytest.mark.parametrize("number", sorted(_entries()))
def test_does_the_entry_name_what_it_links(number):
    body = _entries()[number]
    assert problems(number, body, STORE.get(f"R{number}")) == []


def test_does_the_store_hold_only_entries_that_exist():
    assert set(STORE) == {f"R{n}" for n in _entries()}


def test_are_the_checks_able_to_fail():
    """A wrong quoted title, a changed link and a source entry naming another file are caught."""
    issue = {"url": "https://github.com/pytorch/pytorch/issues/1", "title": "Real title",
             "checked": "GitHub's issue title"}
    assert problems(1, '**R1.** Issue #1, "Real title". <https://github.com/pytorch/pytorch/issues/1>',
                    issue) == []
    assert problems(1, '**R1.** Issue #1, "A paraphrase". <https://github.com/pytorch/pytorch/issues/1>',
                    issue)
    assert problems(1, '**R1.** Issue #2, "Real title". <https://github.com/pytorch/pytorch/issues/2>',
                    issue)
    source = {"url": "https://github.com/pytorch/pytorch/blob/v2.13.0/torch/mps/profiler.py",
              "title": "torch/mps/profiler.py", "checked": "url"}
    assert problems(2, "**R2.** `torch/mps/event.py`. <" + source["url"] + ">", source)
    assert problems(2, "**R2.** `torch/mps/profiler.py`. <" + source["url"] + ">", source) == []
    assert problems(3, "**R3.** x. <https://example.org>", None)


def test_are_most_titles_checked():
    """Unverified titles may only shrink: a new entry comes with the title of what it links."""
    unverified = [k for k, r in STORE.items() if r["checked"] == "unverified"]
    assert len(unverified) <= 44, f"{len(unverified)} unverified titles: read some, do not add more"


# the entries whose linked thread was not in the store: no title recorded, none quoted
UNTITLED = {"R5", "R11", "R15", "R17", "R24", "R43", "R49", "R50"}


def test_does_every_record_but_the_known_few_hold_a_title():
    """Every entry's record names a title; the few without one are listed, and the list only shrinks."""
    untitled = {k for k, r in STORE.items() if not r["title"].strip()}
    assert untitled <= UNTITLED, f"records without a title: {sorted(untitled - UNTITLED)}"
    assert all(STORE[k]["checked"] == "unverified" for k in untitled)


def test_is_an_unverified_title_checked_against_the_entry_too():
    """An unverified record's title must still be named by its entry; an untitled one quotes nothing."""
    record = {"url": "https://docs.pytorch.org/docs/stable/mps.html", "title": "torch.mps",
              "checked": "unverified"}
    link = " <https://docs.pytorch.org/docs/stable/mps.html>"
    assert problems(29, "**R29.** PyTorch docs, `torch.mps`." + link, record) == []
    assert problems(29, '**R29.** PyTorch docs, "torch.mps".' + link, record) == []
    assert problems(29, "**R29.** PyTorch docs, `torch.cuda`." + link, record)
    untitled = dict(record, title="")
    assert problems(29, "**R29.** PyTorch docs." + link, untitled) == []
    assert problems(29, '**R29.** PyTorch docs, "A made-up title".' + link, untitled)
