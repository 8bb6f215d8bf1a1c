#!/usr/bin/env python3
"""Names the functions of BINARY that overlap the code pages a run touched, in the order
first touched (bench/link_order.sh; the linker's --symbol-ordering-file format, one
symbol a line).

    order.py PAGES BINARY OUT

PAGES: file offsets of 4 KiB pages of BINARY's code, one a line, as trap.c writes them.
"""

import bisect
import subprocess
import sys


def code_delta(binary):
    """p_vaddr - p_offset of the executable LOAD segment (file offset to address)."""
    out = subprocess.run(["readelf", "-l", "-W", binary], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD" and "E" in f[6:-1]:
            return int(f[2], 16) - int(f[1], 16)
    sys.exit(f"order.py: no executable segment in {binary}")


def functions(binary):
    """(address, size, name) of every defined function with a size, by address."""
    out = subprocess.run(["nm", "-n", "-S", "--defined-only", binary],
                         capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tTwW" and int(f[1], 16) > 0:
            found.append((int(f[0], 16), int(f[1], 16), f[3]))
    found.sort()
    return found


def main():
    pages_file, binary, out = sys.argv[1:4]
    delta = code_delta(binary)
    pages, seen = [], set()
    for line in open(pages_file):
        line = line.strip()
        if line and line not in seen:
            seen.add(line)
            pages.append(int(line))
    syms = functions(binary)
    starts = [s[0] for s in syms]
    names, named, size = [], set(), 0
    for offset in pages:
        lo = offset + delta
        hi = lo + 4096
        i = max(bisect.bisect_right(starts, lo) - 1, 0)
        while i < len(syms) and syms[i][0] < hi:
            addr, length, name = syms[i]
            if addr + length > lo and name not in named:
                named.add(name)
                names.append(name)
                size += length
            i += 1
    with open(out, "w") as f:
        f.write("".join(n + "\n" for n in names))
    print(f"order.py: {len(pages)} pages touched, {len(names)} functions ({size / 1e6:.1f} MB) in {out}")


if __name__ == "__main__":
    main()
