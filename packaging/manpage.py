#!/usr/bin/env python3
"""Writes a man page (section 1, man(7) macros) for one of the suite's apps from its
argument parser: `APP --experimental-dump-help` (swift-argument-parser's JSON description
of every command, option, flag and argument). Nothing in the page is written by hand, so
it cannot drift from `--help`.

usage: manpage.py APP_BINARY OUTPUT_FILE [--date YYYY-MM-DD] [--version VERSION]

One page per app: NAME, SYNOPSIS, DESCRIPTION, OPTIONS, then one SUBCOMMANDS entry per
subcommand (nested ones as "app verb sub") with its own options, as swift-argument-parser's
generate-manual lays out a single page. Exits 1 with `error:` on stderr when the app cannot
describe itself.
"""

import json
import re
import subprocess
import sys
import argparse


def breakable(word):
    """A long word (a comma-separated list, a path) may break after , / or |."""
    if len(word) <= 40:
        return word
    for mark in ",/|":
        word = word.replace(mark, mark + "\\:")
    return word


def escape(text):
    """Escapes text for roff: backslashes, and a leading dot or quote on any line."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    text = re.sub(r"\S{41,}", lambda match: breakable(match.group(0)), text)
    # Plain ASCII input: groff without preconv reads bytes, so other characters are named.
    text = "".join(c if ord(c) < 128 else "\\[u%04X]" % ord(c) for c in text)
    lines = []
    for line in text.split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def paragraphs(text):
    """Discussion text as roff: prose paragraphs filled, indented blocks (examples) kept."""
    out = []
    for block in text.strip("\n").split("\n\n"):
        lines = block.split("\n")
        out.append(".PP")
        if any(line.startswith((" ", "\t")) for line in lines):
            out += [".nf", escape(block), ".fi"]
        else:
            out.append(escape(" ".join(line.strip() for line in lines)))
    return out


def option_names(arg):
    names = []
    for name in arg.get("names", []):
        prefix = {"long": "--", "short": "-", "longWithSingleDash": "-"}.get(name["kind"], "--")
        names.append(prefix + name["name"])
    return names


def synopsis_item(arg):
    if arg["kind"] == "positional":
        text = "<" + arg.get("valueName", "value") + ">"
    else:
        names = option_names(arg)
        text = names[0] if names else ""
        if arg["kind"] == "option":
            text += " <" + arg.get("valueName", "value") + ">"
    if arg.get("isRepeating"):
        text += " ..."
    if arg.get("isOptional"):
        text = "[" + text + "]"
    return text


def visible(items):
    return [a for a in items if a.get("shouldDisplay", True)]


def describe_arguments(out, arguments):
    for arg in visible(arguments):
        if arg["kind"] == "positional":
            head = "\\fI" + escape(arg.get("valueName", "value")) + "\\fR"
        else:
            parts = []
            for name in option_names(arg):
                part = "\\fB" + escape(name) + "\\fR"
                if arg["kind"] == "option":
                    part += " \\fI" + escape(arg.get("valueName", "value")) + "\\fR"
                parts.append(part)
            head = ", ".join(parts)
        out.append(".TP")
        out.append(head)
        text = arg.get("abstract", "")
        if arg.get("discussion"):
            discussion = arg["discussion"]
            if isinstance(discussion, dict):
                discussion = discussion.get("default", "")
            text += ("\n" if text else "") + str(discussion)
        if "defaultValue" in arg and arg["kind"] != "flag":
            text += " (default: " + str(arg["defaultValue"]) + ")"
        out.append(escape(text) if text else "")


def commands(command, path):
    """The command tree in order, each with its full name ("app verb sub")."""
    yield path, command
    for sub in command.get("subcommands", []):
        if sub.get("commandName") == "help" or not sub.get("shouldDisplay", True):
            continue
        yield from commands(sub, path + [sub["commandName"]])


def page(command, date, version):
    name = command["commandName"]
    out = [
        '.TH "%s" "1" "%s" "Shopfloor %s" "Shopfloor Manual"' % (name.upper(), date, version),
        ".SH NAME",
        "%s \\- %s" % (escape(name), escape(command.get("abstract", ""))),
        ".SH SYNOPSIS",
    ]
    for path, cmd in commands(command, [name]):
        items = " ".join(synopsis_item(a) for a in visible(cmd.get("arguments", [])))
        subs = [s for s in cmd.get("subcommands", []) if s.get("commandName") != "help"]
        if subs:
            items = (items + " " if items else "") + "<subcommand>"
        out.append(".HP")
        out.append("\\fB" + escape(" ".join(path)) + "\\fR " + escape(items))
    if command.get("discussion"):
        out += [".SH DESCRIPTION"] + paragraphs(command["discussion"])
    if visible(command.get("arguments", [])):
        out.append(".SH OPTIONS")
        describe_arguments(out, command.get("arguments", []))
    nested = list(commands(command, [name]))[1:]
    if nested:
        out.append(".SH SUBCOMMANDS")
        for path, cmd in nested:
            out.append(".SS " + escape(" ".join(path)))
            if cmd.get("abstract"):
                out.append(escape(cmd["abstract"]))
            if cmd.get("discussion"):
                out += paragraphs(cmd["discussion"])
            describe_arguments(out, cmd.get("arguments", []))
    out += [
        ".SH EXIT STATUS",
        "0 success; 1 error; 3 not found; 5 update required; 6 offline with no cached data;",
        "13 not permitted; 64 usage error; 77 sign-in required; 130/143 stopped by SIGINT/SIGTERM.",
        ".SH ENVIRONMENT",
        ".TP",
        "\\fBSHOPFLOOR_HOME\\fR",
        "Root of the suite's containers (settings, tokens, caches, server data).",
        ".TP",
        "\\fBSHOPFLOOR_SUITE\\fR",
        "Suite (app group) name.",
        ".TP",
        "\\fBSHOPFLOOR_SERVER\\fR",
        "store\\-server base URL for the client apps.",
        ".TP",
        "\\fBNO_COLOR\\fR",
        "No colour in any output.",
    ]
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary")
    parser.add_argument("output")
    parser.add_argument("--date", default="")
    parser.add_argument("--version", default="")
    options = parser.parse_args()
    try:
        dump = subprocess.run(
            [options.binary, "--experimental-dump-help"],
            check=True, capture_output=True, timeout=60,
        ).stdout
        command = json.loads(dump)["command"]
    except (OSError, subprocess.SubprocessError, ValueError, KeyError) as error:
        print("error: %s cannot describe itself (--experimental-dump-help): %s"
              % (options.binary, error), file=sys.stderr)
        return 1
    text = page(command, options.date, options.version)
    with open(options.output, "w", encoding="utf-8") as handle:
        handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
