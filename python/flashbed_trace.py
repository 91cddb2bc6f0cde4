#!/usr/bin/env python3
"""Read and write flashbed activation trace files from Python.

A trace records, per token and per FFN layer, which neurons were active and
(optionally) which ones the predictor marked and which input channels an
input-sparse source (TEAL) kept (header flag bit 1; ids below d_model). The layout is specified in
traces/trace.h; this module follows the C code in traces/ (trace_file.c,
trace_reader.c, trace_writer.c, set_codec.c) byte for byte.

Format versions:
  * reading: version 1 (no checksums: read unchecked), version 2 (header,
    every (token, layer) block and the footer each carry a CRC-32C, all
    verified, and the footer's counts are checked against the body) and
    version 3 (the header records the weight type and the unit kind and
    count; versions 1 and 2 recorded bytes per weight: 4 reads as f32, 2 as
    f16, any other is refused);
  * writing: version 3 only, byte for byte what the C writer writes: each
    set against the previous token's set of its layer and, a predicted set,
    its layer's active set, as a bitset or Rice-coded gaps, whichever is
    smallest (set_codec.c's choice, in the same order).

Speed: where libflashbed_trace.so is found, reading and writing run in the
C library (traces/trace_capi.h over ctypes): FLASHBED_TRACE_LIB names it
(or "none": never), else it is looked for beside this file (an install by
pip install ./python after the CMake build) and in ../build/. Otherwise
they run in Python: the same sets and bytes, some 20 times slower.
library() gives the library in use, why_pure() why none is.

Errors: every problem with a file raises TraceError, whose message names
the file and, where it applies, the token and layer, in the C reader's
words ("FILE: token 3 layer 1: checksum mismatch ..."). The command line
prints that message on stderr and exits with status 1; when its output's
reader goes away (`... dump T | head`) it stops quietly with status 141.

Sets: TraceReader(path, sets=...) and read_tokens(path, sets=...) give
each set in one of three forms, the same neurons in each:
  * "list" (the default): a sorted list of ints;
  * "set": a frozenset of ints;
  * "numpy": a sorted, read-only numpy.uint32 array (with the C library,
    views of one array per token: the fastest form).
TraceWriter.layer takes sets in any of these forms (numpy arrays of
uint32 go to the C library as they are).

Only the Python 3 standard library is needed. numpy (1.17 or later) is
optional: it is imported only when sets="numpy" is asked for (or by info,
when present, to count without an int per neuron), and asking for that
form without numpy raises TraceError.

Command line:
  flashbed_trace.py info TRACE [--json]   header, counts, neurons per layer
  flashbed_trace.py copy [--active-only] IN OUT
                                          rewrite IN through reader and writer
                                          (--active-only: without predicted sets)
  flashbed_trace.py dump TRACE            every set, one line each
(or python3 -m flashbed_trace ..., or flashbed-trace ... once installed).
"""

import ctypes
import json
import operator
import os
import re
import struct
import sys
from array import array
from itertools import accumulate, chain, repeat

MAGIC = b"FBTRACE\0"
END_MAGIC = b"FBTREND\0"
TOKEN_MARK = 0xA7
VERSION = 3           # what the writer writes
VERSION_CHECKED = 2   # the first version with checksums
VERSION_TYPED = 3     # the first with a weight type and unit fields

TOKEN_GENERATED = 1 << 0  # clear: a prompt token
TOKEN_SEQ_START = 1 << 1  # first token of a new sequence
FLAG_PREDICTED, FLAG_CHANNELS = 1 << 0, 1 << 1  # header flags

FFN_RELU, FFN_GLU = 0, 1
REF_NONE, REF_PREV, REF_ACTIVE = 0, 1, 2
CODE_BITSET, CODE_RICE = 0, 1

HEADER_FIXED = 8 + 4 + 8 * 4 + 8 + 4  # magic .. source_len
HEADER_FIXED_V2 = 8 + 4 + 6 * 4 + 8 + 4  # versions 1 and 2: no unit fields

# The weight types by name: (file code, bytes of one weight), as
# common/wtypes.def's rows (codes are ggml's type numbers).
WTYPES = {"f32": (0, 4), "f16": (1, 2), "bf16": (30, 2)}
# The unit kinds' file codes (common/unit_kinds.def).
UNIT_NEURON_BUNDLE, UNIT_CHANNEL_BUNDLE, UNIT_DOWN_ROW, UNIT_EXPERT = 0, 1, 2, 3
UNIT_NAMES = {0: "neuron bundle", 1: "channel bundle", 2: "row of down", 3: "expert"}


def dtype_of_code(code):
    """The type name of a file code; None when no row has it."""
    return next((n for n, (c, _) in WTYPES.items() if c == code), None)


def dtype_of_bytes(bpw):
    """An older header's bytes per weight as a type (traces/trace.h): 4 is
    f32, 2 f16 (a 2 could have been bf16, which prices the same); None for
    any other."""
    return {4: "f32", 2: "f16"}.get(bpw)
FOOTER_BYTES = 8 + 3 * 8              # before its CRC
MAX_SOURCE = 1 << 20
# the model shapes' bounds (common/model_shape.h), which the C reader applies
MAX_LAYERS, MAX_D_MODEL, MAX_D_FF = 1 << 12, 1 << 20, 1 << 22


class TraceError(Exception):
    """A trace file that cannot be read or written; the message names it."""


class _Why(Exception):
    """A short reason from the set codec; the reader adds where it lies."""


SET_FORMS = ("list", "set", "numpy")  # what TraceReader's sets= takes
_np = None  # numpy once _numpy() has imported it


def _numpy():
    """The numpy module, imported on first use: the module itself needs
    only the standard library."""
    global _np
    if _np is None:
        try:
            import numpy
        except ImportError:
            raise TraceError('sets="numpy" needs numpy, which is not installed '
                             '(pip install numpy, or use sets="list" or "set")') from None
        if numpy.lib.NumpyVersion(numpy.__version__) < "1.17.0":  # unpackbits' bitorder
            raise TraceError('sets="numpy" needs numpy 1.17 or later, not %s' % numpy.__version__)
        _np = numpy
    return _np


# ---- libflashbed_trace: the C reader and writer, when found ----

LIB_NAME = "libflashbed_trace.so"
_ERR_LEN = 1024
_lib = None      # the loaded library, once library() found it
_lib_why = None  # why it is not used, once library() looked
_CAPI_VERSION = 2


def _lib_candidates():
    """Where the library may be: FLASHBED_TRACE_LIB (a path; "none" turns
    it off), beside this module (a packaged install), the build folders of
    the repository this module lies in."""
    env = os.environ.get("FLASHBED_TRACE_LIB")
    if env is not None:
        return [] if env in ("", "none") else [env]
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.join(here, LIB_NAME)] + [os.path.join(here, "..", d, LIB_NAME) for d in ("build", "build-release")]


def _declare(lib):
    """Argument and result types of what this module calls."""
    c = ctypes
    P, u32, u64, sz, s = c.c_void_p, c.c_uint32, c.c_uint64, c.c_size_t, c.c_char_p
    sig = {
        "fbt_capi_version": (c.c_int, []),
        "fbt_reader_open": (P, [s, s, sz]),
        "fbt_reader_header": (None, [P, c.POINTER(u64)]),
        "fbt_reader_source": (s, [P]),
        "fbt_reader_next": (c.c_int, [P, c.POINTER(u32), s, sz]),
        "fbt_reader_ids": (P, [P]),
        "fbt_reader_offsets": (P, [P]),
        "fbt_reader_check_bytes": (u64, [P]),
        "fbt_reader_close": (None, [P]),
        "fbt_writer_open": (P, [s, c.POINTER(u32), c.c_int, c.c_int, s, s, sz]),
        "trace_writer_begin_token": (c.c_int, [P, c.c_uint, s, sz]),
        "trace_writer_layer_channels": (c.c_int, [P, u32, P, u32, s, sz]),
        "trace_writer_layer": (c.c_int, [P, u32, P, u32, P, u32, s, sz]),
        "trace_writer_close": (c.c_int, [P, s, sz]),
        "trace_writer_abort": (None, [P]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args


def library():
    """libflashbed_trace (ctypes.CDLL) when found and of this module's
    interface, else None (why_pure() says why): the reader and writer then
    run in Python, to the same sets and bytes, slower."""
    global _lib, _lib_why
    if _lib is not None or _lib_why is not None:
        return _lib
    tried = []
    for path in _lib_candidates():
        if not os.path.exists(path):
            tried.append("%s: not there" % path)
            continue
        try:
            lib = ctypes.CDLL(os.path.abspath(path))
            _declare(lib)
            if lib.fbt_capi_version() != _CAPI_VERSION or array("I").itemsize != 4:
                tried.append("%s: another interface version" % path)
                continue
        except (OSError, AttributeError) as e:
            tried.append("%s: %s" % (path, e))
            continue
        _lib = lib
        return lib
    _lib_why = "; ".join(tried) or "FLASHBED_TRACE_LIB=none"
    return None


def why_pure():
    """None when the C library is used, else why not (the places tried)."""
    library()
    return _lib_why


def _err_text(buf):
    return buf.value.decode("utf-8", errors="replace")


def _u32_buffer(ids):
    """(keep-alive, address, count) of ids as contiguous uint32; raises
    OverflowError, TypeError or ValueError for what is no such id."""
    if hasattr(ids, "dtype"):  # a numpy array
        np = _numpy_soft()
        a = np.ascontiguousarray(ids)
        if a.dtype != np.uint32:
            if a.size and (a.dtype.kind not in "iu" or a.min() < 0 or a.max() > 0xFFFFFFFF):
                raise ValueError("not uint32 ids")
            a = a.astype(np.uint32)
        return a, a.ctypes.data if a.size else None, a.size
    if isinstance(ids, (set, frozenset)):
        ids = sorted(ids)
    a = array("I", ids)
    addr, n = a.buffer_info()
    return a, addr if n else None, n


def _numpy_present():
    try:
        _numpy()
    except TraceError:
        return False
    return True


def _numpy_soft():
    """numpy (present: the caller holds one of its arrays)."""
    import numpy
    return numpy


# ---- CRC-32C (Castagnoli), reflected polynomial 0x82F63B78 ----

def _crc_table():
    table = []
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc_table()


def crc32c(data, crc=0):
    """CRC-32C of data; pass a previous result as crc to continue it."""
    c = crc ^ 0xFFFFFFFF  # undo the previous final XOR: the register itself
    table = _CRC_TABLE
    for byte in data:
        c = (c >> 8) ^ table[(c ^ byte) & 0xFF]
    return c ^ 0xFFFFFFFF


def block_crc_start(token, layer):
    """Where a block's CRC starts: the CRC of u64 token and u32 layer, so a
    block found in the wrong place fails its check."""
    return crc32c(struct.pack("<QI", token, layer))


# ---- varints and set records ----

def _put_varint(out, v):
    while True:
        byte = v & 0x7F
        v >>= 7
        out.append(byte | (0x80 if v else 0))
        if not v:
            return


def _varint_from(byte_fn):
    """A varint read through byte_fn (-1 at the end); None when truncated
    or longer than 64 bits, as the C get_varint refuses."""
    v = 0
    for shift in range(0, 64, 7):
        c = byte_fn()
        if c < 0:
            return None
        v |= (c & 0x7F) << shift
        if not c & 0x80:
            return v
    return None


class _Mem:
    """Bytes in memory as a set record source (a version 2 block)."""

    def __init__(self, data):
        self.data, self.pos = data, 0

    def byte(self):
        if self.pos >= len(self.data):
            return -1
        self.pos += 1
        return self.data[self.pos - 1]

    def take(self, n):
        if n > len(self.data) - self.pos:
            return None
        self.pos += n
        return self.data[self.pos - n:self.pos]

    def left(self):
        return len(self.data) - self.pos


class _Stream:
    """A file read in chunks, counting what it consumed: version 1 records
    are not delimited, so they are decoded straight from it."""

    CHUNK = 1 << 16

    def __init__(self, f, pos, file_bytes):
        self.f, self.buf, self.off = f, b"", 0
        self.pos, self.file_bytes = pos, file_bytes

    def _fill(self, n):
        if len(self.buf) - self.off >= n:
            return True
        more = self.f.read(max(n - (len(self.buf) - self.off), self.CHUNK))
        self.buf = self.buf[self.off:] + more
        self.off = 0
        return len(self.buf) >= n

    def byte(self):
        if not self._fill(1):
            return -1
        self.off += 1
        self.pos += 1
        return self.buf[self.off - 1]

    def take(self, n):
        if not self._fill(n):
            return None
        self.off += n
        self.pos += n
        return self.buf[self.off - n:self.off]

    def left(self):
        return max(self.file_bytes - self.pos, 0)


# bit positions set in each byte value, for bitset records
_BYTE_BITS = [tuple(b for b in range(8) if v >> b & 1) for v in range(256)]
_RICE = {}


class _RiceWords(dict):
    """Code word (as a bit string in stream order) -> its gap + 1, filled
    as words are first seen: a trace repeats few distinct words."""

    def __init__(self, k):
        super().__init__()
        self.k = k

    def __missing__(self, word):
        k = self.k
        v = (len(word) - 1 - k) << k | (int(word[:-k - 1:-1], 2) if k else 0)
        self[word] = v + 1
        return v + 1


def _rice_tables(k):
    """The code word pattern and word table for Rice parameter k."""
    t = _RICE.get(k)
    if t is None:
        t = _RICE[k] = (re.compile("1*0" + ("[01]{%d}" % k if k else "")), _RiceWords(k))
    return t


def _decode_bitset(src, d_ff, count):
    nbytes = (d_ff + 7) // 8
    data = src.take(nbytes) if nbytes <= src.left() else None
    if data is None:
        raise _Why("truncated set record")
    ids = [i * 8 + b for i, v in enumerate(data) if v for b in _BYTE_BITS[v]]
    if ids and ids[-1] >= d_ff:
        raise _Why("neuron %d >= d_ff %d" % (next(i for i in ids if i >= d_ff), d_ff))
    if len(ids) != count:
        raise _Why("bitset holds %d neurons but the record says %d" % (len(ids), count))
    return ids


def _decode_bitset_np(src, d_ff, count):
    """_decode_bitset as a numpy.uint32 array, with the same checks."""
    np = _np
    nbytes = (d_ff + 7) // 8
    data = src.take(nbytes) if nbytes <= src.left() else None
    if data is None:
        raise _Why("truncated set record")
    # bit b of byte i is neuron i * 8 + b: little bit order
    ids = np.flatnonzero(np.unpackbits(np.frombuffer(data, np.uint8), bitorder="little"))
    if ids.size and ids[-1] >= d_ff:
        raise _Why("neuron %d >= d_ff %d" % (ids[np.argmax(ids >= d_ff)], d_ff))
    if ids.size != count:
        raise _Why("bitset holds %d neurons but the record says %d" % (ids.size, count))
    return ids.astype(np.uint32)


def _rice_steps(src, d_ff, count):
    """A Rice record's count code words from src, as an iterator of each
    word's gap + 1 (a neuron's id less the previous one's)."""
    k = src.byte()
    nbytes = _varint_from(src.byte) if k >= 0 else None
    if nbytes is None:
        raise _Why("truncated set record")
    if k > 24:
        raise _Why("bad Rice parameter %d" % k)
    if nbytes > d_ff * 8 + 64:
        raise _Why("set record of %d bytes is larger than any set of d_ff %d" % (nbytes, d_ff))
    data = src.take(nbytes) if nbytes <= src.left() else None
    if data is None:
        raise _Why("truncated set record")
    if count == 0:
        return iter(())
    # The bits in stream order (bit 0 of byte 0 first) as a string: each gap
    # is then one regex match (unary ones, a zero, k remainder bits lowest
    # first) and one dict lookup, both in C rather than a Python loop per
    # bit. A match can only fail at the end, so the matches are contiguous
    # from bit 0; what follows the count-th is padding.
    bits = format(int.from_bytes(data, "little"), "0%db" % (nbytes * 8))[::-1] if nbytes else ""
    pat, words = _rice_tables(k)
    codes = pat.findall(bits, 0)
    if len(codes) < count:
        raise _Why("set record ends inside neuron %d of %d" % (len(codes), count))
    return map(words.__getitem__, codes[:count])


def _decode_rice(src, d_ff, count):
    # id j = gaps 0..j plus j: a running sum of gap + 1 from -1
    ids = list(accumulate(_rice_steps(src, d_ff, count), initial=-1))[1:]
    if ids and ids[-1] >= d_ff:
        raise _Why("neuron %d >= d_ff %d" % (next(i for i in ids if i >= d_ff), d_ff))
    return ids


def _decode_rice_np(src, d_ff, count):
    """_decode_rice as a numpy.uint32 array, with the same checks."""
    np = _np
    # int64 holds any sum: a word of b bits is worth at most b * 2**24, and
    # a record holds at most (d_ff * 8 + 64) * 8 < 2**28 bits
    ids = np.fromiter(_rice_steps(src, d_ff, count), np.int64, count).cumsum() - 1
    if ids.size and ids[-1] >= d_ff:
        raise _Why("neuron %d >= d_ff %d" % (ids[np.argmax(ids >= d_ff)], d_ff))
    return ids.astype(np.uint32)


def decode_set(src, refs, d_ff, sets="list"):
    """One set record from src; refs[REF_*] are the sets it may be relative
    to (None: not available). Returns the ids in the form sets names (see
    SET_FORMS): a sorted list, a frozenset, or a sorted read-only
    numpy.uint32 array; refs are best given in the same form."""
    tag = src.byte()
    count = _varint_from(src.byte) if tag >= 0 else None
    if count is None:
        raise _Why("truncated set record")
    ref, code = tag >> 4, tag & 15
    if ref > REF_ACTIVE or code > CODE_RICE:
        raise _Why("unknown set encoding 0x%02x" % tag)
    if ref != REF_NONE and refs[ref] is None:
        raise _Why("record refers to a set it cannot have (%s)" % (
            "previous token at a sequence start" if ref == REF_PREV else "active set of an active record"))
    if count > d_ff:
        raise _Why("set of %d neurons is larger than d_ff %d" % (count, d_ff))
    if count // 8 > src.left():  # every neuron takes a bit at least
        raise _Why("set of %d neurons cannot fit in the %d bytes left (truncated)" % (count, src.left()))
    if sets == "numpy":
        np = _numpy()
        d = (_decode_bitset_np if code == CODE_BITSET else _decode_rice_np)(src, d_ff, count)
        if ref != REF_NONE:
            # both are sets (ascending ids, no repeats): sorted, the XOR
            d = np.setxor1d(d, refs[ref], assume_unique=True).astype(np.uint32, copy=False)
        d.flags.writeable = False  # the next record may be relative to it
        return d
    d = (_decode_bitset if code == CODE_BITSET else _decode_rice)(src, d_ff, count)
    if sets == "set":
        return frozenset(d) if ref == REF_NONE else frozenset(refs[ref]).symmetric_difference(d)
    if ref == REF_NONE:
        return d
    return sorted(set(d).symmetric_difference(refs[ref]))


def _gaps(ids):
    """Gap j of a sorted list: ids[0], then ids[j] - ids[j-1] - 1."""
    return list(map(_gap, ids, chain((-1,), ids)))


def _gap(b, a):
    return b - a - 1


def _rice_bits(gaps, k):
    return len(gaps) * (k + 1) + sum(map(operator.rshift, gaps, repeat(k, len(gaps))))


def _best_rice_k(gaps, bound):
    """(k, bits): the Rice parameter near log2(mean gap * ln 2), checked one
    either side, as set_codec.c's best_rice_k (the same doubles)."""
    n = len(gaps)
    mean_gap = (bound - n) / n + 1 if n else 1
    guess = 0
    while guess < 24 and float(1 << (guess + 1)) <= mean_gap * 0.69:
        guess += 1
    best, bits = guess, _rice_bits(gaps, guess)
    for k in (guess - 1, guess + 1):
        if 0 <= k <= 24:
            b = _rice_bits(gaps, k)
            if b < bits:
                best, bits = k, b
    return best, bits


def _put_rice(out, gaps, k, nbytes):
    if not gaps:
        return
    rem = "0%db" % k
    mask = (1 << k) - 1
    if k:
        bits = "".join("1" * (g >> k) + "0" + format(g & mask, rem)[::-1] for g in gaps)
    else:
        bits = "".join("1" * g + "0" for g in gaps)
    out += int(bits[::-1], 2).to_bytes(nbytes, "little")


def _put_bitset(out, ids, nbytes):
    b = bytearray(nbytes)
    for i in ids:
        b[i >> 3] |= 1 << (i & 7)
    out += b


def encode_set(out, ids, d_ff, refs=(None, None, None)):
    """Appends the record of ids (sorted, < d_ff) that set_codec.c's
    set_encode writes: each available reference (refs[REF_*], None: not
    available) and code tried in its order, the first smallest kept, so the
    bytes are the C writer's."""
    bitset_bytes = (d_ff + 7) // 8
    best = None
    for r in (REF_NONE, REF_PREV, REF_ACTIVE):
        if r == REF_NONE:
            d = ids
        elif refs[r] is None:
            continue
        else:
            d = sorted(set(ids).symmetric_difference(refs[r]))
        gaps = _gaps(d)
        k, bits = _best_rice_k(gaps, d_ff)
        rice = 1 + 5 + (bits + 7) // 8
        size = min(rice, bitset_bytes)
        if best is None or size < best[0]:
            best = (size, r, CODE_RICE if rice < bitset_bytes else CODE_BITSET, k, d, gaps, bits)
    _, ref, code, k, d, gaps, bits = best
    out.append(ref << 4 | code)
    _put_varint(out, len(d))
    if code == CODE_BITSET:
        _put_bitset(out, d, bitset_bytes)
    else:
        out.append(k)
        _put_varint(out, (bits + 7) // 8)
        _put_rice(out, gaps, k, (bits + 7) // 8)


# ---- the same encoder and CRC in numpy, for the Python writer where numpy is ----

def _np_gaps(d):
    return _np.diff(d, prepend=-1) - 1


def _encode_set_np(out, ids, d_ff, refs):
    """encode_set for int64 arrays (refs too, or None): the same bytes."""
    np = _np
    bitset_bytes = (d_ff + 7) // 8
    best = None
    for r in (REF_NONE, REF_PREV, REF_ACTIVE):
        if r == REF_NONE:
            d = ids
        elif refs[r] is None:
            continue
        else:
            d = np.setxor1d(ids, refs[r], assume_unique=True)
        gaps, n = _np_gaps(d), d.size
        bits_of = lambda k: n * (k + 1) + int((gaps >> k).sum())  # noqa: E731
        mean_gap = (d_ff - n) / n + 1 if n else 1
        guess = 0
        while guess < 24 and float(1 << (guess + 1)) <= mean_gap * 0.69:
            guess += 1
        k, bits = guess, bits_of(guess)
        for kk in (guess - 1, guess + 1):
            if 0 <= kk <= 24 and bits_of(kk) < bits:
                k, bits = kk, bits_of(kk)
        rice = 1 + 5 + (bits + 7) // 8
        size = min(rice, bitset_bytes)
        if best is None or size < best[0]:
            best = (size, r, CODE_RICE if rice < bitset_bytes else CODE_BITSET, k, d, gaps, bits)
    _, ref, code, k, d, gaps, bits = best
    out.append(ref << 4 | code)
    _put_varint(out, int(d.size))
    if code == CODE_BITSET:
        b = np.zeros(bitset_bytes * 8, np.uint8)
        b[d] = 1
        out += np.packbits(b, bitorder="little").tobytes()
        return
    nbytes = (bits + 7) // 8
    out.append(k)
    _put_varint(out, nbytes)
    if not d.size:
        return
    q = gaps >> k
    starts = np.cumsum(q + 1 + k) - (q + 1 + k)  # where each code word begins
    b = np.zeros(nbytes * 8, np.uint8)
    ends = np.cumsum(q)
    b[np.repeat(starts - (ends - q), q) + np.arange(int(ends[-1]))] = 1  # the unary ones
    for i in range(k):  # the remainder, lowest bit first
        b[starts + q + 1 + i] = (gaps >> i) & 1
    out += np.packbits(b, bitorder="little").tobytes()


_CRC_NP = None  # [distance, byte] -> a byte's share of a CRC register, numpy
_CRC_NP_MAX = 1 << 16  # the longest span the table covers (16 MB at most)


def _crc_np_table(n):
    """The table for spans of up to n bytes, grown as needed; None past
    _CRC_NP_MAX (the caller then takes crc32c)."""
    global _CRC_NP
    if n > _CRC_NP_MAX:
        return None
    np = _np
    if _CRC_NP is None or _CRC_NP.shape[0] < n:
        rows = max(n, 1024, 0 if _CRC_NP is None else 2 * _CRC_NP.shape[0])
        t0 = np.array(_CRC_TABLE, np.uint32)
        t = np.empty((rows, 256), np.uint32)
        t[0] = t0
        for d in range(1, rows):  # one zero byte more after it
            t[d] = (t[d - 1] >> 8) ^ t0[t[d - 1] & 0xFF]
        _CRC_NP = t
    return _CRC_NP


def _crc32c_np(data, crc=0):
    """crc32c of data by the table: the register's bytes folded into the
    first four, every byte's share at its distance from the end XORed."""
    n = len(data)
    t = _crc_np_table(n) if n >= 4 else None
    if t is None:
        return crc32c(data, crc)
    np = _np
    m = np.frombuffer(bytes(data), np.uint8).copy()
    m[:4] ^= np.frombuffer(struct.pack("<I", crc ^ 0xFFFFFFFF), np.uint8)
    return int(np.bitwise_xor.reduce(t[np.arange(n - 1, -1, -1), m])) ^ 0xFFFFFFFF


def _set_record_max(d_ff):
    return 1 + 5 + 1 + 10 + (d_ff + 7) // 8


# ---- header ----

class TraceMeta:
    """What a trace describes: its shape, its weights' type (a name of
    WTYPES), its units and where it came from. The unit kind and count
    follow the channel flag (traces/trace.h): rows of down with channel
    sets, else neuron bundles; d_ff per layer."""

    def __init__(self, n_layers, d_model, d_ff, dtype="f16", ffn_kind=FFN_RELU,
                 has_predicted=False, source="{}", has_channels=False):
        self.n_layers, self.d_model, self.d_ff = n_layers, d_model, d_ff
        self.dtype, self.ffn_kind = dtype, ffn_kind
        self.has_predicted, self.source = bool(has_predicted), source
        self.has_channels = bool(has_channels)
        self.unit_kind = UNIT_DOWN_ROW if self.has_channels else UNIT_NEURON_BUNDLE
        self.units = d_ff

    # bytes of one weight, from the type (the header no longer stores it)
    bytes_per_weight = property(lambda self: WTYPES[self.dtype][1] if self.dtype in WTYPES else 0)
    unit_name = property(lambda self: UNIT_NAMES.get(self.unit_kind, "?"))

    def check(self):
        """None, or why a trace cannot hold this meta (trace_meta_check)."""
        if self.dtype not in WTYPES:
            return "weight type %r is not in the table (%s)" % (self.dtype, ", ".join(WTYPES))
        want = UNIT_DOWN_ROW if self.has_channels else UNIT_NEURON_BUNDLE
        if self.unit_kind != want:
            return 'unit kind "%s" in a trace %s channel sets (it records "%s")' % (
                self.unit_name, "with" if self.has_channels else "without", UNIT_NAMES[want])
        if self.units != self.d_ff:
            return '%d units per layer of kind "%s": a trace records d_ff (%d)' % (self.units, self.unit_name, self.d_ff)
        return None

    def flags(self):
        return (FLAG_PREDICTED if self.has_predicted else 0) | (FLAG_CHANNELS if self.has_channels else 0)

    def block_max(self):
        return ((2 if self.has_predicted else 1) * _set_record_max(self.d_ff)
                + (_set_record_max(self.d_model) if self.has_channels else 0))


def header_bytes(meta, n_tokens):
    """The version 3 header with its CRC."""
    src = meta.source.encode()
    b = MAGIC + struct.pack("<9IQI", VERSION, meta.n_layers, meta.d_model, meta.d_ff,
                            WTYPES[meta.dtype][0], meta.ffn_kind, meta.flags(), meta.unit_kind, meta.units,
                            n_tokens, len(src)) + src
    return b + struct.pack("<I", crc32c(b))


def _read_header(f):
    """(meta, n_tokens, version) from f, checked as trace_header_get does;
    raises _Why with a reason about the header."""
    head = f.read(8)
    if head != MAGIC:
        raise _Why("truncated header" if head and len(head) < 8 and MAGIC.startswith(head)
                   else "not a flashbed trace (wrong magic number in the header)")
    rest = f.read(4)
    if len(rest) != 4:
        raise _Why("truncated header")
    version, = struct.unpack("<I", rest)
    if version > VERSION:
        raise _Why("header says trace format version %d, newer than this reader reads (%d)" % (version, VERSION))
    if version == 0:
        raise _Why("header says trace format version 0, which does not exist")
    typed = version >= VERSION_TYPED
    fixed_len = HEADER_FIXED if typed else HEADER_FIXED_V2
    rest = f.read(fixed_len - 12)
    if len(rest) != fixed_len - 12:
        raise _Why("truncated header")
    fixed = head + struct.pack("<I", version) + rest
    if typed:
        n_layers, d_model, d_ff, wt, kind, flags, ukind, units, n_tokens, slen = struct.unpack("<8IQI", rest)
    else:
        n_layers, d_model, d_ff, wt, kind, flags, n_tokens, slen = struct.unpack("<6IQI", rest)
    if slen > MAX_SOURCE:
        raise _Why("header's source description of %d bytes is implausible" % slen)
    source = f.read(slen)
    if len(source) != slen:
        raise _Why("truncated header")
    # the checksum first: a damaged field then reads as damage, not as a
    # strange shape
    if version >= VERSION_CHECKED:
        stored = f.read(4)
        if len(stored) != 4:
            raise _Why("truncated header (no checksum)")
        want, = struct.unpack("<I", stored)
        got = crc32c(fixed + source)
        if got != want:
            raise _Why("header checksum mismatch (stored 0x%08x, computed 0x%08x): the header is damaged"
                       % (want, got))
    if (n_layers == 0 or n_layers > MAX_LAYERS or d_ff == 0 or d_ff > MAX_D_FF or n_layers * d_ff > 1 << 26
            or d_model == 0 or d_model > MAX_D_MODEL):
        raise _Why("implausible shape in header (layers %d, d_model %d, d_ff %d)" % (n_layers, d_model, d_ff))
    dtype = dtype_of_code(wt) if typed else dtype_of_bytes(wt)
    if dtype is None and typed:
        raise _Why("unknown weight type code %d in header (known: %s)" % (wt, ", ".join(WTYPES)))
    if dtype is None:
        raise _Why("%d bytes per weight in a version %d header: only 4 (f32) and 2 (f16) name a weight type"
                   % (wt, version))
    if kind > FFN_GLU:
        raise _Why("unknown FFN kind %d in header" % kind)
    if flags & ~(FLAG_PREDICTED | FLAG_CHANNELS):
        raise _Why("unknown header flags 0x%x" % flags)
    if flags & FLAG_CHANNELS and version < VERSION_CHECKED:
        raise _Why("channel sets flagged in a version %d header (they came with version 2)" % version)
    text = source.decode("utf-8", errors="replace")
    meta = TraceMeta(n_layers, d_model, d_ff, dtype, kind, flags & FLAG_PREDICTED, text, flags & FLAG_CHANNELS)
    if typed:
        if ukind not in UNIT_NAMES:
            raise _Why("unknown unit kind code %d in header" % ukind)
        meta.unit_kind, meta.units = ukind, units
    why = meta.check()
    if why:
        raise _Why(why)
    return meta, n_tokens, version


# ---- reader ----

class Token:
    """One token: index, flags (TOKEN_*), and per layer the active, the
    predicted and the kept input channels' sets (None without them), in the
    reader's form: sorted lists of ints, frozensets, or sorted read-only
    numpy.uint32 arrays."""

    __slots__ = ("index", "flags", "active", "predicted", "channels")

    def __init__(self, index, flags, active, predicted, channels=None):
        self.index, self.flags, self.active, self.predicted = index, flags, active, predicted
        self.channels = channels


class TraceReader:
    """Streams a trace token by token; use as a context manager, iterate
    for Token objects. Header fields are attributes. sets picks the form of
    every set (SET_FORMS): "list" (sorted lists of ints), "set"
    (frozensets) or "numpy" (sorted read-only numpy.uint32 arrays; numpy
    is imported here, and TraceError says so when it is not installed)."""

    def __init__(self, path, sets="list"):
        self.path = str(path)
        if sets not in SET_FORMS:
            raise ValueError("sets must be one of %s, not %r" % (", ".join(map(repr, SET_FORMS)), sets))
        self.sets = sets
        self._empty = []
        if sets == "set":
            self._empty = frozenset()
        elif sets == "numpy":
            self._empty = _numpy().zeros(0, _np.uint32)
            self._empty.flags.writeable = False
        self.tokens_read = self.active_events = self.pred_events = 0
        self._c = self._f = None
        lib = library()
        if lib is not None:
            self._open_c(lib)
            return
        if os.path.isdir(self.path):
            raise TraceError("%s: is a directory, not a trace file" % self.path)
        try:
            self._f = open(self.path, "rb")
        except OSError as e:
            raise TraceError("cannot read trace %s: %s" % (self.path, e.strerror)) from None
        try:
            self.meta, self.n_tokens, self.version = _read_header(self._f)
            self.file_bytes = os.fstat(self._f.fileno()).st_size
        except _Why as e:
            self._f.close()
            raise TraceError("%s: %s" % (self.path, e)) from None
        self._src = _Stream(self._f, self._f.tell(), self.file_bytes)
        self.tokens_read = self.active_events = self.pred_events = 0
        self.check_bytes = 4 if self.version >= VERSION_CHECKED else 0

    # header fields as attributes
    n_layers = property(lambda self: self.meta.n_layers)
    d_model = property(lambda self: self.meta.d_model)
    d_ff = property(lambda self: self.meta.d_ff)
    dtype = property(lambda self: self.meta.dtype)
    bytes_per_weight = property(lambda self: self.meta.bytes_per_weight)
    unit_kind = property(lambda self: self.meta.unit_kind)
    units = property(lambda self: self.meta.units)
    ffn_kind = property(lambda self: self.meta.ffn_kind)
    has_predicted = property(lambda self: self.meta.has_predicted)
    has_channels = property(lambda self: self.meta.has_channels)
    source = property(lambda self: self.meta.source)

    def _open_c(self, lib):
        """The header through libflashbed_trace's reader."""
        self._lib, self._errbuf = lib, ctypes.create_string_buffer(_ERR_LEN)
        h = lib.fbt_reader_open(os.fsencode(self.path), self._errbuf, _ERR_LEN)
        if not h:
            raise TraceError(_err_text(self._errbuf))
        self._c = h
        v = (ctypes.c_uint64 * 11)()
        lib.fbt_reader_header(h, v)
        version, n_layers, d_model, d_ff, wt, kind, has_pred, has_chan, n_tokens, ukind, units = v
        source = lib.fbt_reader_source(h).decode("utf-8", errors="replace")
        self.meta = TraceMeta(n_layers, d_model, d_ff, dtype_of_code(wt), kind, has_pred, source, has_chan)
        self.meta.unit_kind, self.meta.units = ukind, units
        self.n_tokens, self.version = n_tokens, version
        self.file_bytes = os.stat(self.path).st_size
        self.check_bytes = lib.fbt_reader_check_bytes(h)

    def close(self):
        if self._c:
            self._lib.fbt_reader_close(self._c)
            self._c = None
        if self._f is not None:
            self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_c", None):
            self.close()

    def _iter_c(self):
        """Tokens through libflashbed_trace: one call per token, its sets
        copied out of one array into the form asked for."""
        lib, h, err = self._lib, self._c, self._errbuf
        L = self.n_layers
        slots = 1 + bool(self.has_predicted) + bool(self.has_channels)
        off_view = (ctypes.c_uint64 * (slots * L + 1)).from_address(lib.fbt_reader_offsets(h))
        bounds = list(range(slots * L + 1))
        flags = ctypes.c_uint32()
        np = _np if self.sets == "numpy" else None
        while True:
            if not self._c:
                raise self._err("read after close")
            rc = lib.fbt_reader_next(h, ctypes.byref(flags), err, _ERR_LEN)
            if rc == 0:
                self.check_bytes = lib.fbt_reader_check_bytes(h)
                return
            if rc < 0:
                raise TraceError(_err_text(err))
            off = off_view[:]
            raw = ctypes.string_at(lib.fbt_reader_ids(h), off[-1] * 4) if off[-1] else b""
            if np is not None:
                ids = np.frombuffer(raw, np.uint32)  # read-only, as the numpy form's sets are
            else:
                a = array("I")
                a.frombytes(raw)
                ids = a.tolist()
            sets = [ids[off[i]:off[i + 1]] for i in bounds[:-1]]
            if self.sets == "set":
                sets = [frozenset(x) for x in sets]
            act = sets[:L]
            pred = sets[L:2 * L] if self.has_predicted else None
            chan = sets[(slots - 1) * L:] if self.has_channels else None
            self.active_events += off[L]
            if self.has_predicted:
                self.pred_events += off[2 * L] - off[L]
            tok = Token(self.tokens_read, flags.value, act, pred, chan)
            self.tokens_read += 1
            yield tok

    def _err(self, what):
        return TraceError("%s: %s" % (self.path, what))

    def __iter__(self):
        """Tokens in order; once all are read, the footer is checked."""
        if self._c:
            yield from self._iter_c()
            return
        L = self.n_layers
        prev = [[self._empty] * L for _ in range(3)]
        while True:
            c = self._src.byte()
            if c < 0:
                raise self._err("truncated after token %d of %d (no end marker)" % (self.tokens_read, self.n_tokens))
            if c == END_MAGIC[0]:
                self._read_footer()
                return
            self._check_token_start(c)
            flags = self._src.byte()
            if flags < 0:
                raise self._err("token %d: truncated" % self.tokens_read)
            cur = [[None] * L for _ in range(3)]
            for l in range(L):
                src = self._open_block(l, c, flags)
                # layer 0's CRC covers the flags: checked, they can be looked at
                if l == 0 and flags & ~(TOKEN_GENERATED | TOKEN_SEQ_START):
                    raise self._err("token %d: unknown token flags 0x%02x" % (self.tokens_read, flags))
                if self.tokens_read == 0:
                    flags |= TOKEN_SEQ_START
                self._decode_layer(l, flags & TOKEN_SEQ_START, src, prev, cur)
            act, pred = cur[0], cur[1] if self.has_predicted else None
            chan = cur[2] if self.has_channels else None
            if self.sets == "list":  # the caller's own lists: the next token decodes against cur's
                act, pred = [list(x) for x in act], pred and [list(x) for x in pred]
                chan = chan and [list(x) for x in chan]
            tok = Token(self.tokens_read, flags, act, pred, chan)
            self.tokens_read += 1
            prev = cur
            yield tok

    def _check_token_start(self, c):
        if self.tokens_read >= self.n_tokens:
            if c == TOKEN_MARK:
                raise self._err("body holds more tokens than the header's %d" % self.n_tokens)
            raise self._err("after token %d, the last: expected the end marker, found byte 0x%02x"
                            % (self.tokens_read - 1, c))
        if c != TOKEN_MARK:
            raise self._err("token %d: bad token marker 0x%02x" % (self.tokens_read, c))

    def _open_block(self, l, mark, flags):
        """Where layer l's sets come from: the file itself (version 1), or
        the block read whole with its length and CRC checked (version 2)."""
        if self.version < VERSION_CHECKED:
            return self._src
        s, t = self._src, self.tokens_read
        raw = bytearray()

        def byte():
            c = s.byte()
            if c >= 0:
                raw.append(c)
            return c
        n = _varint_from(byte)
        if n is None:
            raise self._err("token %d layer %d: truncated or damaged block length" % (t, l))
        if n > self.meta.block_max():
            raise self._err("token %d layer %d: block of %d bytes is longer than any (%d): the file is damaged"
                            % (t, l, n, self.meta.block_max()))
        if n + 4 > s.left():
            raise self._err("token %d layer %d: block of %d bytes runs past the end of the file "
                            "(truncated or damaged)" % (t, l, n))
        data, stored = s.take(n), s.take(4)
        if data is None or stored is None:
            raise self._err("token %d layer %d: truncated" % (t, l))
        crc = block_crc_start(t, l)
        if l == 0:
            crc = crc32c(bytes((mark, flags)), crc)
        crc = crc32c(data, crc32c(raw, crc))
        want, = struct.unpack("<I", stored)
        if crc != want:
            raise self._err("token %d layer %d: checksum mismatch (stored 0x%08x, computed 0x%08x): "
                            "the file is damaged" % (t, l, want, crc))
        self.check_bytes += len(raw) + 4
        return _Mem(data)

    def _decode_layer(self, l, seq_start, src, prev, cur):
        kinds = [0] + ([1] if self.has_predicted else []) + ([2] if self.has_channels else [])
        for k in kinds:
            refs = (None, None if seq_start else prev[k][l], cur[0][l] if k == 1 else None)
            try:
                ids = decode_set(src, refs, self.d_model if k == 2 else self.d_ff, self.sets)
            except _Why as e:
                raise self._err("token %d layer %d (%s set): %s"
                                % (self.tokens_read, l, ("active", "predicted", "channel")[k], e)) from None
            cur[k][l] = ids
            if k == 1:
                self.pred_events += len(ids)
            elif k == 0:
                self.active_events += len(ids)
        if isinstance(src, _Mem) and src.left():
            raise self._err("token %d layer %d: %d bytes left over after its sets" % (self.tokens_read, l, src.left()))

    def _read_footer(self):
        checked = self.version >= VERSION_CHECKED
        rest = self._src.take(7)
        if rest is None or bytes([END_MAGIC[0]]) + rest != END_MAGIC:
            raise self._err("after %d tokens: expected a token or the end marker, found garbage" % self.tokens_read)
        body = self._src.take(FOOTER_BYTES - 8 + (4 if checked else 0))
        if body is None:
            raise self._err("truncated end marker")
        foot = END_MAGIC + body
        if checked:
            want, = struct.unpack_from("<I", foot, FOOTER_BYTES)
            got = crc32c(foot[:FOOTER_BYTES])
            if got != want:
                raise self._err("end marker checksum mismatch (stored 0x%08x, computed 0x%08x): the file is damaged"
                                % (want, got))
            self.check_bytes += 4
        n, na, np_ = struct.unpack_from("<3Q", foot, 8)
        if n != self.n_tokens or n != self.tokens_read:
            raise self._err("header says %d tokens, end marker %d, body holds %d" % (self.n_tokens, n, self.tokens_read))
        if na != self.active_events or np_ != self.pred_events:
            raise self._err("end marker counts %d active and %d predicted neurons, body holds %d and %d"
                            % (na, np_, self.active_events, self.pred_events))
        if self._src.byte() >= 0:
            raise self._err("trailing bytes after the end marker")


def read_tokens(path, sets="list"):
    """Every token of the trace at path, streamed (a generator); sets as
    TraceReader takes it."""
    with TraceReader(path, sets) as r:
        yield from r


# ---- writer ----

def _tmp_name(path):
    """The temporary beside path, named as common/atomic_file.c names it."""
    head, tail = os.path.split(path)
    stem, dot, ext = tail.rpartition(".")
    if dot and stem:
        return os.path.join(head, "%s.tmp.%d.%s" % (stem, os.getpid(), ext))
    return "%s.tmp.%d" % (path, os.getpid())


def _as_id_list(ids):
    """A set in any of the reader's forms as the writer takes it: a list of
    Python ints (numpy's would overflow the bitset's shifts)."""
    if isinstance(ids, (set, frozenset)):
        return sorted(ids)
    if hasattr(ids, "tolist"):  # a numpy array
        return ids.tolist()
    return ids


class TraceWriter:
    """Writes a version 3 trace to a temporary file, renamed to path by
    close(); abort() (or an exception inside a with block) removes it.
    The bytes are the C writer's: through libflashbed_trace when it is
    found (see library()), else by this module's port of its encoder."""

    def __init__(self, path, meta):
        self.path = str(path)
        if meta.n_layers <= 0 or meta.d_ff <= 0 or meta.d_model <= 0:
            raise TraceError("%s: trace shape must have layers, d_model and d_ff" % self.path)
        if meta.check():
            raise TraceError("%s: %s" % (self.path, meta.check()))
        if len(meta.source.encode()) > MAX_SOURCE:
            raise TraceError("%s: source description exceeds the format's %d bytes" % (self.path, MAX_SOURCE))
        self.meta = meta
        self.tmp = _tmp_name(self.path)
        self.n_tokens = self.active_events = self.pred_events = 0
        self._next_layer = None  # None: no token begun
        lib = library()
        self._engine = _CWriter(self, lib) if lib is not None else _PyWriter(self)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def _err(self, what):
        return TraceError("%s: %s" % (self.path, what))

    def begin_token(self, flags=0):
        """Starts the next token; the first of a file starts a sequence."""
        self._check_token_done()
        if flags & ~(TOKEN_GENERATED | TOKEN_SEQ_START):
            raise self._err("unknown token flags 0x%x" % flags)
        if self.n_tokens == 0:
            flags |= TOKEN_SEQ_START
        self._engine.begin_token(flags)
        self._next_layer = 0
        self.n_tokens += 1

    def _check_ids(self, what, l, ids, unit="neuron", bound_name="d_ff"):
        last, bound = -1, self.meta.d_model if bound_name == "d_model" else self.meta.d_ff
        for i in ids:
            if not isinstance(i, int):
                try:
                    i = operator.index(i)  # numpy's integers, not floats
                except TypeError:
                    raise self._err("token %d layer %d: %s %s %r is not an integer"
                                    % (self.n_tokens - 1, l, what, unit, i)) from None
            if not 0 <= i < bound:
                raise self._err("token %d layer %d: %s %s %d outside 0..%s %d"
                                % (self.n_tokens - 1, l, what, unit, i, bound_name, bound))
            if i <= last:
                raise self._err("token %d layer %d: %s %ss not strictly ascending (%d after %d)"
                                % (self.n_tokens - 1, l, what, unit, i, last))
            last = i

    def layer(self, active, predicted=None, channels=None):
        """Records the next layer of the current token (layers in order).
        The sets are sorted lists of ints, or any form the reader gives
        (frozensets, numpy arrays); channels (ids < d_model) is required in
        a trace with channel sets and refused in one without."""
        if self._next_layer is None:
            raise self._err("layer written before begin_token")
        l = self._next_layer
        if not self.meta.has_channels and channels is not None:
            raise self._err("channel set given for a trace without channel sets")
        if self.meta.has_channels and channels is None:
            raise self._err("token %d layer %d: no channel set" % (self.n_tokens - 1, l))
        if self.meta.has_predicted and predicted is None:
            predicted = ()
        n_act, n_pred = self._engine.layer(l, active, predicted if self.meta.has_predicted else None, channels)
        self.active_events += n_act
        self.pred_events += n_pred
        self._next_layer += 1

    def _check_token_done(self):
        if self._next_layer is not None and self._next_layer != self.meta.n_layers:
            raise self._err("token %d got %d of %d layers" % (self.n_tokens - 1, self._next_layer, self.meta.n_layers))

    def close(self):
        """Footer, header with the token count, then rename into place."""
        try:
            self._check_token_done()
        except TraceError:
            self.abort()
            raise
        self._engine.close()

    def abort(self):
        """Drops the temporary; nothing appears at path."""
        engine = getattr(self, "_engine", None)
        if engine is not None:
            engine.abort()


class _PyWriter:
    """The writer in Python: set_codec.c's encoder ported, each set encoded
    against the previous token's set of its kind and layer (none at a
    sequence start) and, for a predicted set, the layer's active set."""

    def __init__(self, w):
        self.w, self.meta = w, w.meta
        self._prev = [[None] * self.meta.n_layers for _ in range(3)]
        self._vec = _numpy_present()  # numpy's encoder and CRC: the same bytes, faster
        self._head, self._seq_start = b"", False
        try:
            self._f = open(w.tmp, "wb")
            self._f.write(header_bytes(self.meta, 0))  # rewritten with n_tokens at close
        except OSError as e:
            self.abort()
            raise TraceError("cannot write %s: %s" % (w.tmp, e.strerror)) from None

    def begin_token(self, flags):
        self._head = bytes((TOKEN_MARK, flags))
        self._seq_start = bool(flags & TOKEN_SEQ_START)
        self._f.write(self._head)

    def _set(self, blk, kind, l, ids, active=None):
        bound_name = "d_model" if kind == 2 else "d_ff"
        bound = self.meta.d_model if kind == 2 else self.meta.d_ff
        checked = self._vec_ids(ids, bound) if self._vec else None
        if checked is None:  # no numpy, or ids it finds wrong: the check that names the id
            ids = _as_id_list(ids)
            self.w._check_ids(("active", "predicted", "kept")[kind], l, ids, "channel" if kind == 2 else "neuron",
                              bound_name)
            if self._vec:
                checked = _np.array(ids, _np.int64)
        refs = (None, None if self._seq_start else self._prev[kind][l], active)
        if checked is not None:
            _encode_set_np(blk, checked, bound, refs)
            ids = checked
        else:
            encode_set(blk, ids, bound, refs)
        self._prev[kind][l] = ids
        return ids

    @staticmethod
    def _vec_ids(ids, bound):
        """ids as a checked int64 array, or None when they are not a set
        of the trace (or not numbers numpy takes)."""
        np = _np
        if isinstance(ids, (set, frozenset)):
            ids = sorted(ids)
        try:
            a = np.asarray(ids)
            if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
                return None
            a = a.astype(np.int64)
        except (OverflowError, TypeError, ValueError):
            return None
        if a.size and (a[0] < 0 or a[-1] >= bound or (a.size > 1 and (np.diff(a) <= 0).any())):
            return None
        return a

    def layer(self, l, active, predicted, channels):
        t = self.w.n_tokens - 1
        blk = bytearray()
        chan = bytearray()
        if channels is not None:  # checked first, as the C writer takes them first
            self._set(chan, 2, l, channels)
        active = self._set(blk, 0, l, active)
        n_pred = len(self._set(blk, 1, l, predicted, active)) if predicted is not None else 0
        blk += chan
        rec = bytearray()
        _put_varint(rec, len(blk))
        rec += blk
        crc = block_crc_start(t, l)
        if l == 0:
            crc = crc32c(self._head, crc)
        rec += struct.pack("<I", (_crc32c_np if self._vec else crc32c)(rec, crc))
        self._f.write(rec)
        return len(active), n_pred

    def close(self):
        w = self.w
        try:
            foot = END_MAGIC + struct.pack("<3Q", w.n_tokens, w.active_events, w.pred_events)
            self._f.write(foot + struct.pack("<I", crc32c(foot)))
            self._f.seek(0)
            self._f.write(header_bytes(self.meta, w.n_tokens))
            self._f.close()
            os.replace(w.tmp, w.path)
        except OSError as e:
            self.abort()
            raise w._err("write failed: %s" % e.strerror) from None

    def abort(self):
        f = getattr(self, "_f", None)
        if f is not None:
            f.close()
        try:
            os.remove(self.w.tmp)
        except OSError:
            pass


class _CWriter:
    """The writer through libflashbed_trace: trace_writer_* themselves."""

    def __init__(self, w, lib):
        self.w, self.lib, self.meta = w, lib, w.meta
        self._err = ctypes.create_string_buffer(_ERR_LEN)
        m = self.meta
        shape = (ctypes.c_uint32 * 7)(m.n_layers, m.d_model, m.d_ff, WTYPES[m.dtype][0], m.ffn_kind, m.unit_kind,
                                      m.units)
        self._h = lib.fbt_writer_open(os.fsencode(w.path), shape, int(m.has_predicted), int(m.has_channels),
                                      m.source.encode(), self._err, _ERR_LEN)
        if not self._h:
            raise TraceError(_err_text(self._err))

    def _check(self, rc):
        if rc != 0:
            raise TraceError(_err_text(self._err))

    def begin_token(self, flags):
        self._check(self.lib.trace_writer_begin_token(self._h, flags, self._err, _ERR_LEN))

    def _ids(self, kind, l, ids):
        """(keep-alive, address, count) of ids as uint32; a value outside
        the bound is refused here in the Python writer's words."""
        try:
            buf, addr, n = _u32_buffer(ids)
        except (OverflowError, TypeError, ValueError):
            self.w._check_ids(("active", "predicted", "kept")[kind], l, _as_id_list(ids),
                              "channel" if kind == 2 else "neuron", "d_model" if kind == 2 else "d_ff")
            raise self.w._err("token %d layer %d: %s set is not a list of integers"
                              % (self.w.n_tokens - 1, l, ("active", "predicted", "channel")[kind])) from None
        return buf, addr, n

    def layer(self, l, active, predicted, channels):
        lib, h = self.lib, self._h
        if channels is not None:
            cb, ca, cn = self._ids(2, l, channels)
            self._check(lib.trace_writer_layer_channels(h, l, ca, cn, self._err, _ERR_LEN))
        ab, aa, an = self._ids(0, l, active)
        pb, pa, pn = self._ids(1, l, predicted) if predicted is not None else (None, None, 0)
        self._check(lib.trace_writer_layer(h, l, aa, an, pa, pn, self._err, _ERR_LEN))
        return an, pn

    def close(self):
        h, self._h = self._h, None
        if h is not None:
            self._check(self.lib.trace_writer_close(h, self._err, _ERR_LEN))

    def abort(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            self.lib.trace_writer_abort(h)


def copy_trace(src_path, dst_path, active_only=False):
    """Rewrites a trace through the reader and writer (as version 3);
    active_only drops the predicted sets (a trace of active sets alone).
    With the C library and numpy, the sets go from reader to writer as
    numpy views, without an int per neuron."""
    form = "numpy" if library() is not None and _numpy_present() else "list"
    with TraceReader(src_path, form) as r:
        meta = r.meta
        if active_only:
            meta = TraceMeta(r.n_layers, r.d_model, r.d_ff, r.dtype, r.ffn_kind, False, r.source,
                             r.has_channels)
        w = TraceWriter(dst_path, meta)
        try:
            for tok in r:
                w.begin_token(tok.flags)
                for l in range(r.n_layers):
                    keep = tok.predicted is not None and not active_only
                    w.layer(tok.active[l], tok.predicted[l] if keep else None,
                            tok.channels[l] if tok.channels is not None else None)
        except BaseException:
            w.abort()
            raise
        w.close()


# ---- statistics and command line ----

def trace_info(path):
    """Header fields and the counts flashbed trace info derives its
    densities from: neurons per layer and in all, tokens and sequences."""
    # the C library hands every set as one array: numpy's views of it count
    # without making an int per neuron
    form = "numpy" if library() is not None and _numpy_present() else "list"
    with TraceReader(path, form) as r:
        L = r.n_layers
        act, pred, chan = [0] * L, [0] * L, [0] * L
        seqs = generated = 0
        for tok in r:
            seqs += bool(tok.flags & TOKEN_SEQ_START)
            generated += bool(tok.flags & TOKEN_GENERATED)
            for l in range(L):
                act[l] += len(tok.active[l])
                if tok.predicted is not None:
                    pred[l] += len(tok.predicted[l])
                if tok.channels is not None:
                    chan[l] += len(tok.channels[l])
        return {
            "file": r.path, "version": r.version, "checked": r.version >= VERSION_CHECKED,
            "file_bytes": r.file_bytes, "check_bytes": r.check_bytes,
            "n_layers": L, "layers": L, "d_model": r.d_model, "d_ff": r.d_ff,
            "dtype": r.dtype, "unit_kind": r.meta.unit_name, "units_per_layer": r.units,
            "bytes_per_weight": r.bytes_per_weight, "ffn_kind": "glu" if r.ffn_kind == FFN_GLU else "relu",
            "has_predicted": r.has_predicted, "source": r.source,
            "n_tokens": r.n_tokens, "tokens": r.tokens_read, "sequences": seqs,
            "prompt_tokens": r.tokens_read - generated, "generated_tokens": generated,
            "active_neurons": sum(act), "predicted_neurons": sum(pred),
            "active_per_layer": act, "predicted_per_layer": pred if r.has_predicted else None,
            "has_channels": r.has_channels, "kept_channels": sum(chan),
            "channels_per_layer": chan if r.has_channels else None,
            "mean_density_channels": (sum(chan) / (r.tokens_read * r.d_model * L)
                                      if r.has_channels and r.tokens_read else None),
        }


def _print_info(info):
    print("trace %s" % info["file"])
    print("  format version %d (%s), %d bytes" % (info["version"], "checked" if info["checked"] else "unchecked",
                                                   info["file_bytes"]))
    print("  shape: %d layers, d_model %d, d_ff %d, %s weights, %s FFN"
          % (info["n_layers"], info["d_model"], info["d_ff"], info["dtype"], info["ffn_kind"]))
    print("  units: %s, %d per layer" % (info["unit_kind"], info["units_per_layer"]))
    print("  tokens: %d (%d prompt, %d generated) in %d sequence(s)"
          % (info["tokens"], info["prompt_tokens"], info["generated_tokens"], info["sequences"]))
    print("  neurons: %d active, %s predicted" % (info["active_neurons"],
                                                  info["predicted_neurons"] if info["has_predicted"] else "no"))
    if info["has_channels"]:
        print("  channel sets: %d input channels kept (%.2f%% of d_model on average)"
              % (info["kept_channels"], 100 * (info["mean_density_channels"] or 0)))
    print("  source: %s" % info["source"])


def _dump(path):
    """Every set as 'token flags layer a|p|c ids...' (c: kept channels), the layout of
    tests/data/trace_v1.sets."""
    out = sys.stdout
    for tok in read_tokens(path):
        for l in range(len(tok.active)):
            out.write(" ".join(map(str, [tok.index, tok.flags, l, "a"] + tok.active[l])) + "\n")
            if tok.predicted is not None:
                out.write(" ".join(map(str, [tok.index, tok.flags, l, "p"] + tok.predicted[l])) + "\n")
            if tok.channels is not None:
                out.write(" ".join(map(str, [tok.index, tok.flags, l, "c"] + tok.channels[l])) + "\n")


USAGE = """usage: flashbed_trace.py info TRACE [--json]
       flashbed_trace.py copy [--active-only] IN OUT
       flashbed_trace.py dump TRACE"""


def main(argv):
    args = argv[1:]
    try:
        if len(args) in (2, 3) and args[0] == "info" and args[2:] in ([], ["--json"]):
            info = trace_info(args[1])
            if args[2:]:
                print(json.dumps(info, indent=1))
            else:
                _print_info(info)
        elif args[:1] == ["copy"] and len(args) in (3, 4) and args[1:-2] in ([], ["--active-only"]):
            copy_trace(args[-2], args[-1], active_only=len(args) == 4)
            print("flashbed_trace: wrote %s" % args[-1], file=sys.stderr)
        elif len(args) == 2 and args[0] == "dump":
            _dump(args[1])
        else:
            print(USAGE, file=sys.stderr)
            return 2
    except TraceError as e:
        print("flashbed_trace: error: %s" % e, file=sys.stderr)
        return 1
    except BrokenPipeError:
        return quiet_broken_pipe()
    return 0


def quiet_broken_pipe():
    """After stdout's reader went away (`... dump T | head`): no traceback,
    and none at exit when Python flushes stdout; the status a C program
    killed by SIGPIPE gives (128 + 13)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    return 141


def cli():
    """The installed command (pip install ./python)."""
    sys.exit(main(sys.argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
