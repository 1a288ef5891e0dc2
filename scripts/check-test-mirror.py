#!/usr/bin/env python3
"""Checks the hand mirror of test targets: the root Package.swift owns every package's test
target too (same name, same directory), so `make test` builds one graph. Each mirrored
target must have the sources path and the dependencies the package's own manifest gives it,
and every package's test target must be mirrored; otherwise `make test` and `swift test
--package-path Packages/X` would test different things without anyone noticing.

Run by `make test` and `make check`; exits 1 naming each difference."""
import concurrent.futures
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def manifest(path):
    """The manifest of the package at `path`, as `swift package dump-package` gives it."""
    text = subprocess.run(
        ["swift", "package", "dump-package", "--package-path", str(path)],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(text)


def dependencies(target, package):
    """A target's dependencies as (name, package) pairs, package names lowercased; a bare
    name is a target of `package` itself."""
    result = set()
    for dependency in target["dependencies"]:
        if "byName" in dependency:
            result.add((dependency["byName"][0], package.lower()))
        elif "target" in dependency:
            result.add((dependency["target"][0], package.lower()))
        elif "product" in dependency:
            name, owner = dependency["product"][0], dependency["product"][1]
            result.add((name, (owner or package).lower()))
    return result


def main():
    packages = sorted(p.parent for p in (ROOT / "Packages").glob("*/Package.swift"))
    # One manifest at a time takes a minute on a busy machine; they load independently.
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(packages) + 1) as pool:
        manifests = list(pool.map(manifest, [ROOT] + packages))
    root = {t["name"]: t for t in manifests[0]["targets"] if t["type"] == "test"}
    problems = []
    for directory, own in zip(packages, manifests[1:]):
        for target in own["targets"]:
            if target["type"] != "test":
                continue
            name = target["name"]
            where = f"{directory.relative_to(ROOT)}: test target {name}"
            mirror = root.get(name)
            if mirror is None:
                problems.append(f"{where} is not mirrored in the root Package.swift")
                continue
            path = str(directory.relative_to(ROOT) / (target.get("path") or f"Tests/{name}"))
            if mirror.get("path") != path:
                problems.append(f"{where}: the root's path is {mirror.get('path')}, not {path}")
            wanted = dependencies(target, own["name"])
            mirrored = dependencies(mirror, "Shopfloor")
            for name_, package in sorted(wanted - mirrored):
                problems.append(f"{where}: the root's mirror lacks {name_} ({package})")
            for name_, package in sorted(mirrored - wanted):
                problems.append(f"{where}: the root's mirror adds {name_} ({package})")
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"test target mirror: {len(packages)} packages' test targets match the root's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
