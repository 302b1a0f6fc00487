#!/usr/bin/env python3
"""The layout's rules, checked (run by .ci/run; stdlib only):

1. No file under src/ (or a workspace crate's crates/NAME/src/) has more than 500 lines outside its test modules (`#[cfg(test)] mod NAME`,
   each ending at the first line that is only `}`, as rustfmt writes it; code after one counts).
2. No two files of a folder import each other, directly or round a longer cycle. A file names a
   sibling as `super::x`, `crate::folder::x`, `x::` (from the folder's mod.rs), or through a name
   the folder's mod.rs re-exports from it (`pub use x::Name;` then `super::Name`).
3. Folders depend one way: src/lib.rs's doc (and each crate's lib.rs's) lists the layers, highest first, between the lines
   "Layers" and the end of its ```text block; a folder may import only folders on lower lines.

`python3 scripts/check-layout.py --self-test` plants one violation of each rule in a copy of src/
and checks that each is caught, with the files named.
"""
import pathlib
import re
import shutil
import sys
import tempfile

MAX_LINES = 500
ROOT = pathlib.Path(__file__).resolve().parent.parent


def shown(path, src):
    """`path` as a message names it: from the project's root (`crates/stats/src/...`), or from
    the checked tree's parent for a copy elsewhere (the self-test's)."""
    try:
        return path.relative_to(ROOT)
    except ValueError:
        return path.relative_to(src.parent)


TESTS = re.compile(r"^#\[cfg\(test\)\]\s*\nmod \w+ \{", re.M)
END = re.compile(r"^\}[ \t]*\n?", re.M)


def without_tests(text):
    """`text` without its test modules (`#[cfg(test)] mod NAME { ... }`), the code before,
    between and after them kept."""
    while cut := TESTS.search(text):
        end = END.search(text, cut.end())
        text = text[: cut.start()] + (text[end.end() :] if end else "")
    return text


def code(path):
    """The file's text without comments and without its test module."""
    return re.sub(r"//[^\n]*", "", without_tests(path.read_text()))


def non_test_lines(path):
    return without_tests(path.read_text()).count("\n")


def check_sizes(src):
    bad = []
    for p in sorted(src.rglob("*.rs")):
        n = non_test_lines(p)
        if n > MAX_LINES:
            bad.append(f"{shown(p, src)}: {n} lines outside its tests (at most {MAX_LINES}): split it by topic")
    return bad


# --- rule 2: no cycles among the files of a folder ---------------------------------------------


def modules(folder):
    """The sibling modules of a folder: file stems and subfolders with a mod.rs."""
    out = {}
    for p in folder.iterdir():
        if p.suffix == ".rs" and p.stem not in ("mod", "lib", "main"):
            out[p.stem] = [p]
        elif p.is_dir() and (p / "mod.rs").exists():
            out[p.name] = sorted(p.rglob("*.rs"))
    return out


def reexports(folder, mods):
    """Names the folder's mod.rs (or lib.rs) takes from its modules: name -> module."""
    head = folder / "mod.rs" if (folder / "mod.rs").exists() else folder / "lib.rs"
    names = {}
    if not head.exists():
        return names
    text = code(head)
    for m, group in re.findall(r"\buse\s+(?:self::)?(\w+)::\{([^}]*)\}", text):
        if m in mods:
            for name in re.findall(r"\b(\w+)\b(?:\s+as\s+(\w+))?", group):
                names[name[1] or name[0]] = m
    for m, name, alias in re.findall(r"\buse\s+(?:self::)?(\w+)::(\w+)(?:\s+as\s+(\w+))?\s*;", text):
        if m in mods:
            names[alias or name] = m
    return names


def crate_path(src, folder):
    rel = folder.relative_to(src)
    return "crate" + "".join("::" + part for part in rel.parts)


def edges(src, folder):
    mods = modules(folder)
    via = reexports(folder, mods)
    prefix = re.escape(crate_path(src, folder))
    graph = {m: set() for m in mods}
    for m, files in mods.items():
        for f in files:
            text = code(f)
            refs = set()
            # Only the file directly in the folder speaks of its siblings as `super::`.
            if f.parent == folder:
                refs |= set(re.findall(r"\bsuper::(\w+)", text))
                for group in re.findall(r"\bsuper::\{([^}]*)\}", text):
                    refs |= {g.split("::")[0].strip() for g in group.split(",")}
            refs |= set(re.findall(prefix + r"::(\w+)", text))
            for group in re.findall(prefix + r"::\{([^}]*)\}", text):
                refs |= {g.split("::")[0].strip() for g in group.split(",")}
            resolved = {r if r in mods else via.get(r) for r in refs}
            graph[m] |= {r for r in resolved if r and r != m}
    return graph


def cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def folders(src):
    return [src] + sorted(p for p in src.rglob("*") if p.is_dir() and (p / "mod.rs").exists())


def check_cycles(src):
    bad = []
    for folder in folders(src):
        graph = edges(src, folder)
        for comp in cycles(graph):
            links = ", ".join(f"{a} -> {b}" for a in comp for b in sorted(graph[a]) if b in comp)
            bad.append(
                f"{shown(folder, src)}: {' and '.join(comp)} import each other ({links}): "
                "move what they share into one of them, or a third"
            )
    return bad


# --- rule 3: folders depend one way ------------------------------------------------------------


def layers(src):
    """The layers of src/lib.rs's doc, highest first: a list of sets of top-level module names."""
    doc = "\n".join(l[4:] if l.startswith("//! ") else l[3:] for l in (src / "lib.rs").read_text().splitlines()
                    if l.startswith("//!"))
    m = re.search(r"Layers.*?```text\n(.*?)```", doc, re.S)
    if not m:
        sys.exit("src/lib.rs's doc has no 'Layers' list in a ```text block: write the layers there, highest first")
    return [set(line.split()) for line in m.group(1).splitlines() if line.strip()]


def target_file(src, top, rest):
    """The file a `crate::top::a::b` path most likely names, for the message."""
    path = src / top
    for part in rest:
        if (path / part).is_dir():
            path = path / part
        elif (path / f"{part}.rs").exists():
            return path / f"{part}.rs"
        else:
            break
    if path.is_dir():
        return path / "mod.rs"
    return src / f"{top}.rs"


def check_direction(src):
    order = layers(src)
    level = {name: i for i, names in enumerate(order) for name in names}
    tops = {p.stem if p.is_file() else p.name for p in src.iterdir()
            if (p.suffix == ".rs" and p.stem not in ("lib", "main")) or (p / "mod.rs").exists()}
    # Modules a workspace crate holds and lib.rs names as its own (`pub use caplab_stats::{stats,
    # steady};`): the layers place them, and the compiler keeps their crate from importing back.
    lib = code(src / "lib.rs")
    for group in re.findall(r"\bpub\s+use\s+caplab_\w+::\{([^}]*)\}", lib):
        tops |= {g.strip() for g in group.split(",") if g.strip()}
    tops |= set(re.findall(r"\bpub\s+use\s+caplab_\w+::(\w+)\s*;", lib))
    lib_rs = shown(src / "lib.rs", src)
    bad = [f"{lib_rs}: '{t}' is in no layer: add it to the Layers list" for t in sorted(tops - set(level))]
    bad += [f"{lib_rs}: the Layers list names '{t}', which is not a module" for t in sorted(set(level) - tops)]
    for p in sorted(src.rglob("*.rs")):
        rel = p.relative_to(src)
        if rel.name in ("lib.rs", "main.rs") and len(rel.parts) == 1:
            continue
        top = rel.parts[0].removesuffix(".rs")
        if top not in level:
            continue
        text = code(p)
        paths = [m.split("::") for m in re.findall(r"\bcrate::((?:\w+::)*\w+)", text)]
        for group in re.findall(r"\bcrate::\{([^}]*)\}", text):
            paths += [g.strip().split("::") for g in group.split(",") if g.strip()]
        seen = set()
        for parts in paths:
            other = parts[0]
            if other == top or other not in level or other in seen:
                continue
            if level[other] <= level[top]:
                seen.add(other)
                target = shown(target_file(src, other, parts[1:]), src)
                bad.append(
                    f"{shown(p, src)} imports {target} ({'::'.join(['crate'] + parts)}), "
                    f"but {other}/ is not below {top}/ in {lib_rs}'s Layers: move what both need into a lower folder, "
                    "or pass it in from above"
                )
    return bad


def check(src):
    return check_sizes(src), check_cycles(src), check_direction(src)


def report(src):
    sizes, loops, direction = check(src)
    for title, bad in (
        (f"files over {MAX_LINES} lines before their tests:", sizes),
        ("files of one folder that import each other:", loops),
        ("imports against the layers' direction:", direction),
    ):
        if bad:
            print(title)
            print("\n".join("  " + b for b in bad))
    return sizes or loops or direction


def after_doc(text, line):
    """`text` with `line` after its module doc (before any test module, which is not checked)."""
    lines = text.splitlines(keepends=True)
    at = next(i for i, l in enumerate(lines) if not l.startswith("//!"))
    return "".join(lines[:at]) + line + "\n" + "".join(lines[at:])


def self_test(src):
    """Plants one violation of each rule in a copy of `src` and checks each is named."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp) / "src"
        shutil.copytree(src, copy)
        assert not any(check(copy)), "the tree must pass before anything is planted"
        # 1: a file grown past the bound.
        big = copy / "engine" / "schedule.rs"
        big.write_text("// filler\n" * (MAX_LINES + 1) + big.read_text())
        # 1 again: code after a file's test module counts.
        after = copy / "engine" / "anchor.rs"
        assert TESTS.search(after.read_text()), "engine/anchor.rs has a test module"
        after.write_text(after.read_text() + "// filler\n" * (MAX_LINES + 1))
        # 2: a loop through a re-export: due.rs takes `Warmup` through engine/mod.rs from
        #    config.rs, and config.rs takes `Due` from due.rs.
        cfg = copy / "engine" / "config.rs"
        cfg.write_text(after_doc(cfg.read_text(), "use super::due::Due;"))
        due = copy / "engine" / "due.rs"
        due.write_text(due.read_text().replace("use super::config::{EngineConfig, Warmup};",
                                               "use super::{EngineConfig, Warmup};"))
        # 3: a lower folder importing a higher one.
        summary = copy / "metrics" / "summary.rs"
        summary.write_text(after_doc(summary.read_text(), "use crate::measure::result::RunResult;"))
        sizes, loops, direction = check(copy)
        ok = True
        for name, found, want in (
            ("size", sizes, "engine/schedule.rs"),
            ("size after the tests", sizes, "engine/anchor.rs"),
            ("loop through a re-export", loops, "config and due import each other"),
            ("direction", direction, "metrics/summary.rs imports src/measure/result.rs"),
        ):
            hit = [b for b in found if want in b]
            print(f"planted {name}: {'caught' if hit else 'MISSED'}: {hit[0] if hit else found}")
            ok &= bool(hit)
        if not ok:
            sys.exit(1)


def main():
    src = ROOT / "src"
    if sys.argv[1:] == ["--self-test"]:
        self_test(src)
        return
    # caplab's own tree and each workspace crate's (crates/NAME/src), each with its lib.rs's layers.
    roots = [src] + sorted(p / "src" for p in (ROOT / "crates").iterdir() if (p / "src" / "lib.rs").exists())
    failed = [root for root in roots if report(root)]
    if failed:
        sys.exit(1)
    n = sum(len(modules(f)) for root in roots for f in folders(root))
    print(
        f"layout: every file within {MAX_LINES} lines, no cycle among the sibling files of "
        f"{sum(len(folders(r)) for r in roots)} folders ({n} modules), every import down the layers of "
        + " and ".join(f"{shown(r / 'lib.rs', r)} ({len(layers(r))})" for r in roots)
    )


if __name__ == "__main__":
    main()
