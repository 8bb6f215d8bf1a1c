#!/usr/bin/env python3
"""The house rules CI checks that the compiler and clippy cannot.

1. Every non-test source file (`src/`, `examples/`) opens with a module doc comment
   (`//!`, after inner attributes), and CODEMAP.md, the code map generated from
   the first sentence of each, is current. `--write-codemap` writes it.
2. ARCHITECTURE.md has a section per crate (a `### `crates/NAME`` heading), and its
   crate graph (the ```crate-graph block: `crate -> dep, dep`) is exactly the graph of
   normal dependencies between workspace crates in `cargo metadata`.
3. The binary crate assembles no session: its non-test code names none of ASSEMBLY
   (registries, registrations, schedulers and their configuration, permissions, tool
   environments, agents, hook engines are `toolbelt-session`'s to build; the binary maps
   flags onto `toolbelt_session` options and shows what comes back). A file may be let
   through in BINARY_EXCEPTIONS with its reason; an exception that lets nothing through
   is a finding too. Past BINARY_CEILING code lines, a sanity ceiling, is a finding.
4. One scheduler constructor: `CallRules::new` (the session's rules, mode, hooks and
   checkpoints, which every `SchedulerConfig` is made from) is written only in the
   session crate, in toolbelt-core (where it is defined) and in test files and examples,
   so no front end can assemble a scheduler without the session's hooks, checkpoints or
   flags.
5. Typed errors at crate boundaries (issue 42): no `pub fn` (or `pub async fn`) in the
   non-test `src/` code of a library crate (every crate but the binary) returns a
   `Result` whose error is `String`, also inside `Option`, a future or a reference
   (`Option<Result<T, String>>`, `BoxFuture<'_, Result<T, String>>`), with the signature
   spread over lines as rustfmt writes it. An embedder cannot match a string: give the
   function a `thiserror` enum by cause, or make it `pub(crate)` when nothing outside
   its crate calls it. The same holds for the methods of a `pub trait` (an embedder
   implements them; `toolbelt_core::EmbedderError` carries its words) and for a
   `pub type` alias.
6. No doc tests: every library crate's `[lib]` sets `doctest = false` (rustdoc's doc-test
   pass would compile each crate once more in every test run, for nothing), so no doc
   comment may open a Rust code block (a bare or `rust` fence), which would never run;
   mark other blocks (`text`, `sh`, `json`) and put runnable examples in `examples/`.

7. A small contract (issue 42): toolbelt-core, the tool contract, declares at most
   CORE_PUB_LIMIT public items (`pub fn`, methods included, `struct`, `enum`, `trait`,
   `type`, `const`, `static`, `mod`) in its non-test code. What is not the contract
   belongs to toolbelt-engine (registry, rules, scheduler) or toolbelt-config (settings,
   trust, when-clauses); that core depends on toolbelt-config alone is rule 2's graph.

Run from the repository root: `python3 scripts/check_house.py`. Exit 1 with every
finding listed, 0 when the house is in order.
"""

import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CODEMAP = "CODEMAP.md"
BINARY = "toolbelt"
# A sanity ceiling, not the measure: the rule is what the binary holds (ASSEMBLY).
BINARY_CEILING = 6000

# What building a session takes; the binary names none of it. Each is a regular
# expression over a code line (comments and `#[cfg(test)]` parts are not read).
ASSEMBLY = {
    r"\bToolRegistry::(new|default)\b": "makes a tool registry",
    r"\.register\(": "registers a tool",
    r"\bregister_(builtins|declared)\b": "registers tools",
    r"\bbuiltin_tools(_with_shell)?\b": "makes the built-in tools",
    r"\bSchedulerConfig\b": "configures a scheduler",
    r"\bScheduler::new\b": "makes a scheduler",
    r"\b(Permissions|PermissionRules)::(new|from_rules|from_settings)\b": "makes permissions",
    r"\bToolEnvironment::new\b": "makes a tool environment",
    r"\bWorkspaceRoots::new\b": "makes workspace roots",
    r"\bAgent::new\b": "makes an agent",
    r"\bHookEngine::": "makes a hook engine",
    r"\bMcpServers::connect": "connects MCP servers",
}

# Files of the binary let through, with why. Remove an entry when its reason is gone.
BINARY_EXCEPTIONS = {}


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


def module_doc(path):
    """The first paragraph of the file's module doc (`//!` lines after the inner
    attributes and blank lines it may open with), or None when it has none."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    i = 0
    while i < len(lines) and (lines[i].startswith("#![") or not lines[i].strip()):
        i += 1
    words = []
    while i < len(lines) and lines[i].startswith("//!"):
        text = lines[i][3:].strip()
        if not text:
            break
        words.append(text)
        i += 1
    return " ".join(words) or None


def first_sentence(paragraph):
    """Up to the first full stop that a capital, a code span or a bracket follows."""
    m = re.search(r"(?<=[.!?])\s+(?=[A-Z`(\[])", paragraph)
    return paragraph[: m.start()] if m else paragraph


def codemap(crates):
    """CODEMAP.md's text, and the files that have no module doc."""
    out = [
        "# Code map",
        "",
        "<!-- Generated by `python3 scripts/check_house.py --write-codemap` from the first",
        "     sentence of each source file's module doc (`//!`); CI checks it is current.",
        "     Edit the module docs, not this file. -->",
        "",
        "Every non-test source file, crate by crate, with the first sentence of its module",
        "doc. ARCHITECTURE.md says how the crates fit; this says where a thing is.",
    ]
    missing = []
    for name in sorted(crates):
        crate_dir = crates[name]
        out += ["", f"## `crates/{name}`", ""]
        for rel in crate_sources(crate_dir):
            doc = module_doc(os.path.join(crate_dir, rel))
            if doc is None:
                missing.append(f"crates/{name}/{rel}")
                doc = "(no module doc)"
            out.append(f"- `{rel}`: {first_sentence(doc)}")
    return "\n".join(out) + "\n", missing


def check_codemap(crates, write):
    text, missing = codemap(crates)
    findings = [
        f"{path}: no module doc comment (`//!`) at the top of the file" for path in missing
    ]
    path = os.path.join(ROOT, CODEMAP)
    if write:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {CODEMAP}")
        return findings
    try:
        with open(path, encoding="utf-8") as f:
            current = f.read()
    except FileNotFoundError:
        current = None
    if current != text:
        findings.append(
            f"{CODEMAP} is not current (a source file or a module doc changed):"
            " run `python3 scripts/check_house.py --write-codemap` and commit it"
        )
    return findings


def check_sections(text, crates):
    return [
        f"ARCHITECTURE.md: no section for crates/{name} (a ### `crates/{name}` heading)"
        for name in sorted(crates)
        if f"### `crates/{name}`" not in text
    ]


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
    """The file's code lines (not blank, not a comment), up to its `#[cfg(test)]` part."""
    found = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.startswith("#[cfg(test)]"):
                break
            stripped = line.strip()
            if not stripped or stripped.startswith("//"):
                continue
            found.append((n, stripped))
    return found


def check_binary(crate_dir):
    findings = []
    total = 0
    used_exceptions = set()
    for rel in crate_sources(crate_dir):
        if not rel.startswith("src/"):
            continue
        lines = code_lines(os.path.join(crate_dir, rel))
        total += len(lines)
        for n, line in lines:
            for pattern, what in ASSEMBLY.items():
                if not re.search(pattern, line):
                    continue
                if rel in BINARY_EXCEPTIONS:
                    used_exceptions.add(rel)
                    continue
                findings.append(
                    f"crates/{BINARY}/{rel}:{n}: the binary {what} (`{line}`): session"
                    " assembly belongs to toolbelt-session (ARCHITECTURE.md, crates/toolbelt)"
                )
    for rel in sorted(set(BINARY_EXCEPTIONS) - used_exceptions):
        findings.append(
            f"scripts/check_house.py: BINARY_EXCEPTIONS lets {rel} through, but it assembles"
            " nothing: remove the exception"
        )
    if total > BINARY_CEILING:
        findings.append(
            f"the binary crate has {total} code lines (sanity ceiling {BINARY_CEILING}):"
            " what grew there that a library should hold?"
        )
    print(
        f"binary crate: {total} code lines (sanity ceiling {BINARY_CEILING});"
        f" assembly let through in {sorted(used_exceptions)}"
    )
    return findings


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


FENCE = re.compile(r"^\s*//[/!]\s*```\s*(\S*)")


def check_no_doctests(crates):
    findings = []
    for name, crate_dir in sorted(crates.items()):
        with open(os.path.join(crate_dir, "Cargo.toml"), encoding="utf-8") as f:
            manifest = f.read()
        lib = os.path.isfile(os.path.join(crate_dir, "src", "lib.rs"))
        if lib and not re.search(r"^\[lib\][^\[]*^doctest = false$", manifest, re.M | re.S):
            findings.append(f"{name}/Cargo.toml: [lib] does not set `doctest = false`")
        for rel in crate_sources(crate_dir):
            with open(os.path.join(crate_dir, rel), encoding="utf-8") as f:
                lines = f.read().splitlines()
            inside = False
            for n, line in enumerate(lines, 1):
                m = FENCE.match(line)
                if not m:
                    continue
                if not inside and m.group(1).split(",")[0] in ("", "rust"):
                    findings.append(
                        f"{name}/{rel}:{n}: a Rust code block in a doc comment, which no test runs: mark it `text` or move it to examples/"
                    )
                inside = not inside
    return findings


# `pub fn` / `pub async fn` (not `pub(crate)`), to the end of the signature.
PUB_FN = re.compile(r"^[ \t]*pub\s+(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)", re.M)


def balanced_end(text, i, open_c, close_c):
    """The index after the bracket that closes the one at `text[i]`."""
    depth = 0
    while i < len(text):
        if text[i] == open_c:
            depth += 1
        elif text[i] == close_c and not (close_c == ">" and text[i - 1] == "-"):
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def return_type(signature):
    """What follows the parameters' `->` (a parameter may hold `-> ...` of its own)."""
    rest = re.sub(r"^[^(<]*", "", signature, count=1)
    if rest.startswith("<"):
        rest = rest[balanced_end(rest, 0, "<", ">") :].lstrip()
    if not rest.startswith("("):
        return ""
    rest = rest[balanced_end(rest, 0, "(", ")") :]
    _, arrow, returned = rest.partition("->")
    return returned if arrow else ""


def string_errors(signature):
    """Whether a `Result<..., String>` appears in the return type of `signature`."""
    returned = return_type(signature)
    for m in re.finditer(r"\bResult<", returned):
        depth, args, start = 1, [], m.end()
        i = start
        while i < len(returned) and depth:
            c = returned[i]
            if c in "<([":
                depth += 1
            elif c in ">)]" and not (c == ">" and returned[i - 1] == "-"):
                depth -= 1
            if depth == 1 and c == ",":
                args.append(returned[start:i])
                start = i + 1
            i += 1
        args.append(returned[start : i - 1])
        args = [a for a in args if a.strip()]  # rustfmt's trailing comma
        if len(args) == 2 and args[1].strip() in ("String", "std::string::String"):
            return True
    return False


def non_test_code(path):
    """The file's text up to its `#[cfg(test)]` part, `//` comments blanked. A
    `#[cfg(test)] mod name;` declaration near the top is no test part: reading goes on."""
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    kept = []
    for i, line in enumerate(lines):
        if line.startswith("#[cfg(test)]"):
            following = lines[i + 1] if i + 1 < len(lines) else ""
            if re.match(r"(pub(\([a-z]+\))? )?mod \w+;", following):
                kept.append("\n")
                continue
            break
        kept.append(re.sub(r"//.*", "", line))
    return "".join(kept)


def string_error_items(text):
    """(line, what) of each public function, public trait's method and public type alias
    in `text` whose result is a `Result<_, String>`."""
    found = []
    for m in PUB_FN.finditer(text):
        end = re.compile(r"[{;]").search(text, m.end())
        signature = text[m.start() : end.start() if end else len(text)]
        if string_errors(signature):
            found.append((text.count("\n", 0, m.start()) + 1, f"`pub fn {m.group(1)}`"))
    for m in re.finditer(r"^[ \t]*pub trait (\w+)[^{;]*\{", text, re.M):
        end = balanced_end(text, m.end() - 1, "{", "}")
        for f in re.finditer(r"\bfn (\w+)", text[m.end() : end]):
            start = m.end() + f.start()
            stop = re.compile(r"[{;]").search(text, start)
            if string_errors(text[start : stop.start() if stop else end]):
                found.append(
                    (text.count("\n", 0, start) + 1, f"`{m.group(1)}::{f.group(1)}`")
                )
    for m in re.finditer(r"^[ \t]*pub type (\w+)[^=;]*=([^;]*);", text, re.M):
        if string_errors("fn alias() -> " + m.group(2)):
            found.append((text.count("\n", 0, m.start()) + 1, f"`pub type {m.group(1)}`"))
    return found


def check_string_errors(crates):
    findings = []
    for name, crate_dir in sorted(crates.items()):
        if name == BINARY:
            continue
        for rel in crate_sources(crate_dir):
            if not rel.startswith("src/"):
                continue
            text = non_test_code(os.path.join(crate_dir, rel))
            for line, what in string_error_items(text):
                findings.append(
                    f"crates/{name}/{rel}:{line}: {what} returns a `Result<_, String>`:"
                    " give it a thiserror enum by cause (a trait an embedder implements:"
                    " `toolbelt_core::EmbedderError`), or make it `pub(crate)` if nothing"
                    " outside the crate uses it"
                )
    return findings


# At most this many public items in toolbelt-core (rule 7): core held 484 by this count
# before the engine and the configuration left it, 156 after.
CORE = "toolbelt-core"
CORE_PUB_LIMIT = 220
PUB_ITEM = re.compile(
    r"^\s*pub (?:async |const |unsafe )*(fn|struct|enum|trait|type|const|static|mod)\b", re.M
)


def core_pub_items(crate_dir):
    count = 0
    for rel in crate_sources(crate_dir):
        if rel.startswith("src/"):
            count += len(PUB_ITEM.findall(non_test_code(os.path.join(crate_dir, rel))))
    return count


def check_core_surface(crates):
    count = core_pub_items(crates[CORE])
    print(f"{CORE}: {count} public items (at most {CORE_PUB_LIMIT})")
    if count > CORE_PUB_LIMIT:
        return [
            f"crates/{CORE} declares {count} public items, more than {CORE_PUB_LIMIT}:"
            " is the new item the tool contract, or the engine's or the configuration's?"
        ]
    return []


def main():
    write = "--write-codemap" in sys.argv[1:]
    with open(os.path.join(ROOT, "ARCHITECTURE.md"), encoding="utf-8") as f:
        text = f.read()
    graph, crates = actual_graph()
    findings = check_codemap(crates, write)
    findings += check_sections(text, crates) + check_graph(text, graph)
    findings += check_binary(crates[BINARY])
    findings += check_one_constructor(crates)
    findings += check_string_errors(crates)
    findings += check_no_doctests(crates)
    findings += check_core_surface(crates)
    for finding in findings:
        print(finding, file=sys.stderr)
    if findings:
        print(f"check_house: {len(findings)} finding(s)", file=sys.stderr)
        return 1
    print(
        "check_house: the code map is current, ARCHITECTURE.md's sections and crate graph"
        " match the tree, the binary assembles no session, no public function returns a"
        " String error, no doc tests, the contract is small"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
