#!/usr/bin/env python3
"""Lists the C functions longer than N lines (issue 29: none over 60).

  tools/long-functions.py [-n N] [PATH ...]

PATH (files or folders, default: the repository) is searched for .c files,
leaving out build*/ folders (CMake's output) and .git. A function's length
counts from the first line of its header (the return type) to its closing
brace, both included. One line per function over N, longest first:

  LINES  FILE:LINE  NAME

Exit status 1 when any function is over N (so a script or CI can check),
0 when none is, 2 on a usage error.

This is a brace counter, not a C parser: comments, string and character
literals and preprocessor lines are blanked first, and a '{' at file scope
opens a function when the text before it (since the last ';' or '}')
ends in a parenthesised parameter list and has no '='. That is enough for
this tree's style; a function defined by a macro is not seen.
"""
import argparse
import os
import re
import sys


def blank_non_code(text):
    """text with comments, literals and preprocessor lines turned into
    spaces, newlines kept, so offsets and line numbers stay the same."""
    out = list(text)
    i, n = 0, len(text)
    at_line_start = True

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if at_line_start and c in " \t":
            i += 1
            continue
        if at_line_start and c == "#":  # a directive, with its continuations
            j = i
            while j < n and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i, min(j, n))
            i = j
            continue
        at_line_start = False
        if c == "\n":
            at_line_start = True
            i += 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i, min(j + 1, n))
            i = j + 1
        else:
            i += 1
    return "".join(out)


NAME_BEFORE_PAREN = re.compile(r"([A-Za-z_]\w*)\s*\($")


def function_name(header):
    """The name of the function a file-scope header declares, or None when
    the header is not a function's (a struct, an initialiser, ...)."""
    h = header.strip()
    if not h.endswith(")") or "=" in h or "(" not in h:
        return None
    # the parameter list is the last parenthesised group; the name is the
    # identifier right before it (a function returning a function pointer
    # is not in this tree)
    depth = 0
    for k in range(len(h) - 1, -1, -1):
        if h[k] == ")":
            depth += 1
        elif h[k] == "(":
            depth -= 1
            if depth == 0:
                m = NAME_BEFORE_PAREN.search(h[: k + 1])
                return m.group(1) if m else None
    return None


def functions(path):
    """(name, first line, last line) of every function defined in path."""
    with open(path, encoding="utf-8", errors="replace") as f:
        code = blank_non_code(f.read())
    found = []
    depth = 0
    start = 0  # where the current file-scope declaration's text begins
    open_at = None
    for i, c in enumerate(code):
        if c == "{":
            if depth == 0:
                name = function_name(code[start:i])
                open_at = None
                if name:
                    first = start + (len(code[start:i]) - len(code[start:i].lstrip()))
                    open_at = (name, code.count("\n", 0, first) + 1)
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if open_at:
                    found.append((open_at[0], open_at[1], code.count("\n", 0, i) + 1))
                    open_at = None
                start = i + 1
        elif c == ";" and depth == 0:
            start = i + 1
    return found


def c_files(paths):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if not d.startswith("build") and d != ".git")
            for f in sorted(files):
                if f.endswith(".c"):
                    yield os.path.join(root, f)


def main():
    ap = argparse.ArgumentParser(description="C functions longer than N lines")
    ap.add_argument("-n", type=int, default=60, help="the most lines a function may have (default 60)")
    ap.add_argument("paths", nargs="*", help="files or folders (default: the repository)")
    a = ap.parse_args()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    paths = a.paths or [os.path.relpath(root)]
    long_ones = []
    for path in c_files(paths):
        for name, first, last in functions(path):
            lines = last - first + 1
            if lines > a.n:
                long_ones.append((lines, os.path.normpath(path), first, name))
    long_ones.sort(key=lambda t: (-t[0], t[1], t[2]))
    for lines, path, first, name in long_ones:
        print(f"{lines:5d}  {path}:{first}  {name}")
    return 1 if long_ones else 0


if __name__ == "__main__":
    sys.exit(main())
