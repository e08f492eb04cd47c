"""Reading and writing ``.npz`` files safely: atomic writes, and reads that never unpickle
and check every member's declared size before allocating it."""
from __future__ import annotations

import io
import json
import os
import struct
import zipfile
import zlib
from typing import NamedTuple

import numpy as np

from .atomic import write_atomic
from .files import MAX_DECODED_BYTES, decoded_limit, fspath, open_regular, read_into, shorten

__all__ = ["save_npz_atomic", "load_npz", "json_entry", "MAX_NPZ_BYTES", "MAX_NPZ_MEMBERS",
           "MAX_HEADER_BYTES", "MAX_TEXT_CHARS", "MEMBER_KINDS"]


#: The most bytes the arrays of one ``.npz`` may declare, all together (checked against each
#: member's .npy header before anything is allocated; see ``vit.files.decoded_limit``).
MAX_NPZ_BYTES = MAX_DECODED_BYTES
#: The longest .npy header read (NumPy's own default ``max_header_size``).
MAX_HEADER_BYTES = 10_000
#: The most members one ``.npz`` may hold.
MAX_NPZ_MEMBERS = 10_000
#: The longest text member (a 0-d string: the JSON of a config, options or RNG state), in
#: characters: 9x an MT19937 state (7.4 K characters), the longest the project writes. Checked
#: from the .npy header (a '<U{n}' itemsize is 4 n), before anything is inflated or parsed:
#: 6e7 characters of '{},' would inflate to 240 MB and parse to 1.8 GB of Python objects.
MAX_TEXT_CHARS = 1 << 16
#: The dtype kinds a member may have: what the project writes (bool, integers, floats; and
#: 0-d unicode strings for JSON). Not bytes, complex, datetimes, structured or void arrays.
MEMBER_KINDS = "biufU"

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header; an empty archive
_NPY_MAGIC = b"\x93NUMPY"


def save_npz_atomic(path, arrays: dict) -> None:
    """``np.savez`` through :func:`vit.atomic.write_atomic`: a temporary file beside ``path``,
    fsync, rename over ``path`` (replacing a symlink there, never following it), fsync the
    folder; the umask's permissions. At any moment ``path`` is the old file or the new one."""
    write_atomic(path, lambda f: np.savez(f, **arrays))


def _member_header(fp, name: str, where: str):
    """(shape, fortran_order, dtype, header length) of one .npy member stream, reading no
    more than ``MAX_HEADER_BYTES`` of header; a ValueError for anything that is not a plain
    version 1.0 or 2.0 .npy array. (NumPy's own reader takes a version-2 header's declared
    length, up to 4 GiB, whole before its size check.)"""
    fmt = np.lib.format
    prefix = fp.read(len(_NPY_MAGIC) + 2)
    if len(prefix) < 8 or not prefix.startswith(_NPY_MAGIC):
        raise ValueError(f"{where}: member {name!r} is not an .npy array (it does not start "
                         f"with the .npy magic {_NPY_MAGIC!r}); expected .npy arrays")
    version = (prefix[6], prefix[7])
    if version not in ((1, 0), (2, 0)):
        raise ValueError(f"{where}: member {name!r} is not an .npy array (format version "
                         f"{version}); expected 1.0 or 2.0")
    size_format = "<H" if version == (1, 0) else "<I"
    raw = fp.read(struct.calcsize(size_format))
    if len(raw) < struct.calcsize(size_format):
        raise ValueError(f"{where}: member {name!r} ends inside its .npy header; expected a "
                         "complete header (truncated or corrupt)")
    (length,) = struct.unpack(size_format, raw)
    if length > MAX_HEADER_BYTES:
        raise ValueError(f"{where}: member {name!r} declares a {length:,}-byte .npy header; "
                         f"expected at most {MAX_HEADER_BYTES:,} bytes (a corrupt or hostile "
                         "header)")
    header = fp.read(length)
    if len(header) < length:
        raise ValueError(f"{where}: member {name!r} ends inside its .npy header; expected a "
                         f"complete header of {length:,} bytes (truncated or corrupt)")
    buf = io.BytesIO(prefix + raw + header)  # NumPy parses the bounded bytes, never eval
    try:
        fmt.read_magic(buf)
        read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, fortran, dtype = read(buf, max_header_size=MAX_HEADER_BYTES)
    except (ValueError, EOFError, SyntaxError, TypeError) as e:
        raise ValueError(f"{where}: member {name!r} is not an .npy array ({e}); expected a "
                         "valid .npy header") from None
    return shape, fortran, dtype, len(prefix) + len(raw) + length


def _check_member_dtype(dtype: np.dtype, shape, name: str, where: str) -> None:
    """A ValueError unless a member of this dtype and shape is one the project reads: no
    pickles, no itemsize 0 (its declared bytes, 0, would not bound its element count), a
    kind in ``MEMBER_KINDS``, strings only 0-d and at most ``MAX_TEXT_CHARS`` long."""
    if dtype.hasobject:
        raise ValueError(f"{where}: member {name!r} holds object (pickled) arrays, which are "
                         "never loaded; expected numeric arrays")
    if not all(isinstance(n, int) and n >= 0 for n in shape):
        raise ValueError(f"{where}: member {name!r} declares shape {shorten(shape)}; expected "
                         "non-negative integer sizes")
    if dtype.itemsize == 0:
        raise ValueError(f"{where}: member {name!r} has dtype {dtype.str} of itemsize 0; "
                         "expected booleans, integers, floats or a JSON string")
    if dtype.kind not in MEMBER_KINDS or dtype.fields is not None or dtype.subdtype:
        raise ValueError(f"{where}: member {name!r} has dtype {shorten(dtype.descr)}; expected "
                         "booleans, integers, floats or a 0-d unicode string (what vit writes)")
    if dtype.kind == "U":
        entry = name[:-len(".npy")]
        if shape != ():
            raise ValueError(f"{where}: entry {entry!r} is a string array of shape "
                             f"{shorten(shape)}; expected integer, float or boolean "
                             "arrays, or a 0-d string of JSON")
        if dtype.itemsize // 4 > MAX_TEXT_CHARS:
            raise ValueError(f"{where}: entry {entry!r} is a string of "
                             f"{dtype.itemsize // 4:,} characters; expected at most "
                             f"{MAX_TEXT_CHARS:,} (the JSON of a config, options or RNG state)")


def json_entry(value, what: str):
    """The JSON held by a 0-d string array (NaN and Infinity are read as floats, for the
    field checks to name); its length is checked (``MAX_TEXT_CHARS``) before it is decoded.
    ``what`` names the entry in the one-line ValueError."""
    value = np.asarray(value)
    if value.shape != () or value.dtype.kind != "U":
        raise ValueError(f"{what}: got {value.dtype} of shape {value.shape}; expected a 0-d "
                         "string of JSON")
    if value.dtype.itemsize // 4 > MAX_TEXT_CHARS:
        raise ValueError(f"{what}: a string of {value.dtype.itemsize // 4:,} characters; "
                         f"expected JSON of at most {MAX_TEXT_CHARS:,} characters")
    try:
        return json.loads(str(value))
    except (ValueError, RecursionError) as e:
        raise ValueError(f"{what}: not JSON ({type(e).__name__}: {str(e)[:80]}); expected "
                         "JSON text") from None


class _Member(NamedTuple):
    """One checked member of an archive: where its data starts and what it declares."""

    info: zipfile.ZipInfo
    shape: tuple
    fortran: bool
    dtype: np.dtype
    header: int  # bytes of .npy header before the data
    nbytes: int


def load_npz(path, max_bytes: int = MAX_NPZ_BYTES) -> dict:
    """Every array of an ``.npz``, never unpickling anything; ``path`` is used as given.

    Before anything is allocated: the path must be a regular file (``vit.files.open_regular``)
    and a zip archive (its first bytes); every member a plain ``.npy`` array whose header is
    at most ``MAX_HEADER_BYTES`` and declares a dtype of ``MEMBER_KINDS`` of itemsize > 0 (so
    the element count is bounded with the bytes; strings only 0-d, at most ``MAX_TEXT_CHARS``)
    and a shape whose data is exactly the rest of the member; and all the arrays together at most
    ``vit.files.decoded_limit(file size, max_bytes)`` bytes. Members are then inflated in
    chunks into arrays of the declared size. A clear ValueError otherwise (missing file:
    FileNotFoundError).
    """
    where = fspath(path, "load path")
    try:
        with open_regular(where, ".npz file") as f:
            _check_zip_magic(f.read(6), where)
            limit = decoded_limit(os.fstat(f.fileno()).st_size, max_bytes)
            f.seek(0)
            with zipfile.ZipFile(f) as zf:
                plan = _plan_members(zf, where, limit)  # every header checked first
                return {m.info.filename[:-len(".npy")]: _read_member(zf, m, where)
                        for m in plan}
    except FileNotFoundError:
        raise
    except ValueError as e:
        if str(e).startswith(where):
            raise
        raise ValueError(f"{where}: not a readable .npz ({e})") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, KeyError,
            NotImplementedError, zlib.error) as e:
        raise ValueError(f"{where}: not a readable .npz, truncated or corrupt ({e})") from None


def _check_zip_magic(head: bytes, where: str) -> None:
    if head.startswith(_NPY_MAGIC):
        raise ValueError(f"{where}: a single .npy array; expected an .npz archive")
    if head[:4] not in _ZIP_MAGIC:
        # never echo the bytes: the file may be any readable file (/etc/shadow)
        what = "an empty file" if not head else "it does not start with a zip header"
        raise ValueError(f"{where}: not an .npz archive ({what}); expected a zip "
                         "archive of .npy arrays as np.savez writes")


def _plan_members(zf: zipfile.ZipFile, where: str, limit: int) -> list[_Member]:
    """Every member's header read and checked (names, dtypes, declared against held bytes,
    the running total against ``limit``) before any member's data is allocated."""
    infos = zf.infolist()
    if len(infos) > MAX_NPZ_MEMBERS:
        raise ValueError(f"{where}: {len(infos)} members; expected at most {MAX_NPZ_MEMBERS}")
    plan, total, names = [], 0, set()
    for info in infos:
        name = info.filename
        if not name.endswith(".npy"):
            raise ValueError(f"{where}: member {name!r} is not an .npy array; expected only "
                             ".npy members")
        if name in names:
            raise ValueError(f"{where}: member {name!r} appears twice; expected each name once")
        names.add(name)
        with zf.open(info) as fp:
            shape, fortran, dtype, header = _member_header(fp, name, where)
        _check_member_dtype(dtype, shape, name, where)
        count, span = 1, dtype.itemsize
        for n in shape:
            count *= n
            span *= max(n, 1)  # an empty shape too big for any array is refused
        nbytes = count * dtype.itemsize  # itemsize >= 1: bounds the count too
        total += nbytes
        if total > limit or span > limit:
            raise ValueError(
                f"{where}: member {name!r} declares shape {shape} of {dtype} ({nbytes:,} "
                f"bytes); expected at most {limit:,} bytes of arrays in one file (a corrupt "
                "or hostile header)")
        held = info.file_size - header
        if held != nbytes:
            problem = "truncated or corrupt" if held < nbytes else \
                f"{held - nbytes:,} bytes follow the data"
            raise ValueError(
                f"{where}: member {name!r} declares shape {shape} of {dtype} ({nbytes:,} "
                f"bytes) but holds {held:,} bytes of data ({problem}); expected exactly the "
                "declared bytes")
        plan.append(_Member(info, shape, fortran, dtype, header, nbytes))
    return plan


def _read_member(zf: zipfile.ZipFile, m: _Member, where: str) -> np.ndarray:
    """A planned member inflated in chunks into an array of exactly its declared bytes."""
    with zf.open(m.info) as fp:
        fp.read(m.header)
        data = np.empty(m.nbytes, np.uint8)
        got = read_into(fp, memoryview(data))
        if got < m.nbytes:
            raise ValueError(f"{where}: member {m.info.filename!r} ends after {got:,} of its "
                             f"{m.nbytes:,} data bytes; expected them all (truncated or "
                             "corrupt)")
        if fp.read(1):  # also the end of the member: the zip's CRC check
            raise ValueError(f"{where}: member {m.info.filename!r} holds more than its "
                             "declared data; expected exactly the declared bytes")
    return data.view(m.dtype).reshape(m.shape, order="F" if m.fortran else "C")
