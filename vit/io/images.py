"""Reading pictures and image arrays from paths a user gave: PNG/JPEG decoded with Pillow
(the ``images`` extra) after their declared size is checked, ``.npy`` and ``.npz`` arrays read
within a byte bound and never unpickled."""
from __future__ import annotations

import io
import os
import warnings

import numpy as np

from .files import open_regular, shorten
from .npz import MAX_HEADER_BYTES, load_npz

__all__ = ["MAX_IMAGE_PIXELS", "MAX_ARRAY_BYTES", "open_picture", "picture_pixels", "read_array"]

#: The most pixels a picture may declare in its header (checked before it is decoded): a
#: 4096 x 4096 photo. Pillow's own bomb limit (Image.MAX_IMAGE_PIXELS, 89 M) is left alone.
MAX_IMAGE_PIXELS = 1 << 24
#: The largest ``.npy`` or ``.npz`` file of images read (its bytes, and the arrays declared).
MAX_ARRAY_BYTES = 1 << 28
#: What predict builds from each pixel of an array file: its float32 value, the normalized
#: float32 input and the batch of every file together (3 x 4 bytes). The array file's bound,
#: MAX_ARRAY_BYTES, applies to that, not only to the bytes read: 256 MB of uint8 zeros
#: compress to 250 KB and would become 3 GB.
BUILT_BYTES_PER_PIXEL = 12
#: The CPU budget of decoding a JPEG, in scans x pixels: a progressive JPEG is decoded one
#: scan at a time, each a pass over the whole image, and its scan count is the file's to
#: choose (encoders write about 10; a few KB of repeated scans made thousands, minutes of
#: CPU for one file). 2**30 is 64 passes over the largest picture taken, more for smaller
#: ones, but never more than MAX_JPEG_SCANS. Counted from the markers before decoding.
MAX_SCAN_PIXELS = 1 << 30
MAX_JPEG_SCANS = 1000
#: The largest picture file read (a 4096 x 4096 JPEG at the highest quality is under 30 MB).
MAX_PICTURE_BYTES = 64 << 20


def jpeg_scans(data: bytes) -> int:
    """The number of scans (SOS markers) of the JPEG ``data``, found by walking its marker
    segments and skipping each scan's entropy-coded bytes (0xFF00 stuffing and restart
    markers are part of them); stops at the end of the image or of the data."""
    i, n, scans = 2, len(data), 0
    while i + 1 < n:
        if data[i] != 0xFF:  # bytes where a marker belongs: libjpeg skips them to the next
            i = data.find(b"\xff", i)  # 0xFF and decodes on, so the count does too
            if i < 0:
                return scans
            continue
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker == 0xD9:  # end of image
            return scans
        if marker == 0x01 or 0xD0 <= marker <= 0xD7:  # no length
            i += 2
            continue
        if i + 4 > n:
            return scans
        i += 2 + int.from_bytes(data[i + 2:i + 4], "big")
        if marker != 0xDA:
            continue
        scans += 1
        while True:  # the entropy-coded data, up to the next marker that is not RST/stuffing
            i = data.find(b"\xff", i)
            if i < 0 or i + 1 >= n:
                return scans
            follower = data[i + 1]
            if follower == 0x00 or 0xD0 <= follower <= 0xD7 or follower == 0xFF:
                i += 1 if follower == 0xFF else 2
                continue
            break
    return scans


def _pillow():
    try:
        from PIL import Image, ImageOps
    except ImportError:
        raise ImportError("reading PNG/JPEG pictures needs Pillow: pip install "
                          "'minigrad-vit[images]' (or give .npy/.npz arrays)") from None
    return Image, ImageOps


def open_picture(path: str):
    """The decoded PNG or JPEG at ``path`` (EXIF orientation applied), its size checked from
    the header (at most ``MAX_IMAGE_PIXELS``) before a pixel is decoded."""
    Image, ImageOps = _pillow()
    with open_regular(path, "PNG/JPEG picture") as f:
        size = os.fstat(f.fileno()).st_size
        data = b"" if size > MAX_PICTURE_BYTES else f.read(MAX_PICTURE_BYTES + 1)
    if size > MAX_PICTURE_BYTES or len(data) > MAX_PICTURE_BYTES:
        raise ValueError(f"{path}: larger than {MAX_PICTURE_BYTES:,} bytes; expected a "
                         "PNG or JPEG picture of at most that")
    try:
        with warnings.catch_warnings():  # Pillow's bomb warning is a refusal here
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            im = Image.open(io.BytesIO(data), formats=("PNG", "JPEG"))
            w, h = im.size
            if w * h > MAX_IMAGE_PIXELS:
                raise ValueError(f"{path}: a {w}x{h} picture ({w * h:,} pixels); expected "
                                 f"at most {MAX_IMAGE_PIXELS:,} pixels")
            if im.format == "JPEG":  # the decoding's CPU, bounded before it is spent
                scans = jpeg_scans(data)
                budget = min(MAX_JPEG_SCANS, max(1, MAX_SCAN_PIXELS // max(1, w * h)))
                if scans > budget:
                    raise ValueError(f"{path}: a JPEG of {scans:,} scans for {w}x{h} "
                                     f"pixels; expected at most {budget:,} (each scan is "
                                     "a pass over the image: "
                                     "vit.io.images.MAX_SCAN_PIXELS)")
            im.load()
    except ValueError as e:
        if str(e).startswith(path):
            raise
        raise ValueError(f"{path}: not a readable PNG or JPEG picture ({e})") from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        raise ValueError(f"{path}: too large a picture ({e}); expected at most "
                         f"{MAX_IMAGE_PIXELS:,} pixels") from None
    except Image.UnidentifiedImageError:
        raise ValueError(f"{path}: not a PNG or JPEG picture (unrecognized contents); "
                         "expected a .png, .jpg, .npy or .npz file") from None
    except (OSError, SyntaxError, EOFError, TypeError, IndexError, KeyError) as e:
        raise ValueError(f"{path}: not a readable PNG or JPEG picture, truncated or "
                         f"corrupt ({e})") from None
    return ImageOps.exif_transpose(im), Image


def picture_pixels(im, Image, mode: str) -> np.ndarray:
    """``im`` as (H, W) (mode "L") or (H, W, 3) ("RGB") float64 in [0, 1]; transparent
    pixels composited over white (paper), 16-bit gray scaled from 0..65535."""
    if im.mode.startswith("I;16") or im.mode == "I":
        gray = np.clip(np.asarray(im, np.float64) / 65535, 0, 1)
        return gray if mode == "L" else np.repeat(gray[..., None], 3, axis=2)
    if "A" in im.mode or "transparency" in im.info:
        im = Image.alpha_composite(Image.new("RGBA", im.size, "white"), im.convert("RGBA"))
    return np.asarray(im.convert(mode), np.float64) / 255


def _read_npy(path: str) -> np.ndarray:
    """A ``.npy`` array of at most ``MAX_ARRAY_BYTES``, never unpickled: the file is read into
    memory first (so NumPy's parsers see bounded bytes), its header (version 1.0 or 2.0, at
    most ``vit.io.npz.MAX_HEADER_BYTES``) must declare exactly the data that follows it, and
    only then is the array built."""
    with open_regular(path, ".npy array") as f:
        size = os.fstat(f.fileno()).st_size
        # what is built from it is bounded, and the file's size says that before any read
        data = b"" if size > MAX_ARRAY_BYTES else f.read(MAX_ARRAY_BYTES + 1)
    if size > MAX_ARRAY_BYTES or len(data) > MAX_ARRAY_BYTES:
        raise ValueError(f"{path}: larger than {MAX_ARRAY_BYTES:,} bytes; expected a smaller "
                         ".npy array of images")
    fmt, buf = np.lib.format, io.BytesIO(data)
    try:
        version = fmt.read_magic(buf)
        read = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}.get(version)
        if read is None:
            raise ValueError(f"format version {version}; expected 1.0 or 2.0")
        shape, _, dtype = read(buf, max_header_size=MAX_HEADER_BYTES)
        if dtype.hasobject:
            raise ValueError("it holds pickled objects, which are never loaded")
        declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
        held = len(data) - buf.tell()
        if declared != held:
            raise ValueError(f"its header declares {shorten(shape)} of {dtype} ({declared:,} "
                             f"bytes) but {held:,} bytes follow")
        count = int(np.prod(shape, dtype=object))
        if count * max(dtype.itemsize, BUILT_BYTES_PER_PIXEL) > MAX_ARRAY_BYTES:
            raise ValueError(f"its {count:,} pixels would take "
                             f"{count * BUILT_BYTES_PER_PIXEL:,} bytes as predict's inputs; "
                             f"expected at most {MAX_ARRAY_BYTES:,}")
        buf.seek(0)
        return np.load(buf, allow_pickle=False)
    except (ValueError, OSError, EOFError, SyntaxError, TypeError) as e:
        raise ValueError(f"{path}: not a readable .npy array ({shorten(str(e), 80)}); expected "
                         "an array of numbers saved by np.save") from None


def read_array(path: str) -> np.ndarray:
    if path.lower().endswith(".npy"):
        x = _read_npy(path)
    else:
        arrays = load_npz(path, max_bytes=MAX_ARRAY_BYTES,  # never unpickles, sizes bounded
                          built_itemsize=BUILT_BYTES_PER_PIXEL)
        if len(arrays) != 1:
            raise ValueError(f"{path}: holds {len(arrays)} arrays {shorten(sorted(arrays))}; "
                             "expected exactly one array of images")
        (x,) = arrays.values()
    if x.dtype.kind not in "biuf":
        raise ValueError(f"{path}: an array of dtype {x.dtype}; expected real pixel values")
    return x
