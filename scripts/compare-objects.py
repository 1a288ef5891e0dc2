#!/usr/bin/env python3
"""Compares two directories of object files of the same names, as scripts/test-cc.sh's
header was checked: `compare-objects.py BEFORE AFTER`. Each pair is identical (byte for
byte), equivalent (every function's instructions and relocations, every other section's
contents and relocations, and the exception tables' sizes the same: what may differ is the
order of sections and the numbering of local exception-table labels) or different, and the
different ones are named. Exit status 1 when any pair differs or is missing.
Needs the toolchain's llvm-objdump (beside swift) and binutils' readelf."""
import collections
import os
import re
import shutil
import subprocess
import sys

OBJDUMP = shutil.which("llvm-objdump") or os.path.join(
    os.path.dirname(os.path.realpath(shutil.which("swift") or "/usr/bin/swift")), "llvm-objdump")
LABEL = re.compile(r"GCC_except_table\d+")


def run(*arguments):
    return subprocess.run(arguments, check=True, capture_output=True, text=True).stdout


def functions(path):
    """Each function's disassembly with its relocations, by section and name."""
    found = collections.Counter()
    section = function = None
    body = []
    for line in run(OBJDUMP, "-d", "-r", "--no-show-raw-insn", "--no-leading-addr", path).split("\n"):
        if match := re.match(r"^Disassembly of section (.*):", line):
            section = match.group(1)
        elif match := re.match(r"^<(.*)>:$", line):
            if function:
                found[(function, "\n".join(body))] += 1
            function, body = (section, match.group(1)), []
        elif function and line.strip():
            body.append(LABEL.sub("GCC_except_table", " ".join(line.split())))
    if function:
        found[(function, "\n".join(body))] += 1
    return found


def data(path):
    """Every section but code, exception tables, symbols and relocations, by name."""
    skipped = (".text", ".eh_frame", ".gcc_except_table", ".rela", ".symtab", ".strtab",
               ".llvm_addrsig", ".comment", ".group", ".note")
    found = collections.Counter()
    section, words = None, []
    for line in run(OBJDUMP, "-s", path).split("\n") + ["Contents of section <end>:"]:
        if match := re.match(r"^Contents of section (.*):$", line):
            if section and not section.startswith(skipped):
                found[(section, "".join(words))] += 1
            section, words = match.group(1), []
        elif section and line.strip():
            words.append("".join(line.split()[1:5]))
    return found


def relocations(path):
    """Relocations of every section but code (in `functions`) and exception tables."""
    found = collections.Counter()
    section = None
    for line in run(OBJDUMP, "-r", path).split("\n"):
        if match := re.match(r"^RELOCATION RECORDS FOR \[(.*)\]:", line):
            section = match.group(1)
        elif section and not section.startswith((".text", ".eh_frame", ".gcc_except_table")):
            fields = line.split()
            if len(fields) >= 3 and fields[0] != "OFFSET":
                found[(section, fields[1], LABEL.sub("GCC_except_table", " ".join(fields[2:])))] += 1
    return found


def unwind_sizes(path):
    """The total sizes of the unwind tables and of the exception tables."""
    sizes = collections.Counter()
    for line in run("readelf", "-S", "-W", path).split("\n"):
        if match := re.search(r"\]\s+(\.gcc_except_table\S*|\.eh_frame)\s+\S+\s+\S+\s+\S+\s+(\S+)", line):
            kind = "eh_frame" if match.group(1) == ".eh_frame" else "gcc_except_table"
            sizes[kind] += int(match.group(2), 16)
    return sizes


def main():
    if len(sys.argv) != 3:
        print("usage: compare-objects.py BEFORE AFTER", file=sys.stderr)
        return 64
    before, after = sys.argv[1:]
    names = sorted(n for n in os.listdir(before) if n.endswith(".o"))
    counts = collections.Counter()
    for name in names:
        a, b = os.path.join(before, name), os.path.join(after, name)
        if not os.path.exists(b):
            counts["missing"] += 1
            print(f"missing: {b}")
            continue
        with open(a, "rb") as fa, open(b, "rb") as fb:
            if fa.read() == fb.read():
                counts["identical"] += 1
                continue
        differs = [part for part, read in (("code", functions), ("data", data),
                                           ("relocations", relocations), ("unwind", unwind_sizes))
                   if read(a) != read(b)]
        if differs:
            counts["different"] += 1
            print(f"different ({', '.join(differs)}): {name}")
        else:
            counts["equivalent"] += 1
    print(", ".join(f"{counts[k]} {k}" for k in ("identical", "equivalent", "different", "missing")))
    return 1 if counts["different"] or counts["missing"] else 0


if __name__ == "__main__":
    sys.exit(main())
