#!/usr/bin/env python3
"""Import structure of `src/`: circles between sibling modules, and arrows that
run back up.

Each `use` path (and each `crate::`/`super::` path written inline) is resolved to
the file that defines the module it names, following `pub use` re-exports in
`mod.rs` files, so an import of a name re-exported by a parent counts as an
arrow to the file that defines it.

- A **circle** is a set of sibling modules (files or folders in one folder) that
  reach each other through imports: a strongly connected component of two or
  more siblings.
- An arrow **runs back up** when a file imports from its own folder's `mod.rs`
  or from a `mod.rs` further up, inside the same top-level folder: a child that
  reaches into the module that declares it.

Test files (`*tests.rs`, `test_support.rs`, `tests/` folders) and
`#[cfg(test)]` items are left out.

Some features are also **kept apart**: saves and lore never import the turn
pipeline (`plugin/dialogue`). They hand work to it through plain types instead,
so a change to how a turn runs never touches them.

The turn pipeline's **systems** (`plugin/dialogue`) are also measured: the parts
each one borrows, counting `Res`/`ResMut` as one each and expanding the pipeline's
own system parameters, except the memory (`Layers`: the three layer resources
and their change marks) and the outbox (`Outbox`: messages, entity events and
telemetry), which count one each. Message readers and writers do not count.

Usage: python3 scripts/structure.py [--folder plugin] [--verbose] [--check]
With --check (CI), the exit status is 1 on any circle, on any import between
features kept apart, on more than --max-up (5) arrows back up, or on a turn
pipeline system borrowing more than --max-parts (6) parts.
"""

import argparse
import os
import re
import sys
from collections import defaultdict

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")


def module_files():
    """Maps a module path tuple ('plugin', 'dialogue') to its file."""
    files = {}
    for root, _, names in os.walk(SRC):
        for name in names:
            if not name.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, name), SRC)
            parts = rel[:-3].split(os.sep)
            if parts[-1] == "mod" or parts == ["lib"]:
                parts = parts[:-1]
            path = os.path.join(root, name)
            if not is_test_file(path):
                files[tuple(parts)] = path
    return files


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//")[0] for line in text.splitlines())


def strip_tests(text):
    """Drops `#[cfg(test)]` items: tests may reach anywhere they need."""
    out, pos = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]", text):
        if m.start() < pos:
            continue
        out.append(text[pos : m.start()])
        end = text.find(";", m.end())
        brace = text.find("{", m.end())
        if brace < 0 or (0 <= end < brace):
            pos = end + 1
            continue
        depth, i = 0, brace
        while i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                break
            i += 1
        pos = i + 1
    out.append(text[pos:])
    return "".join(out)


def is_test_file(path):
    rel = os.path.relpath(path, SRC)
    stem = os.path.basename(rel)[:-3]
    return stem.endswith("tests") or stem == "test_support" or f"{os.sep}tests{os.sep}" in rel


def expand_use(tree):
    """Expands `a::{b, c::{d, e}}` into ['a::b', 'a::c::d', 'a::c::e']."""
    tree = tree.strip()
    brace = tree.find("{")
    if brace < 0:
        return [tree.split(" as ")[0].strip()]
    head, body = tree[:brace], tree[brace + 1 : tree.rfind("}")]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    out = []
    for part in parts:
        if part.strip():
            for tail in expand_use(part):
                out.append(head + tail if tail != "self" else head.rstrip(":"))
    return out


def module_of(path):
    """The module tuple a file path stands for."""
    rel = os.path.relpath(path, SRC)[:-3].split(os.sep)
    if rel[-1] == "mod" or rel == ["lib"]:
        rel = rel[:-1]
    return tuple(rel)


def absolute(segments, here, is_mod_file):
    """Turns `crate::`/`super::`/`self::` segments into an absolute tuple."""
    base = list(here) if is_mod_file else list(here[:-1])
    if segments[0] == "crate":
        return tuple(segments[1:])
    if segments[0] in ("super", "self"):
        cur = list(here)
        for seg in segments:
            if seg == "super":
                cur = cur[:-1]
            elif seg == "self":
                pass
            else:
                break
        rest = [s for s in segments if s not in ("super", "self")]
        return tuple(cur + rest)
    # A path relative to this module: `child::Item` from a mod.rs.
    return tuple(list(here) + segments) if is_mod_file else None


class Graph:
    def __init__(self):
        self.files = module_files()
        self.reexports = defaultdict(dict)  # module -> name -> absolute path
        self.uses = defaultdict(set)  # module -> absolute paths
        for module, path in self.files.items():
            self._scan(module, path)

    def _scan(self, module, path):
        text = strip_tests(strip_comments(open(path, encoding="utf-8").read()))
        is_mod = path.endswith("mod.rs") or path.endswith("lib.rs")
        for m in re.finditer(r"(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", text):
            public = m.group(1) is not None
            for full in expand_use(m.group(2)):
                segs = [s for s in full.replace(" ", "").split("::") if s]
                if not segs or segs[0] not in ("crate", "super", "self") and not is_mod:
                    continue
                target = absolute(segs, module, True)
                if target is None or (segs[0] not in ("crate", "super", "self") and segs[0] not in self._children(module)):
                    continue
                self.uses[module].add(target)
                if public and segs[-1] != "*":
                    self.reexports[module][segs[-1]] = target
        for m in re.finditer(r"\b((?:crate|super)(?:::\w+)+)", text):
            segs = m.group(1).split("::")
            self.uses[module].add(absolute(segs, module, True))

    def _children(self, module):
        return {k[len(module)] for k in self.files if len(k) == len(module) + 1 and k[: len(module)] == module}

    def resolve(self, target, depth=0):
        """The module file that defines `target`'s item (or module)."""
        for cut in range(len(target), -1, -1):
            prefix = target[:cut]
            if prefix in self.files:
                rest = target[cut:]
                if rest and depth < 8 and rest[0] in self.reexports.get(prefix, {}):
                    again = self.reexports[prefix][rest[0]] + tuple(rest[1:])
                    if again != target:
                        return self.resolve(again, depth + 1)
                return prefix
        return None

    def arrows(self):
        out = set()
        for module, targets in self.uses.items():
            for target in targets:
                found = self.resolve(target)
                if found is not None and found != module:
                    out.add((module, found))
        return out


def sibling_circles(arrows):
    """Strongly connected components of two or more siblings, per folder."""
    by_folder = defaultdict(lambda: defaultdict(set))
    for src, dst in arrows:
        common = 0
        while common < min(len(src), len(dst)) and src[common] == dst[common]:
            common += 1
        if common >= len(src) or common >= len(dst):
            continue  # one contains the other: a parent and its child
        folder = src[:common]
        by_folder[folder][src[common]].add(dst[common])
    circles = []
    for folder, edges in by_folder.items():
        for comp in tarjan(edges):
            if len(comp) > 1:
                circles.append((folder, sorted(comp)))
    return circles


def tarjan(edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    nodes = set(edges) | {d for ds in edges.values() for d in ds}

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
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
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def back_up(arrows, files, top):
    """Arrows from a file to a mod.rs/lib.rs of its own or an ancestor folder."""
    out = []
    for src, dst in arrows:
        if not src or src[0] != top or not dst or dst[0] != top:
            continue
        is_folder_module = files[dst].endswith("mod.rs")
        if is_folder_module and len(dst) < len(src) and src[: len(dst)] == dst:
            out.append((src, dst))
    return sorted(out)


# (importer, imported): module prefixes that must never meet.
KEPT_APART = [
    (("plugin", "saves"), ("plugin", "dialogue")),
    (("plugin", "lore"), ("plugin", "dialogue")),
]


def kept_apart(arrows):
    """Arrows from a module of a feature into one it is kept apart from."""
    out = []
    for src, dst in arrows:
        for importer, imported in KEPT_APART:
            if src[: len(importer)] == importer and dst[: len(imported)] == imported:
                out.append((src, dst))
    return sorted(out)


# System parameters that count as one part: each is one thing to a stage.
WHOLE_PARAMS = {"Layers", "Outbox"}
RESOURCES = {"Res", "ResMut"}
FREE = {"MessageReader", "MessageWriter", "Local", "Query", "Commands"}


def split_top(text, sep=","):
    """Splits at `sep` outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def base_type(ty):
    return re.match(r"\s*(?:&\s*(?:mut\s+)?)?([A-Za-z_]\w*)", ty).group(1)


def pipeline_parts(folder=("plugin", "dialogue")):
    """Each turn pipeline system and the parts it borrows (see the docs above)."""
    texts = []
    for module, path in module_files().items():
        if module[: len(folder)] == folder:
            texts.append(strip_tests(strip_comments(open(path, encoding="utf-8").read())))
    params = {}
    for text in texts:
        for m in re.finditer(r"#\[derive\(SystemParam\)\]\s*pub\(crate\)\s+struct\s+(\w+)[^{]*\{(.*?)\n\}", text, re.S):
            params[m.group(1)] = [base_type(f.split(":", 1)[1]) for f in split_top(m.group(2)) if ":" in f]

    def parts(ty):
        if ty in RESOURCES or ty in WHOLE_PARAMS:
            return 1
        if ty in FREE:
            return 0
        if ty in params:
            return sum(parts(t) for t in params[ty])
        return None

    systems = {}
    for text in texts:
        for m in re.finditer(r"pub\(crate\)\s+fn\s+(\w+)\s*(?:<[^>]*>)?\(", text):
            depth, i = 1, m.end()
            while depth and i < len(text):
                depth += {"(": 1, ")": -1}.get(text[i], 0)
                i += 1
            args = split_top(text[m.end() : i - 1])
            if not args or any("self" in a.split(":")[0] for a in args):
                continue
            counts = [parts(base_type(a.split(":", 1)[1])) for a in args if ":" in a]
            if counts and None not in counts and any(counts):
                systems[m.group(1)] = sum(counts)
    return systems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--folder", default="plugin")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 on any circle, or on more than --max-up arrows back up",
    )
    parser.add_argument("--max-up", type=int, default=5)
    parser.add_argument("--max-parts", type=int, default=6)
    args = parser.parse_args()
    graph = Graph()
    arrows = graph.arrows()
    circles = sibling_circles(arrows)
    up = back_up(arrows, graph.files, args.folder)
    print(f"files: {len(graph.files)}, arrows between files: {len(arrows)}")
    print(f"import circles: {len(circles)}")
    for folder, comp in circles:
        print(f"  {'/'.join(folder) or 'src'}: {', '.join(comp)}")
    apart = kept_apart(arrows)
    print(f"imports between features kept apart: {len(apart)}")
    for src, dst in apart:
        print(f"  {'/'.join(src)} -> {'/'.join(dst)}")
    print(f"arrows in {args.folder}/ that run back up: {len(up)}")
    if args.verbose:
        for src, dst in up:
            print(f"  {'/'.join(src)} -> {'/'.join(dst)}")
    systems = pipeline_parts()
    widest = max(systems.values(), default=0)
    print(f"turn pipeline systems: {len(systems)}, most parts one borrows: {widest}")
    if args.verbose:
        for name, count in sorted(systems.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {count}  {name}")
    if args.check and (circles or apart or len(up) > args.max_up or widest > args.max_parts):
        print("structure check failed", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
