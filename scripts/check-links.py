#!/usr/bin/env python3
"""Every relative link in the project's Markdown (README.md, docs/, bench/, experiments/) leads
somewhere: the file or folder exists, and a `#section` names a heading of the file it points
into (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens). Links to the web
are not followed (no network here). Exits 1 naming each broken link and where it is.

    python3 scripts/check-links.py [--self-test]
"""

import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def anchors(md):
    """The anchors of a Markdown file's headings."""
    out = set()
    in_code = False
    for line in md.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        title = line.lstrip("#").strip().lower()
        out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def broken(root):
    """(file, line, link, why) for every relative link that leads nowhere."""
    files = [root / "README.md"] + sorted(root.glob("docs/*.md")) + sorted(root.glob("bench/*.md"))
    files += sorted(root.glob("bench/results/*.md"))
    files += sorted(root.glob("experiments/*.md"))
    found = []
    for md in (f for f in files if f.exists()):
        in_code = False
        for n, line in enumerate(md.read_text().splitlines(), 1):
            if line.startswith("```"):
                in_code = not in_code
            if in_code:
                continue
            for m in LINK.finditer(line):
                link = m.group(1) or m.group(2)
                if re.match(r"^[a-z]+:", link):
                    continue
                path, _, anchor = link.partition("#")
                target = (md.parent / path).resolve() if path else md
                if not target.exists():
                    found.append((md, n, link, "no such file"))
                elif anchor and target.suffix == ".md" and anchor not in anchors(target):
                    found.append((md, n, link, f"no heading #{anchor} in {target.name}"))
    return found


def self_test():
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        (root / "docs").mkdir()
        (root / "docs" / "a.md").write_text("# A page\n\n## Its `part` (issue 1)\n")
        (root / "README.md").write_text(
            "[ok](docs/a.md) [ok too](docs/a.md#its-part-issue-1) [web](https://example.com)\n"
            "[gone](docs/b.md) [no part](docs/a.md#nothing)\n```\n[in code](nowhere.md)\n```\n"
        )
        got = sorted(link for _, _, link, _ in broken(root))
        assert got == ["docs/a.md#nothing", "docs/b.md"], got
    print("check-links self-test: a missing file and a missing heading are caught, the rest pass")


def main():
    if "--self-test" in sys.argv:
        self_test()
        return 0
    bad = broken(ROOT)
    for md, n, link, why in bad:
        print(f"{md.relative_to(ROOT)}:{n}: {link}: {why}")
    if bad:
        print(f"{len(bad)} broken link(s)")
        return 1
    print("links: every relative link in README.md, docs/ and bench/ leads somewhere")
    return 0


if __name__ == "__main__":
    sys.exit(main())
