"""The documentation's references resolve: links and their anchors, section numbers of
docs/design.md named anywhere in the tree, and repository paths named in backquotes."""
import itertools
import os
import re
import subprocess

import pytest

ROOT = os.environ.get("PERCEPTRON_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
ROOT = os.path.abspath(ROOT)

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$", re.M)
# "docs/design.md section 2.7", "design.md, section 5", "[design, section 4](design.md#...)"
SECTION = re.compile(r"design(?:\.md)?,?\s+sections?\s+(\d+(?:\.\d+)?)")
CODE = re.compile(r"`([^`\n]+)`")
TOP = ("core/", "server/", "client/", "proto/", "common/", "tests/", "bench/", "deploy/",
       "scripts/", "docs/")


def tracked(*patterns):
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard", *patterns],
                         capture_output=True, text=True, check=True).stdout
    return [p for p in out.split("\n") if p and os.path.exists(os.path.join(ROOT, p))]


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    return {slug(h) for h in HEADING.findall(strip_code(read(path)))}


def strip_code(text):
    """Markdown without its fenced blocks (a '#' there is not a heading)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


MARKDOWN = tracked("*.md")


def test_there_is_documentation():
    assert "README.md" in MARKDOWN
    assert "docs/design.md" in MARKDOWN


@pytest.mark.parametrize("doc", MARKDOWN)
def test_links_resolve(doc):
    bad = []
    for target in LINK.findall(strip_code(read(doc))):
        if re.match(r"[a-z]+:", target):
            continue  # http:, mailto:
        path, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
        if not os.path.exists(os.path.join(ROOT, resolved)):
            bad.append(f"{target}: no file {resolved}")
        elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
            bad.append(f"{target}: no heading #{anchor} in {resolved}")
    assert not bad, f"{doc}: " + "; ".join(bad)


def design_sections():
    numbers = set()
    for h in HEADING.findall(strip_code(read("docs/design.md"))):
        m = re.match(r"(\d+(?:\.\d+)?)\.?\s", h)
        if m:
            numbers.add(m.group(1))
    return numbers


def test_design_sections_named_anywhere_exist():
    sections = design_sections()
    assert {"2", "2.7", "5", "7"} <= sections
    bad = []
    for path in tracked("*.md", "*.h", "*.cc", "*.py", "*.sh", "*.proto", "*CMakeLists.txt", "*.yml",
                        "*.yaml", "*.conf", "bench/run", ".ci/run"):
        for n, line in enumerate(read(path).split("\n"), 1):
            for number in SECTION.findall(line):
                if number not in sections:
                    bad.append(f"{path}:{n}: section {number}")
    assert not bad, "design.md has no such section: " + "; ".join(bad)


def expand(path):
    """core/x.{h,cc} -> core/x.h, core/x.cc"""
    m = re.search(r"\{([^}]*)\}", path)
    if not m:
        return [path]
    return list(itertools.chain.from_iterable(
        expand(path[:m.start()] + alt + path[m.end():]) for alt in m.group(1).split(",")))


@pytest.mark.parametrize("doc", MARKDOWN)
def test_paths_in_backquotes_exist(doc):
    bad = []
    for code in CODE.findall(read(doc)):
        path = code.split(":")[0].split(" ")[0]
        if not path.startswith(TOP) or re.search(r"[*<>$]", path):
            continue
        for p in expand(path):
            if not os.path.exists(os.path.join(ROOT, p)):
                bad.append(p)
    assert not bad, f"{doc} names paths that do not exist: {bad}"


@pytest.mark.parametrize("doc", MARKDOWN)
def test_no_undefined_outside_terms(doc):
    # The lecture notes and the design contract live outside the repository: a reader of it
    # cannot follow "seed 001" or "DESIGN.md".
    text = read(doc)
    assert not re.search(r"\bseeds? \d{3}\b|DESIGN\.md", text), doc
