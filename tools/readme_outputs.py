#!/usr/bin/env python3
"""Regenerates every output README.md shows from one run of README's own
commands, so that no shown verdict and table come from different runs
(issue 47).

    python3 tools/readme_outputs.py [--readme README.md] [--build DIR] [--keep DIR]

It runs, in order and in a scratch folder (never the user's results/), the
```sh blocks of README's "Quick start" section exactly as written (build/
and ../shared are links to this tree's), then fills each ```text block that
a marker line names:

    <!-- shown: SNIPPET -->
    ```text
    ...replaced by SNIPPET's output...
    ```

SNIPPET is a shell command run in the scratch folder after every block has
run (README's readers see in the raw file where each output comes from);
$SHOWN holds each block's stdout and stderr as block-N.out / block-N.err.
Absolute paths of this tree and of the scratch folder are written
relative. The line after `<!-- shown-provenance -->` becomes the run's
provenance (commit, date, machine, the disk's file system). README.md is
replaced only when everything succeeded (a temporary file, then a rename);
a failure or Ctrl-C leaves it untouched and removes the scratch folder
unless --keep names one.
"""
import argparse
import datetime
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = re.compile(r"^<!-- shown: (.*) -->$")
PROVENANCE = "<!-- shown-provenance -->"


class Failure(Exception):
    pass


def quick_start_blocks(lines):
    """The ```sh blocks between '## Quick start' and the next '## ' heading
    (headings inside fenced blocks, as shown outputs have, do not count)."""
    blocks, inside, block, fence = [], False, None, None
    for line in lines:
        if fence is None and line.startswith("## "):
            inside = line.startswith("## Quick start")
        elif fence is None and line.startswith("```"):
            fence, block = line.strip(), []
        elif fence is not None and line.strip() == "```":
            if inside and fence == "```sh":
                blocks.append("\n".join(block))
            fence = None
        elif fence is not None:
            block.append(line)
    return blocks


def scratch_tree(base, build):
    repo = os.path.join(base, "repo")
    os.makedirs(os.path.join(repo, "results"))
    os.symlink(os.path.abspath(build), os.path.join(repo, "build"))
    shared = os.path.realpath(os.path.join(ROOT, "..", "shared"))
    if os.path.isdir(shared):
        os.symlink(shared, os.path.join(base, "shared"))
    os.makedirs(os.path.join(base, "shown"))
    return repo


def run_blocks(blocks, repo, shown):
    for n, block in enumerate(blocks, 1):
        print(f"readme_outputs: block {n} of {len(blocks)}", file=sys.stderr)
        with open(os.path.join(shown, f"block-{n}.out"), "w") as out, open(
            os.path.join(shown, f"block-{n}.err"), "w"
        ) as err:
            rc = subprocess.call(["bash", "-e", "-o", "pipefail", "-c", block], cwd=repo, stdout=out, stderr=err)
        if rc != 0:
            tail = open(os.path.join(shown, f"block-{n}.err")).read().strip().splitlines()[-5:]
            raise Failure(f"README's sh block {n} failed (exit {rc}):\n  " + "\n  ".join(tail))


def relative_paths(text, repo):
    for path in (repo + "/", os.path.dirname(repo) + "/", ROOT + "/"):
        text = text.replace(path, "")
    return text


def shown_output(snippet, repo, shown):
    env = dict(os.environ, SHOWN=shown)
    run = subprocess.run(["bash", "-o", "pipefail", "-c", snippet], cwd=repo, env=env, capture_output=True, text=True)
    if run.returncode != 0 or not run.stdout.strip():
        raise Failure(f"marker '{snippet}': exit {run.returncode}, {len(run.stdout)} bytes of output\n{run.stderr}")
    return relative_paths(run.stdout.rstrip("\n"), repo).split("\n")


def provenance_line():
    git = lambda *a: subprocess.run(["git", "-C", ROOT, *a], capture_output=True, text=True).stdout.strip()
    state = git("rev-parse", "--short", "HEAD") + (" with local changes" if git("status", "--porcelain", "--untracked-files=no") else "")
    df = subprocess.run(["df", "--output=source,fstype", ROOT], capture_output=True, text=True).stdout.split("\n")
    disk = " on ".join(df[1].split()[::-1]) if len(df) > 1 and df[1].split() else "unknown"
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
    return (
        f"_Every output below comes from one run of these commands by `tools/readme_outputs.py`: "
        f"commit {state}, {datetime.date.today().isoformat()}, {platform.node()} ({os.cpu_count()} CPUs, {cpu}), "
        f"disk {disk}, shared with other jobs._"
    )


def fill(lines, repo, shown):
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        if line.strip() == PROVENANCE and i + 1 < len(lines):
            out.append(provenance_line())
            i += 2
            continue
        m = MARKER.match(line.strip())
        if m:
            if i + 1 >= len(lines) or lines[i + 1].strip() != "```text":
                raise Failure(f"README line {i + 1}: a shown marker must stand right above a ```text block")
            end = i + 2
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            out.append("```text")
            out.extend(shown_output(m.group(1), repo, shown))
            out.append("```")
            i = end + 1
            continue
        i += 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build folder README's build/ stands for")
    ap.add_argument("--keep", help="run in this (new) folder and keep it")
    args = ap.parse_args()
    if not os.access(os.path.join(args.build, "flashbed"), os.X_OK):
        sys.exit(f"readme_outputs: {args.build}/flashbed is missing: build first (README's set-up)")
    lines = open(args.readme).read().split("\n")
    base = args.keep or tempfile.mkdtemp(prefix="readme-outputs-")
    if args.keep:
        os.makedirs(base)
    try:
        repo = scratch_tree(base, args.build)
        shown = os.path.join(base, "shown")
        run_blocks(quick_start_blocks(lines), repo, shown)
        new = fill(lines, repo, shown)
        tmp = args.readme + ".tmp"
        with open(tmp, "w") as f:
            f.write("\n".join(new))
        os.replace(tmp, args.readme)
        print(f"readme_outputs: {args.readme} rewritten from one run", file=sys.stderr)
    except (Failure, KeyboardInterrupt) as e:
        sys.exit(f"readme_outputs: {e or 'interrupted'}; {args.readme} untouched")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
