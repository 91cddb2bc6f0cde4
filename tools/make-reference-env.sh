#!/usr/bin/env bash
# The pinned Python environment that regenerates the transformers reference
# fixtures (tools/make_hf_fixture.py) and runs the recorder check
# (tools/recorder_check.sh): a virtual environment over Debian's CPU build of
# torch and its numpy (tools/reference-env/debian.txt, exact versions), with
# transformers, tokenizers, safetensors and what they need from PyPI
# (tools/reference-env/requirements.txt, exact versions, --no-deps); and
# gguf and llama-cpp-python for the GGUF fixtures and the real models'
# references (tools/make_gguf_fixture.py, tools/make_gguf_reference.py).
# llama-cpp-python comes as an sdist: pip builds its bundled llama.cpp from
# source with Debian's cmake and g++, CPU only (CMAKE_ARGS below: no GPU or
# BLAS backend is tried), -march=native, without build isolation against
# tools/reference-env/build-requirements.txt: about 10 minutes on 2 busy
# cores, once (nice'd). Only regeneration needs it: the fixtures are
# committed, and no test needs PyPI, torch, llama.cpp or a network.
#
#   tools/make-reference-env.sh [DIR]     DIR defaults to .venv-ref (ignored by git)
#
# Then DIR/bin/python runs the scripts. Refuses, naming them, when a pinned
# Debian package cannot be had at its version, and checks every pin once
# installed (tools/reference-env/pins.py). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.venv-ref}
pins=tools/reference-env

sudo=()
[ "$(id -u)" -ne 0 ] && sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive

# Debian's packages at their pinned versions
want=() missing=()
while read -r pkg version _; do
    case $pkg in '' | '#'*) continue ;; esac
    have=$(dpkg-query -W -f='${Status} ${Version}' "$pkg" 2>/dev/null || true)
    [ "$have" = "install ok installed $version" ] && continue
    want+=("$pkg=$version")
done < "$pins/debian.txt"
if [ ${#want[@]} -gt 0 ]; then
    echo "make-reference-env: installing ${want[*]}" >&2
    "${sudo[@]}" apt-get update -q </dev/null >/dev/null || true
    if ! "${sudo[@]}" apt-get install -y -q --no-install-recommends "${want[@]}" </dev/null >/dev/null; then
        for w in "${want[@]}"; do
            apt-cache madison "${w%%=*}" 2>/dev/null | grep -q " ${w#*=} " || missing+=("$w")
        done
        echo "make-reference-env: cannot install the pinned Debian packages ${missing[*]:-${want[*]}}" \
             "(tools/reference-env/debian.txt); this needs Debian 12 (bookworm)" >&2
        exit 1
    fi
fi

if [ ! -x "$dir/bin/python" ]; then
    echo "make-reference-env: creating $dir" >&2
    /usr/bin/python3 -m venv --system-site-packages "$dir"
fi
pip=("$dir/bin/python" -m pip install -q --disable-pip-version-check --no-deps)
"${pip[@]}" -r "$pins/build-requirements.txt"
# llama.cpp's CPU backend only, its library (no tools, tests, examples or
# multimodal library); ccache where there is one, for a rebuild
export CMAKE_ARGS="-DGGML_CUDA=OFF -DGGML_HIP=OFF -DGGML_VULKAN=OFF -DGGML_OPENCL=OFF\
 -DGGML_METAL=OFF -DGGML_SYCL=OFF -DGGML_BLAS=OFF -DGGML_RPC=OFF -DLLAVA_BUILD=OFF\
 -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF\
 -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF"
command -v ccache >/dev/null && CMAKE_ARGS+=" -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
nice "${pip[@]}" --no-build-isolation --no-binary llama-cpp-python -r "$pins/requirements.txt"
if ! "$dir/bin/python" "$pins/pins.py"; then
    echo "make-reference-env: $dir does not hold the pinned versions (above)" >&2
    exit 1
fi
# the llama.cpp that pip built is the CPU one (a wheel built elsewhere with a
# GPU backend would satisfy the pin too)
if ! "$dir/bin/python" -c 'import llama_cpp, sys; sys.exit(llama_cpp.llama_supports_gpu_offload())'; then
    echo "make-reference-env: $dir's llama-cpp-python has a GPU backend; remove it" \
         "($dir/bin/python -m pip uninstall llama-cpp-python) and run this again" >&2
    exit 1
fi
echo "make-reference-env: $dir ready; run the scripts with $dir/bin/python" >&2
