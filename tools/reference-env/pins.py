#!/usr/bin/env python3
"""The reference environment's pins (requirements.txt, build-requirements.txt
and debian.txt beside
this file) against the interpreter that runs this: which are missing or at
another version.

  pins.py            exit 0 when every pin holds, else 1 with each problem
                     on stderr
  pins.py --json     the pinned versions as JSON on stdout (what a fixture's
                     reference.json records), after the same check

From another script: sys.path gets this folder, then
`pins.require("tools/make_hf_fixture.py")` exits naming what is wrong, and
`pins.versions()` gives the dict to record.
"""
import importlib.metadata
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def pinned():
    """[(distribution, version, where)]: where is 'PyPI' or the Debian package."""
    pins = []
    for name in ("requirements.txt", "build-requirements.txt"):
        with open(os.path.join(HERE, name)) as f:
            for line in f:
                line = line.split("#")[0].strip()
                if line:
                    dist, version = line.split("==")
                    if (dist, version, "PyPI") not in pins:
                        pins.append((dist, version, "PyPI"))
    with open(os.path.join(HERE, "debian.txt")) as f:
        for line in f:
            fields = line.split("#")[0].split()
            if fields and fields[2] != "-":
                pins.append((fields[2], fields[3], "Debian %s %s" % (fields[0], fields[1])))
    return pins


def problems():
    """One line per pin that this interpreter does not hold."""
    out = []
    for name, version, where in pinned():
        try:
            have = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out.append("%s %s (%s) is missing" % (name, version, where))
            continue
        if have != version:
            out.append("%s is %s, the pin is %s (%s)" % (name, have, version, where))
    return out


def versions():
    """The pinned distributions' versions, and Python's."""
    v = {name: version for name, version, _ in pinned()}
    v["python"] = "%d.%d.%d" % sys.version_info[:3]
    return v


def require(who):
    """Exits with every problem named unless the environment is the pinned one."""
    bad = problems()
    if bad:
        sys.exit("%s: needs the pinned reference environment (tools/make-reference-env.sh); %s differs:\n  %s"
                 % (who, sys.executable, "\n  ".join(bad)))


def main(argv):
    bad = problems()
    for line in bad:
        print("pins.py: " + line, file=sys.stderr)
    if bad:
        return 1
    if "--json" in argv:
        print(json.dumps(versions(), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
