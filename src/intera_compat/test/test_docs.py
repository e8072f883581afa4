"""The README stays a front door (at most ``README_MAX_LINES`` lines) and every relative link in README.md and
docs/*.md leads somewhere: to a file that exists and, for ``page.md#anchor``, to a heading of that page (GitHub's
anchors: lower case, punctuation dropped, spaces as hyphens, ``-1``, ``-2``… on repeats). Pure: no ROS."""
import glob
import os
import re


ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
README_MAX_LINES = 200
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def doc_files() -> list:
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def prose(text: str) -> str:
    """The text without fenced code blocks (a ``# comment`` there is no heading)."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: str) -> set:
    seen: dict = {}
    out = set()
    for h in HEADING.findall(prose(open(path, encoding="utf-8").read())):
        s = slug(h)
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def links(path: str) -> list:
    """The relative links of a markdown file (web addresses and mail left out)."""
    return [t for t in LINK.findall(CODE_SPAN.sub("", prose(open(path, encoding="utf-8").read())))
            if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I)]


def broken_links(paths: list) -> list:
    """(file, link, why, the file it leads to) for every relative link of ``paths`` that leads nowhere."""
    bad = []
    for path in paths:
        for target in links(path):
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            rel = os.path.relpath(path, ROOT)
            if not os.path.exists(dest):
                bad.append((rel, target, "no such file", os.path.relpath(dest, ROOT)))
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                bad.append((rel, target, f"no heading with the anchor #{anchor}", os.path.relpath(dest, ROOT)))
    return bad


def test_the_readme_is_a_front_door():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        n = len(f.read().splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines: reference material belongs in docs/*.md"


def test_every_relative_link_resolves():
    bad = broken_links(doc_files())
    assert not bad, "\n".join(f"{f}: ({t}) {why}" for f, t, why, _ in bad)


def test_the_checks_see_a_broken_link_and_a_missing_anchor(tmp_path):
    """The checker itself: a link to a missing file and one to a missing heading are found, good ones are not."""
    (tmp_path / "a.md").write_text("# A page\n\n## Its `second` part: here\n\n```bash\n# not a heading\n```\n"
                                   "[ok](#its-second-part-here) [ok](b.md) [bad](c.md) [bad](b.md#nowhere) "
                                   "[web](https://example.com/x.md) `[code](d.md)`\n")
    (tmp_path / "b.md").write_text("# B\n")
    a = str(tmp_path / "a.md")
    assert anchors(a) == {"a-page", "its-second-part-here"}
    assert links(a) == ["#its-second-part-here", "b.md", "c.md", "b.md#nowhere"]
    assert anchors(str(tmp_path / "b.md")) == {"b"}
    assert [(t, why) for _, t, why, _ in broken_links([a])] == [
        ("c.md", "no such file"), ("b.md#nowhere", "no heading with the anchor #nowhere")]
