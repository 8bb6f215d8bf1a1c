#!/usr/bin/env python3
"""Generates a source-like tree for the search benchmarks (bench/search.sh).

Deterministic (seeded), so runs compare. The tree is a git repository with a
.gitignore that hides a `vendor/` directory full of files, so ignore pruning is part
of what is measured, as it is for ripgrep. A rare word (RARE_WORD, in mixed case)
sits in about one file in a thousand; a common word is everywhere.

usage: gen_corpus.py DIR FILES TOTAL_MB
"""
import os
import random
import subprocess
import sys

RARE_WORD = "XylophoneQuartz"
EXTS = [".rs", ".rs", ".rs", ".py", ".js", ".ts", ".md", ".txt", ".go", ".c"]
WORDS = (
    "let mut self fn return match impl struct enum trait pub use mod crate where for in if else "
    "while loop break continue async await move ref type const static unsafe dyn box vec string "
    "option result some none ok err value index buffer reader writer parse format display debug "
    "clone copy default hash order equal compare iterator collect filter map fold into from"
).split()


def line(rng):
    n = rng.randint(2, 14)
    indent = " " * (4 * rng.randint(0, 3))
    return indent + " ".join(rng.choice(WORDS) for _ in range(n)) + ";\n"


def main():
    root, files, total_mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(42)
    # A pool of lines, sliced into files: fast enough for a gigabyte.
    pool = "".join(line(rng) for _ in range(200_000))
    avg = total_mb * 1024 * 1024 // files
    os.makedirs(root, exist_ok=True)
    ignored = files // 10
    for i in range(files):
        top = "vendor" if i < ignored else f"src{i % 20}"
        d = os.path.join(root, top, f"mod{(i // 7) % 50}", f"sub{i % 13}")
        os.makedirs(d, exist_ok=True)
        size = max(200, int(rng.expovariate(1 / avg)))
        start = rng.randrange(0, len(pool) - size - 1)
        start = pool.index("\n", start) + 1
        body = pool[start:start + size]
        if i % 997 == 5:
            cut = body.find("\n", len(body) // 2) + 1
            word = RARE_WORD if i % 2 else RARE_WORD.lower()
            body = body[:cut] + f"    // found the {word} here\n" + body[cut:]
        with open(os.path.join(d, f"file{i}{EXTS[i % len(EXTS)]}"), "w") as f:
            f.write(body)
    with open(os.path.join(root, ".gitignore"), "w") as f:
        f.write("vendor/\n")
    subprocess.run(["git", "init", "-q", root], check=True)


if __name__ == "__main__":
    main()
