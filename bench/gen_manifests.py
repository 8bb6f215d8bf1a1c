#!/usr/bin/env python3
"""Writes N tool manifests with M declared tools each into DIR (.qwen/tools layout).

Each tool has a realistic schema (3-6 described parameters), a when clause, a reference
name for every fifth tool, and a command binding; each manifest has one tool set.
Usage: gen_manifests.py DIR [manifests=20] [tools_per_manifest=25]
"""
import json
import os
import random
import sys

VERBS = ["get", "list", "create", "update", "delete", "search", "run", "sync", "check", "find"]
NOUNS = ["issue", "branch", "build", "deploy", "ticket", "metric", "log", "alert", "user", "page",
         "release", "job", "secret", "bucket", "query", "report", "dashboard", "commit", "review"]
PARAMS = ["id", "name", "project", "limit", "query", "status", "owner", "since", "until", "labels",
          "title", "body", "priority", "region", "format"]


def tool(rng, m, i):
    verb, noun = rng.choice(VERBS), rng.choice(NOUNS)
    name = f"{verb}_{noun}_{m:02d}_{i:02d}"
    props = {}
    for p in rng.sample(PARAMS, rng.randint(3, 6)):
        props[p] = {"type": rng.choice(["string", "integer", "boolean"]),
                    "description": f"The {p} of the {noun} to {verb}."}
    entry = {
        "name": name,
        "displayName": f"{verb.title()} {noun} {m}.{i}",
        "modelDescription": (f"{verb.title()}s a {noun} in service {m}. Use it when the user asks "
                             f"to {verb} a {noun}; it returns JSON. Limits: 100 results per call."),
        "inputSchema": {"type": "object", "properties": props,
                        "required": [next(iter(props))]},
        "when": rng.choice(["isLinux", "workspaceFolderCount >= 1", "!isWindows && gitRepository || isLinux",
                            "approvalMode != plan", "config.tools.sandbox != none"]),
    }
    if i % 5 == 0:
        entry["canBeReferencedInPrompt"] = True
        entry["toolReferenceName"] = f"ref{m:02d}{i:02d}"
    return entry


def main():
    out = sys.argv[1]
    manifests = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    per = int(sys.argv[3]) if len(sys.argv) > 3 else 25
    rng = random.Random(12)
    os.makedirs(out, exist_ok=True)
    for m in range(manifests):
        tools = [tool(rng, m, i) for i in range(per)]
        doc = {
            "languageModelTools": tools,
            "languageModelToolSets": [{"name": f"service{m:02d}", "description": f"Service {m}.",
                                       "tools": [t["name"] for t in tools[:5]]}],
            "bindings": {t["name"]: {"command": ["/bin/echo", t["name"]]} for t in tools},
        }
        with open(os.path.join(out, f"service{m:02d}.json"), "w") as f:
            json.dump(doc, f, indent=2)


if __name__ == "__main__":
    main()
