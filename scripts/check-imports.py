#!/usr/bin/env python3
"""No two files of a folder import each other (nor do sibling files form a longer cycle).

For every folder under src/, reads which sibling modules each file names (`super::x`,
`crate::folder::x`, or `x::` for the folder's mod.rs/lib.rs children) outside comments and its
test module, and fails naming any cycle among the siblings. Run by .ci/run; stdlib only.
"""
import pathlib
import re
import sys

SRC = pathlib.Path(__file__).resolve().parent.parent / "src"


def code(path):
    """The file's text without comments and without its `#[cfg(test)] mod tests`."""
    text = path.read_text()
    cut = re.search(r"^#\[cfg\(test\)\]\s*\nmod tests", text, re.M)
    if cut:
        text = text[: cut.start()]
    text = re.sub(r"//[^\n]*", "", text)
    return text


def modules(folder):
    """The sibling modules of a folder: file stems and subfolders with a mod.rs."""
    out = {}
    for p in folder.iterdir():
        if p.suffix == ".rs" and p.stem not in ("mod", "lib", "main"):
            out[p.stem] = [p]
        elif p.is_dir() and (p / "mod.rs").exists():
            out[p.name] = sorted(p.rglob("*.rs"))
    return out


def crate_path(folder):
    rel = folder.relative_to(SRC)
    return "crate" + "".join("::" + part for part in rel.parts)


def edges(folder):
    mods = modules(folder)
    prefix = re.escape(crate_path(folder))
    graph = {m: set() for m in mods}
    for m, files in mods.items():
        for f in files:
            text = code(f)
            # Only the file directly in the folder speaks of its siblings as `super::`.
            sibling_refs = set()
            if f.parent == folder:
                sibling_refs |= set(re.findall(r"\bsuper::(\w+)", text))
                for group in re.findall(r"\bsuper::\{([^}]*)\}", text):
                    sibling_refs |= set(re.findall(r"\b(\w+)\b", group))
            sibling_refs |= set(re.findall(prefix + r"::(\w+)", text))
            for group in re.findall(prefix + r"::\{([^}]*)\}", text):
                sibling_refs |= {g.split("::")[0].strip() for g in group.split(",")}
            graph[m] |= {r for r in sibling_refs if r in mods and r != m}
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


def main():
    folders = [SRC] + sorted(p for p in SRC.rglob("*") if p.is_dir() and (p / "mod.rs").exists())
    bad = []
    for folder in folders:
        graph = edges(folder)
        for comp in cycles(graph):
            links = ", ".join(f"{a} -> {b}" for a in comp for b in sorted(graph[a]) if b in comp)
            bad.append(f"{folder.relative_to(SRC.parent)}: {' and '.join(comp)} import each other ({links})")
    if bad:
        print("files of one folder that import each other (move what they share into one of them, or a third):")
        print("\n".join("  " + b for b in bad))
        sys.exit(1)
    n = sum(len(modules(f)) for f in folders)
    print(f"imports: no cycle among the sibling files of {len(folders)} folders ({n} modules)")


if __name__ == "__main__":
    main()
