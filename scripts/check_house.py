#!/usr/bin/env python3
"""The house rules CI checks that the compiler and clippy cannot.

1. ARCHITECTURE.md's code map names every non-test source file: each crate's bullet
   (`- `crates/NAME``) mentions the file by its path under `src/` (or `examples/`), or by
   its bare name when no other file of the crate has that name; a `mod.rs` is named by
   its folder (`scheduler/`).
2. The crate graph in ARCHITECTURE.md (the ```crate-graph block: `crate -> dep, dep`) is
   exactly the graph of normal dependencies between workspace crates in `cargo metadata`.
4. One scheduler constructor (issue 42): `CallRules::new` (the session's rules, mode,
   hooks and checkpoints, which every `SchedulerConfig` is made from) is written only in
   the session crate, in toolbelt-core (where it is defined) and in test files and
   examples, so no front end can assemble a scheduler without the session's hooks,
   checkpoints or flags.
3. The binary crate stays thin: under BINARY_LIMIT code lines (not blank, not a comment,
   not under `#[cfg(test)]`, not a `tests.rs`).

Run from the repository root: `python3 scripts/check_house.py`. Exit 1 with every
finding listed, 0 when the house is in order.
"""

import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY_LIMIT = 4000


def is_test_file(rel):
    parts = rel.split("/")
    name = parts[-1]
    return (
        "tests" in parts[:-1]
        or name == "tests.rs"
        or name.endswith("_tests.rs")
        or name == "test_support.rs"
    )


def crate_sources(crate_dir):
    """Non-test .rs files of a crate, as paths relative to the crate (`src/x.rs`)."""
    found = []
    for top in ("src", "examples"):
        base = os.path.join(crate_dir, top)
        for dirpath, _, files in os.walk(base):
            for f in files:
                if not f.endswith(".rs"):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), crate_dir)
                if not is_test_file(rel):
                    found.append(rel)
    return sorted(found)


def crate_bullets(text):
    """The code-map text of each crate: from its `- `crates/NAME`` bullet to the next."""
    section = text.split("## Code map", 1)[-1].split("\n## ", 1)[0]
    bullets = {}
    current = None
    for line in section.splitlines():
        m = re.match(r"^- `crates/([\w-]+)`", line)
        if m:
            current = m.group(1)
            bullets.setdefault(current, "")
        elif line.startswith("- "):
            current = None
        if current:
            bullets[current] += line + "\n"
    return bullets


def check_code_map(text, crates):
    findings = []
    bullets = crate_bullets(text)
    for name, crate_dir in crates.items():
        bullet = bullets.get(name)
        if bullet is None:
            findings.append(f"ARCHITECTURE.md: the code map has no bullet for crates/{name}")
            continue
        sources = crate_sources(crate_dir)
        names = [os.path.basename(s) for s in sources]
        for rel in sources:
            top, _, under = rel.partition("/")
            base = os.path.basename(rel)
            if top == "src" and under in ("lib.rs", "main.rs"):
                continue
            if base == "mod.rs":
                wanted = [os.path.dirname(under) + "/"]
            else:
                wanted = [under, rel]
                if names.count(base) == 1:
                    wanted.append(base)
            if not any(w in bullet for w in wanted):
                findings.append(
                    f"ARCHITECTURE.md: crates/{name}/{rel} is not named in the code map"
                    f" (write `{wanted[0]}` in the crates/{name} bullet)"
                )
    return findings


def stated_graph(text):
    m = re.search(r"```crate-graph\n(.*?)```", text, re.S)
    if not m:
        return None
    graph = {}
    for line in m.group(1).splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        crate, _, deps = line.partition("->")
        graph[crate.strip()] = {d.strip() for d in deps.split(",") if d.strip()}
    return graph


def actual_graph():
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    meta = json.loads(out)
    members = {p["name"] for p in meta["packages"]}
    graph = {}
    crates = {}
    for p in meta["packages"]:
        crates[p["name"]] = os.path.dirname(p["manifest_path"])
        graph[p["name"]] = {
            d["name"]
            for d in p["dependencies"]
            if d["name"] in members and d.get("kind") in (None, "normal", "build")
        }
    return graph, crates


def check_graph(text, graph):
    stated = stated_graph(text)
    if stated is None:
        return ["ARCHITECTURE.md: no ```crate-graph block states the crate graph"]
    findings = []
    for crate in sorted(set(graph) | set(stated)):
        have, said = graph.get(crate, set()), stated.get(crate, set())
        for dep in sorted(have - said):
            findings.append(
                f"crate graph: {crate} depends on {dep}, which ARCHITECTURE.md's rule does not allow"
            )
        for dep in sorted(said - have):
            findings.append(
                f"crate graph: ARCHITECTURE.md says {crate} -> {dep}, but Cargo.toml has no such dependency"
            )
    return findings


def code_lines(path):
    n = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#[cfg(test)]"):
                break
            stripped = line.strip()
            if not stripped or stripped.startswith("//"):
                continue
            n += 1
    return n


def check_binary(crate_dir):
    total = 0
    for rel in crate_sources(crate_dir):
        if rel.startswith("src/"):
            total += code_lines(os.path.join(crate_dir, rel))
    if total >= BINARY_LIMIT:
        return [
            f"the binary crate has {total} code lines (limit {BINARY_LIMIT}): move library logic to a library crate"
        ]
    print(f"binary crate: {total} code lines (limit {BINARY_LIMIT})")
    return []


# Where `CallRules::new` may be written outside test files and examples.
CALL_RULES_MAKERS = ("toolbelt-session", "toolbelt-core")


def check_one_constructor(crates):
    findings = []
    for name, crate_dir in crates.items():
        if name in CALL_RULES_MAKERS:
            continue
        for rel in crate_sources(crate_dir):
            if not rel.startswith("src/"):
                continue
            with open(os.path.join(crate_dir, rel), encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    if line.startswith("#[cfg(test)]"):
                        break
                    if "CallRules::new(" in line:
                        findings.append(
                            f"{name}/{rel}:{n}: `CallRules::new` outside the session crate: take the session's rules (`Session`, `Scheduler::rules`) instead"
                        )
    return findings


def main():
    with open(os.path.join(ROOT, "ARCHITECTURE.md"), encoding="utf-8") as f:
        text = f.read()
    graph, crates = actual_graph()
    findings = check_code_map(text, crates) + check_graph(text, graph)
    findings += check_binary(crates["toolbelt"])
    findings += check_one_constructor(crates)
    for finding in findings:
        print(finding, file=sys.stderr)
    if findings:
        print(f"check_house: {len(findings)} finding(s)", file=sys.stderr)
        return 1
    print("check_house: ARCHITECTURE.md's code map and crate graph match the tree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
