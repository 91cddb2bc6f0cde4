"""The build backend of pip install ./python (PEP 517), in the standard
library alone: a wheel of flashbed_trace.py and flashbed_record.py, and
libflashbed_trace.so beside them when CMake has built it (FLASHBED_TRACE_LIB
names it, else ../build/ is looked in), so an install reads and writes
traces at the C library's speed. Without the library the wheel is pure
Python and the modules run their Python reader and writer (same sets, same
bytes, slower). No editable installs: use PYTHONPATH=python for that."""

import base64
import hashlib
import os
import sysconfig
import zipfile

NAME, VERSION = "flashbed", "0.25.0"
MODULES = ("flashbed_trace.py", "flashbed_record.py")
LIB = "libflashbed_trace.so"
HERE = os.path.dirname(os.path.abspath(__file__))
METADATA = """Metadata-Version: 2.1
Name: %s
Version: %s
Summary: flashbed's activation traces from Python: read, write, record a PyTorch model's
Requires-Python: >=3.8
Provides-Extra: numpy
Requires-Dist: numpy>=1.17; extra == "numpy"
Provides-Extra: record
Requires-Dist: torch; extra == "record"
Requires-Dist: transformers; extra == "record"
""" % (NAME, VERSION)
ENTRY_POINTS = """[console_scripts]
flashbed-trace = flashbed_trace:cli
flashbed-record = flashbed_record:cli
"""


def _library():
    """The shared library to ship, or None."""
    env = os.environ.get("FLASHBED_TRACE_LIB")
    if env is not None:
        return env if env not in ("", "none") and os.path.exists(env) else None
    path = os.path.join(HERE, "..", "build", LIB)
    return path if os.path.exists(path) else None


def _tag(lib):
    if lib is None:
        return "py3-none-any"
    return "py3-none-" + sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    lib = _library()
    tag = _tag(lib)
    files = [(m, open(os.path.join(HERE, m), "rb").read()) for m in MODULES]
    if lib is not None:
        files.append((LIB, open(lib, "rb").read()))
    info = "%s-%s.dist-info" % (NAME, VERSION)
    wheel = "Wheel-Version: 1.0\nGenerator: flashbed_build\nRoot-Is-Purelib: %s\nTag: %s\n" % (
        "false" if lib else "true", tag)
    files += [(info + "/METADATA", METADATA.encode()), (info + "/WHEEL", wheel.encode()),
              (info + "/entry_points.txt", ENTRY_POINTS.encode())]
    record = [_record_line(n, d) for n, d in files] + [info + "/RECORD,,"]
    files.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    name = "%s-%s-%s.whl" % (NAME, VERSION, tag)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files:
            zi = zipfile.ZipInfo(n, date_time=(2026, 1, 1, 0, 0, 0))
            zi.external_attr = (0o755 if n.endswith(".so") else 0o644) << 16
            z.writestr(zi, d, zipfile.ZIP_DEFLATED)
    return name


def build_sdist(sdist_directory, config_settings=None):
    import tarfile
    base = "%s-%s" % (NAME, VERSION)
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for f in MODULES + ("pyproject.toml", "flashbed_build.py"):
            t.add(os.path.join(HERE, f), arcname=base + "/" + f)
        info = tarfile.TarInfo(base + "/PKG-INFO")
        data = METADATA.encode()
        info.size = len(data)
        import io
        t.addfile(info, io.BytesIO(data))
    return name
