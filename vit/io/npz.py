"""Reading and writing ``.npz`` files safely: atomic writes, and reads that never unpickle
and check every member's declared size before allocating it."""
from __future__ import annotations

import io
import json
import os
import struct
import zipfile
import zlib
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from .atomic import write_atomic
from .files import MAX_DECODED_BYTES, decoded_limit, fspath, open_regular, read_into, shorten

__all__ = ["save_npz_atomic", "load_npz", "json_entry", "MAX_NPZ_BYTES", "MAX_NPZ_MEMBERS",
           "MAX_HEADER_BYTES", "MAX_TEXT_CHARS", "MEMBER_KINDS", "MAX_DIRECTORY_BYTES"]


#: The most bytes the arrays of one ``.npz`` may declare, all together (checked against each
#: member's .npy header before anything is allocated; see ``vit.io.files.decoded_limit``).
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

#: The longest central directory read: np.savez writes 46 bytes, the name and at most 28
#: bytes of zip64 sizes per member, so 16 MiB is 1.6 KB a member at ``MAX_NPZ_MEMBERS``.
MAX_DIRECTORY_BYTES = 16 << 20

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header; an empty archive
# The zip structures read before zipfile parses anything (PKWARE APPNOTE.TXT 4.3.12-4.3.16):
# signature, this disk, the directory's disk, entries on this disk, entries, the directory's
# size and offset, the comment's length
_END = struct.Struct("<4s4H2LH")
# signature, size of the rest of the record, versions, the two disks, the two entry counts,
# the directory's size and offset (zipfile reads no "extensible data" after them)
_END64 = struct.Struct("<4sQ2H2L4Q")
_LOCATOR = struct.Struct("<4sLQL")  # signature, the zip64 record's disk and offset, disks
_ENTRY = struct.Struct("<4s24x3H12x")  # a directory header: name, extra, comment lengths
_NO_VALUE = {3: 0xFFFF, 4: 0xFFFF, 5: 0xFFFFFFFF, 6: 0xFFFFFFFF}  # "see the zip64 record"
_FIELDS = {1: "disk", 2: "directory's disk", 3: "entries on this disk", 4: "entries",
           5: "directory's size", 6: "directory's offset"}
_NPY_MAGIC = b"\x93NUMPY"


def save_npz_atomic(path, arrays: dict) -> None:
    """``np.savez`` through :func:`vit.io.atomic.write_atomic`: a temporary file beside ``path``,
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


def load_npz(path, max_bytes: int = MAX_NPZ_BYTES, built_itemsize: int = 0,
             names: Callable[[str], str | None] | None = None) -> dict:
    """Every array of an ``.npz``, never unpickling anything; ``path`` is used as given.

    Before anything is allocated: the path must be a regular file (``vit.io.files.open_regular``)
    and a zip archive (its first bytes) whose end records declare at most ``MAX_NPZ_MEMBERS``
    entries, held in a central directory of at most ``MAX_DIRECTORY_BYTES`` that ends where
    they begin (``_check_directory``, before zipfile parses it); every member a plain ``.npy``
    array whose header is at most ``MAX_HEADER_BYTES`` and declares a dtype of
    ``MEMBER_KINDS`` of itemsize > 0 (so the element count is bounded with the bytes; strings
    only 0-d, at most ``MAX_TEXT_CHARS``) and a shape whose data is exactly the rest of the
    member; and all the arrays together at most ``vit.io.files.decoded_limit(file size,
    max_bytes)`` bytes, counting each element as ``built_itemsize`` bytes where that is more
    than its own (what the caller builds from it: float32 copies of uint8 pixels). ``names``,
    if given, is asked about every member's name before its header is read: what it returns
    (a reason) refuses the file, so an entry the caller does not take is never inflated.
    Members
    are then inflated in
    chunks into arrays of the declared size. A clear ValueError otherwise (missing file:
    FileNotFoundError).
    """
    where = fspath(path, "load path")
    try:
        with open_regular(where, ".npz file") as f:
            _check_zip_magic(f.read(6), where)
            size = os.fstat(f.fileno()).st_size
            _check_directory(f, size, where)
            limit = decoded_limit(size, max_bytes)
            f.seek(0)
            with zipfile.ZipFile(f) as zf:
                plan = _plan_members(zf, where, limit, built_itemsize, names)  # headers first
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


def _check_directory(f, size: int, where: str) -> None:
    """The end of central directory record (and the zip64 record and locator before it, if
    any) read from the file's last 64 KiB + 98 bytes, where zipfile looks for them, and
    checked against the file and ``MAX_NPZ_MEMBERS``; then the central directory walked
    header by header. zipfile parses the whole directory, one ZipInfo per entry, before any
    member can be counted: a hostile archive would cost it time and memory without bound."""
    start = max(0, size - _END.size - 0xFFFF)  # the record, then a comment of < 64 KiB
    tail = _read_at(f, start, size - start)
    at = tail.rfind(b"PK\x05\x06")  # the last one: the record zipfile takes
    if at < 0 or len(tail) - at < _END.size:
        raise ValueError(f"{where}: not a readable .npz, truncated or corrupt (no end of "
                         "central directory record); expected a zip archive as np.savez "
                         "writes")
    end = start + at
    fields = list(_END.unpack_from(tail, at))
    comment, follows = fields[7], len(tail) - at - _END.size
    if comment != follows:
        raise ValueError(f"{where}: its end record declares a {comment:,}-byte comment but "
                         f"{follows:,} bytes follow it; expected exactly the comment "
                         "(truncated or corrupt)")
    directory_end = end
    locator = _read_at(f, end - _LOCATOR.size, _LOCATOR.size) if end >= _LOCATOR.size else b""
    if locator.startswith(b"PK\x06\x07"):  # zip64: the counts, size and offset are there
        directory_end = _zip64_fields(f, end, locator, fields, where)
    _, disk, directory_disk, here, total, length, offset, _ = fields
    if disk or directory_disk or here != total:
        raise ValueError(f"{where}: its end record declares {here:,} entries on disk {disk} "
                         f"and {total:,} in all, its directory on disk {directory_disk}; "
                         "expected one disk holding every entry (corrupt)")
    if total > MAX_NPZ_MEMBERS:
        raise ValueError(f"{where}: {total:,} members; expected at most {MAX_NPZ_MEMBERS:,}")
    if offset + length != directory_end:
        raise ValueError(f"{where}: its central directory ({length:,} bytes at byte "
                         f"{offset:,}) does not end where its end records begin (byte "
                         f"{directory_end:,} of {size:,}); expected them to meet (truncated "
                         "or corrupt)")
    if length > MAX_DIRECTORY_BYTES:
        raise ValueError(f"{where}: a central directory of {length:,} bytes; expected at most "
                         f"{MAX_DIRECTORY_BYTES:,} (a corrupt or hostile archive)")
    _walk_directory(_read_at(f, offset, length), total, where)


def _zip64_fields(f, end: int, locator: bytes, fields: list, where: str) -> int:
    """``fields`` of the end record updated from the zip64 end record the locator points at,
    which must lie just before the locator (where zipfile reads it); its offset returned."""
    _, record_disk, record_at, disks = _LOCATOR.unpack(locator)
    expected_at = end - _LOCATOR.size - _END64.size
    if record_disk or disks > 1 or record_at != expected_at or expected_at < 0:
        raise ValueError(f"{where}: its zip64 locator points at byte {record_at:,} on disk "
                         f"{record_disk} of {disks}; expected the zip64 end record just before "
                         f"it, at byte {max(expected_at, 0):,} of disk 0 (corrupt)")
    record = _read_at(f, expected_at, _END64.size)
    sig, rest, _, _, disk, directory_disk, here, total, length, offset = _END64.unpack(record)
    if sig != b"PK\x06\x06" or rest != _END64.size - 12:
        raise ValueError(f"{where}: no zip64 end record of {_END64.size} bytes where its "
                         f"locator points (byte {record_at:,}); expected one (corrupt)")
    values = (disk, directory_disk, here, total, length, offset)
    for index, value in zip(range(1, 7), values, strict=True):
        if fields[index] not in (value, _NO_VALUE.get(index)):
            raise ValueError(f"{where}: its end record and zip64 end record disagree on the "
                             f"{_FIELDS[index]} ({fields[index]:,} against {value:,}); expected "
                             "the same value or the zip64 marker (corrupt)")
        fields[index] = value
    return expected_at


def _walk_directory(directory: bytes, total: int, where: str) -> None:
    """Exactly ``total`` central directory headers, filling ``directory`` to its end."""
    at, count = 0, 0
    while at < len(directory):
        if count == total:
            raise ValueError(f"{where}: its central directory holds more than the {total:,} "
                             "entries its end record declares; expected exactly those "
                             "(corrupt or hostile)")
        if len(directory) - at < _ENTRY.size or directory[at:at + 4] != b"PK\x01\x02":
            raise ValueError(f"{where}: its central directory's entry {count + 1:,} is not a "
                             "directory header; expected one (truncated or corrupt)")
        _, name, extra, comment = _ENTRY.unpack_from(directory, at)
        at += _ENTRY.size + name + extra + comment
        count += 1
    if at != len(directory) or count != total:
        raise ValueError(f"{where}: its central directory holds {count:,} entries in "
                         f"{at:,} bytes; its end record declares {total:,} entries in "
                         f"{len(directory):,} bytes (truncated or corrupt)")


def _read_at(f, offset: int, length: int) -> bytes:
    f.seek(offset)
    return f.read(length)


def _plan_members(zf: zipfile.ZipFile, where: str, limit: int, built_itemsize: int = 0,
                  names: Callable[[str], str | None] | None = None) -> list[_Member]:
    """Every member's header read and checked (names, dtypes, declared against held bytes,
    the running total against ``limit``) before any member's data is allocated."""
    infos = zf.infolist()
    if len(infos) > MAX_NPZ_MEMBERS:
        raise ValueError(f"{where}: {len(infos):,} members; expected at most "
                         f"{MAX_NPZ_MEMBERS:,}")
    plan, total, seen = [], 0, set()
    for info in infos:
        name = info.filename
        if not name.endswith(".npy"):
            raise ValueError(f"{where}: member {name!r} is not an .npy array; expected only "
                             ".npy members")
        if name in seen:
            raise ValueError(f"{where}: member {name!r} appears twice; expected each name once")
        seen.add(name)
        problem = names(name[:-len(".npy")]) if names is not None else None
        if problem:  # before its header or data is read
            raise ValueError(f"{where}: {problem}")
        with zf.open(info) as fp:
            shape, fortran, dtype, header = _member_header(fp, name, where)
        _check_member_dtype(dtype, shape, name, where)
        count, span = 1, dtype.itemsize
        for n in shape:
            count *= n
            span *= max(n, 1)  # an empty shape too big for any array is refused
        nbytes = count * dtype.itemsize  # itemsize >= 1: bounds the count too
        built = count * max(dtype.itemsize, built_itemsize)
        total += built
        if total > limit or span > limit:
            as_built = f", {built:,} as the caller builds it" if built > nbytes else ""
            raise ValueError(
                f"{where}: member {name!r} declares shape {shape} of {dtype} ({nbytes:,} "
                f"bytes{as_built}); expected at most {limit:,} bytes of arrays in one file (a "
                "corrupt or hostile header, or more images than one call takes)")
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
        got = read_into(fp, data.data)
        if got < m.nbytes:
            raise ValueError(f"{where}: member {m.info.filename!r} ends after {got:,} of its "
                             f"{m.nbytes:,} data bytes; expected them all (truncated or "
                             "corrupt)")
        if fp.read(1):  # also the end of the member: the zip's CRC check
            raise ValueError(f"{where}: member {m.info.filename!r} holds more than its "
                             "declared data; expected exactly the declared bytes")
    return data.view(m.dtype).reshape(m.shape, order="F" if m.fortran else "C")
