#!/usr/bin/env python3
"""Writes a realistic HTML page of about SIZE bytes (default 5 MB) to the given path:
navigation, scripts and styles to drop, then articles with headings, paragraphs, links,
lists, code and tables, with some non-ASCII text."""
import random
import sys

path = sys.argv[1]
size = int(sys.argv[2]) if len(sys.argv) > 2 else 5_000_000
rng = random.Random(7)
words = ("tool runtime agent model schema call result cancel workspace fetch page "
         "markdown café naïve über größe scheduler registry confirm stream").split()


def sentence(n):
    return " ".join(rng.choice(words) for _ in range(n)).capitalize() + "."


head = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>Bench page</title>",
        "<style>body{font-family:sans-serif}" + ".c{color:red}" * 200 + "</style>",
        "<script>" + "var x = 1;" * 500 + "</script></head><body>",
        "<nav><ul>" + "".join(f"<li><a href='/n{i}'>Nav {i}</a></li>" for i in range(50)) + "</ul></nav>"]
out = "".join(head)
parts = [out]
total = len(out)
i = 0
while total < size:
    i += 1
    block = [f"<article><h2 id='s{i}'>Section {i}: {sentence(4)}</h2>"]
    for _ in range(3):
        block.append(f"<p>{sentence(30)} <a href='https://example.com/{i}'>{sentence(3)}</a> {sentence(20)} <em>{sentence(2)}</em></p>")
    block.append("<ul>" + "".join(f"<li>{sentence(6)}</li>" for _ in range(4)) + "</ul>")
    block.append(f"<pre><code>fn f{i}() -> u32 {{ {i} }}</code></pre>")
    block.append("<table><tr><th>a</th><th>b</th></tr>" + "".join(f"<tr><td>{j}</td><td>{sentence(3)}</td></tr>" for j in range(3)) + "</table>")
    block.append("<script>track(" + str(i) + ")</script></article>")
    text = "".join(block)
    parts.append(text)
    total += len(text.encode())
parts.append("<footer>" + sentence(10) + "</footer></body></html>")
with open(path, "w", encoding="utf-8") as f:
    f.write("".join(parts))
