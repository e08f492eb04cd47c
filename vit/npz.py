"""Reading and writing ``.npz`` files safely: atomic writes, and reads that never unpickle
and check every member's declared size before allocating it."""
from __future__ import annotations

import os
import zipfile
import zlib

import numpy as np

from .atomic import write_atomic

__all__ = ["save_npz_atomic", "load_npz", "MAX_NPZ_BYTES", "MAX_NPZ_MEMBERS"]


#: The most bytes the arrays of one ``.npz`` may declare, all together (checked against each
#: member's .npy header before anything is allocated).
MAX_NPZ_BYTES = 4 << 30
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


def _member_header(zf: zipfile.ZipFile, info: zipfile.ZipInfo, where: str):
    """(shape, fortran_order, dtype, header bytes) of one .npy member, read from its header
    alone; a ValueError for anything that is not a plain .npy array."""
    fmt = np.lib.format
    with zf.open(info) as fp:
        try:
            version = fmt.read_magic(fp)
            if version == (1, 0):
                shape, fortran, dtype = fmt.read_array_header_1_0(fp)
            elif version == (2, 0):
                shape, fortran, dtype = fmt.read_array_header_2_0(fp)
            else:
                raise ValueError(f"format version {version}; expected 1.0 or 2.0")
            header = fp.tell()
        except (ValueError, EOFError, OSError, SyntaxError) as e:
            raise ValueError(f"{where}: member {info.filename!r} is not an .npy array ({e})") \
                from None
    return shape, fortran, dtype, header


def load_npz(path, max_bytes: int = MAX_NPZ_BYTES) -> dict:
    """Every array of an ``.npz``, never unpickling anything; ``path`` is used as given.

    Before anything is allocated: the file must be a zip archive (its first bytes), every
    member a plain ``.npy`` array whose header declares no object dtype, a shape whose data
    fits the member, and all together at most ``max_bytes``. A clear ValueError otherwise
    (missing file: FileNotFoundError).
    """
    where = _fspath(path, "load path")
    try:
        with open(where, "rb") as f:
            head = f.read(6)
            if head.startswith(_NPY_MAGIC):
                raise ValueError(f"{where}: a single .npy array; expected an .npz archive")
            if head[:4] not in _ZIP_MAGIC:
                what = "an empty file" if not head else f"a file starting with {head!r}"
                raise ValueError(f"{where}: not an .npz archive ({what}); expected a zip "
                                 "archive of .npy arrays as np.savez writes")
            f.seek(0)
            with zipfile.ZipFile(f) as zf:
                infos = zf.infolist()
                if len(infos) > MAX_NPZ_MEMBERS:
                    raise ValueError(f"{where}: {len(infos)} members; expected at most "
                                     f"{MAX_NPZ_MEMBERS}")
                plan, total = [], 0
                for info in infos:
                    if not info.filename.endswith(".npy"):
                        raise ValueError(f"{where}: member {info.filename!r} is not an .npy "
                                         "array; expected only .npy members")
                    shape, _, dtype, header = _member_header(zf, info, where)
                    if dtype.hasobject:
                        raise ValueError(f"{where}: member {info.filename!r} holds object "
                                         "(pickled) arrays, which are never loaded; expected "
                                         "numeric arrays")
                    if not all(isinstance(n, int) and n >= 0 for n in shape):
                        raise ValueError(f"{where}: member {info.filename!r} declares shape "
                                         f"{shape}; expected non-negative integer sizes")
                    count = 1
                    for n in shape:
                        count *= n
                    nbytes = count * dtype.itemsize
                    total += nbytes
                    if total > max_bytes:
                        raise ValueError(
                            f"{where}: member {info.filename!r} declares shape {shape} of "
                            f"{dtype} ({nbytes:,} bytes); expected at most {max_bytes:,} bytes "
                            "of arrays in one file (a corrupt or hostile header)")
                    if header + nbytes > info.file_size:
                        raise ValueError(
                            f"{where}: member {info.filename!r} declares shape {shape} of "
                            f"{dtype} ({nbytes:,} bytes) but holds {info.file_size - header:,}"
                            " bytes of data; expected them to agree (truncated or corrupt)")
                    plan.append(info)
                arrays = {}
                for info in plan:
                    with zf.open(info) as fp:
                        array = np.lib.format.read_array(fp, allow_pickle=False)
                        fp.read()  # to the end: the zip's CRC check of the member
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
