"""Reading and writing ``.npz`` files safely: atomic writes, and reads that never unpickle
and check every member's declared size before allocating it."""
from __future__ import annotations

import io
import os
import struct
import zipfile
import zlib

import numpy as np

from .atomic import write_atomic
from .files import MAX_DECODED_BYTES, decoded_limit, open_regular, read_into

__all__ = ["save_npz_atomic", "load_npz", "MAX_NPZ_BYTES", "MAX_NPZ_MEMBERS", "MAX_HEADER_BYTES"]


#: The most bytes the arrays of one ``.npz`` may declare, all together (checked against each
#: member's .npy header before anything is allocated; see ``vit.files.decoded_limit``).
MAX_NPZ_BYTES = MAX_DECODED_BYTES
#: The longest .npy header read (NumPy's own default ``max_header_size``).
MAX_HEADER_BYTES = 10_000
#: The most members one ``.npz`` may hold.
MAX_NPZ_MEMBERS = 10_000

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header; an empty archive
_NPY_MAGIC = b"\x93NUMPY"


def _fspath(path, what: str) -> str:
    try:
        return os.fspath(path)
    except TypeError:
        raise TypeError(f"{what}: got {type(path).__name__} {path!r}; expected a file path "
                        "(str or os.PathLike)") from None


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
        raise ValueError(f"{where}: member {name!r} is not an .npy array (it starts with "
                         f"{prefix[:8]!r}); expected the .npy magic {_NPY_MAGIC!r}")
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


def load_npz(path, max_bytes: int = MAX_NPZ_BYTES) -> dict:
    """Every array of an ``.npz``, never unpickling anything; ``path`` is used as given.

    Before anything is allocated: the path must be a regular file (``vit.files.open_regular``)
    and a zip archive (its first bytes); every member a plain ``.npy`` array whose header is
    at most ``MAX_HEADER_BYTES`` and declares no object dtype and a shape whose data is
    exactly the rest of the member; and all the arrays together at most
    ``vit.files.decoded_limit(file size, max_bytes)`` bytes. Members are then inflated in
    chunks into arrays of the declared size. A clear ValueError otherwise (missing file:
    FileNotFoundError).
    """
    where = _fspath(path, "load path")
    try:
        with open_regular(where, ".npz file") as f:
            head = f.read(6)
            if head.startswith(_NPY_MAGIC):
                raise ValueError(f"{where}: a single .npy array; expected an .npz archive")
            if head[:4] not in _ZIP_MAGIC:
                what = "an empty file" if not head else f"a file starting with {head!r}"
                raise ValueError(f"{where}: not an .npz archive ({what}); expected a zip "
                                 "archive of .npy arrays as np.savez writes")
            limit = decoded_limit(os.fstat(f.fileno()).st_size, max_bytes)
            f.seek(0)
            with zipfile.ZipFile(f) as zf:
                infos = zf.infolist()
                if len(infos) > MAX_NPZ_MEMBERS:
                    raise ValueError(f"{where}: {len(infos)} members; expected at most "
                                     f"{MAX_NPZ_MEMBERS}")
                plan, total, names = [], 0, set()
                for info in infos:
                    name = info.filename
                    if not name.endswith(".npy"):
                        raise ValueError(f"{where}: member {name!r} is not an .npy "
                                         "array; expected only .npy members")
                    if name in names:
                        raise ValueError(f"{where}: member {name!r} appears twice; expected "
                                         "each name once")
                    names.add(name)
                    with zf.open(info) as fp:
                        shape, fortran, dtype, header = _member_header(fp, name, where)
                    if dtype.hasobject:
                        raise ValueError(f"{where}: member {name!r} holds object "
                                         "(pickled) arrays, which are never loaded; expected "
                                         "numeric arrays")
                    if not all(isinstance(n, int) and n >= 0 for n in shape):
                        raise ValueError(f"{where}: member {name!r} declares shape "
                                         f"{shape}; expected non-negative integer sizes")
                    count = 1
                    for n in shape:
                        count *= n
                    nbytes = count * dtype.itemsize
                    total += nbytes
                    if total > limit:
                        raise ValueError(
                            f"{where}: member {name!r} declares shape {shape} of "
                            f"{dtype} ({nbytes:,} bytes); expected at most {limit:,} bytes "
                            "of arrays in one file (a corrupt or hostile header)")
                    held = info.file_size - header
                    if held != nbytes:
                        problem = "truncated or corrupt" if held < nbytes else \
                            f"{held - nbytes:,} bytes follow the data"
                        raise ValueError(
                            f"{where}: member {name!r} declares shape {shape} of "
                            f"{dtype} ({nbytes:,} bytes) but holds {held:,} bytes of data "
                            f"({problem}); expected exactly the declared bytes")
                    plan.append((info, shape, fortran, dtype, header, nbytes, count))
                arrays = {}
                for info, shape, fortran, dtype, header, nbytes, count in plan:
                    with zf.open(info) as fp:
                        fp.read(header)
                        data = np.empty(nbytes, np.uint8)
                        got = read_into(fp, memoryview(data))
                        if got < nbytes:
                            raise ValueError(f"{where}: member {info.filename!r} ends after "
                                             f"{got:,} of its {nbytes:,} data bytes; expected "
                                             "them all (truncated or corrupt)")
                        if fp.read(1):  # also the end of the member: the zip's CRC check
                            raise ValueError(f"{where}: member {info.filename!r} holds more "
                                             "than its declared data; expected exactly the "
                                             "declared bytes")
                    array = data.view(dtype) if dtype.itemsize else np.empty(count, dtype)
                    array = array.reshape(shape, order="F" if fortran else "C")
                    arrays[info.filename[:-len(".npy")]] = array
                return arrays
    except FileNotFoundError:
        raise
    except ValueError as e:
        if str(e).startswith(where):
            raise
        raise ValueError(f"{where}: not a readable .npz ({e})") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, KeyError,
            NotImplementedError, zlib.error) as e:
        raise ValueError(f"{where}: not a readable .npz, truncated or corrupt ({e})") from None
