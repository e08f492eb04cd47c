"""vit.io.npz.load_npz: what a member of an .npz may hold, checked before it is read.

A text entry (a checkpoint's JSON ``options``, ``config``, ``rng``) is bounded by
``MAX_TEXT_CHARS`` before it is decoded: a 6e7-character ``[{},...]`` (240 MB of UTF-32,
1.8 GB once parsed) in a few hundred KB of file takes no memory. Members of itemsize 0 with a
huge shape, dtypes the project never writes (complex, bytes, datetime, timedelta, struct), a
string array that is not 0-d and an empty shape no array can have are refused in one line;
what the project writes still loads; a file that is not a zip is refused without echoing its
bytes."""
from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
from hostile_util import run_limited, small_checkpoint


# ---- text entries bounded before they are decoded ------------------------------------------------
def _npz_with_text(path, base, entry: str, chunks, chars: int):
    """``base``'s entries, with ``entry`` a 0-d '<U{chars}' member streamed from ``chunks``."""
    from vit.io.npz import load_npz
    arrays = load_npz(base)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for k, v in arrays.items():
            if k != entry:
                buf = io.BytesIO()
                np.lib.format.write_array(buf, v)
                zf.writestr(f"{k}.npy", buf.getvalue())
        with zf.open(f"{entry}.npy", "w", force_zip64=True) as f:
            head = io.BytesIO()
            np.lib.format.write_array_header_1_0(
                head, {"descr": f"<U{chars}", "fortran_order": False, "shape": ()})
            f.write(head.getvalue())
            for chunk in chunks:
                f.write(chunk.encode("utf-32-le"))
    return path


def _json_bomb(n: int):
    yield "["
    for start in range(0, n - 1, 1 << 18):
        yield "{}," * min(1 << 18, n - 1 - start)
    yield "{}]"


@pytest.mark.parametrize("entry", ["options", "config", "rng"])
def test_a_long_json_entry_is_refused_before_it_is_decoded(tmp_path, entry):
    from vit.io.npz import MAX_TEXT_CHARS
    from vit.train.checkpoint import load_checkpoint
    base = small_checkpoint(tmp_path / "base.npz")
    n = (MAX_TEXT_CHARS // 3) + 2  # just over the bound
    path = _npz_with_text(tmp_path / "long.npz", base, entry, _json_bomb(n), 3 * n)
    with pytest.raises(ValueError) as info:
        load_checkpoint(path)
    message = str(info.value)
    assert f"{entry}.npy" in message or repr(entry) in message, message
    assert f"{3 * n:,}" in message and f"{MAX_TEXT_CHARS:,}" in message, message


@pytest.mark.slow  # a child process; fast: test_a_long_json_entry_is_refused_before_it_is_decoded
def test_a_json_bomb_takes_no_memory(tmp_path):
    """The reviewer's case: 6e7 characters of '{},' (240 MB of UTF-32, 1.8 GB once parsed)
    in a file of a few hundred KB."""
    base = small_checkpoint(tmp_path / "base.npz")
    n = 20_000_000
    path = _npz_with_text(tmp_path / "bomb.npz", base, "options", _json_bomb(n), 3 * n)
    result, rss = run_limited(f"from vit.train.checkpoint import load_checkpoint\n"
                              f"load_checkpoint({str(path)!r})")
    assert result.startswith("ValueError") and "characters" in result, result
    assert rss < 250_000, rss


def test_the_largest_rng_state_fits_the_text_bound():
    from vit.io.npz import MAX_TEXT_CHARS
    from vit.train.rngstate import rng_to_array
    text = str(rng_to_array(np.random.Generator(np.random.MT19937(2**127 - 1))))
    assert 4 * len(text) < MAX_TEXT_CHARS  # headroom for options and configs


# ---- member dtypes of itemsize 0, or not a kind the project writes --------------------------------
def _npz_member(path, descr, shape, data: bytes = b""):
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": descr, "fortran_order": False,
                                                "shape": shape})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("x.npy", head.getvalue() + data)
    return path


@pytest.mark.parametrize("descr, words", [  # a child process each: the first in the fast lane
    ("|S0", ["|S0", "itemsize 0"]),
    *(pytest.param(*case, marks=pytest.mark.slow) for case in [
        ("<U0", ["<U0", "itemsize 0"]), ("|V0", ["|V0", "itemsize 0"]),
        ([("a", "|V0")], ["itemsize 0"])]),
])
def test_an_itemsize_0_member_is_refused_before_allocation(tmp_path, descr, words):
    path = _npz_member(tmp_path / "z.npz", descr, (10**16,))
    result, rss = run_limited(f"from vit.io.npz import load_npz\nload_npz({str(path)!r})")
    assert result.startswith("ValueError"), result
    for w in words:
        assert w in result, result
    assert rss < 250_000, rss


@pytest.mark.parametrize("descr, data", [
    ("<c16", bytes(16)), ("|S4", b"abcd"), ("<M8[s]", bytes(8)), ("<m8[s]", bytes(8)),
    ([("a", "<f8")], bytes(8))], ids=["complex", "bytes", "datetime", "timedelta", "struct"])
def test_a_dtype_the_project_never_writes_is_refused(tmp_path, descr, data):
    from vit.io.npz import load_npz
    path = _npz_member(tmp_path / "k.npz", descr, (1,), data)
    with pytest.raises(ValueError) as info:
        load_npz(path)
    assert "x.npy" in str(info.value) and "expected" in str(info.value), str(info.value)


def test_a_string_array_that_is_not_0d_is_refused(tmp_path):
    from vit.io.npz import load_npz
    path = _npz_member(tmp_path / "s.npz", "<U1", (3,), "abc".encode("utf-32-le"))
    with pytest.raises(ValueError, match=r"shape \(3,\).*0-d string"):
        load_npz(path)


def test_what_the_project_writes_still_loads(tmp_path):
    from vit.io.npz import load_npz
    arrays = {"b": np.array([True]), "i": np.arange(3, dtype=np.int8), "u": np.array(7, np.uint64),
              "f": np.ones((2, 2), np.float16), "g": np.zeros(2, ">f8"), "t": np.array("{}")}
    np.savez(tmp_path / "ok.npz", **arrays)
    got = load_npz(tmp_path / "ok.npz")
    for k, v in arrays.items():
        assert got[k].dtype == v.dtype and np.array_equal(got[k], v)


# ---- sizes no array can have, files that are not zips ------------------------------------------
def test_an_empty_npz_shape_too_big_for_any_array_is_refused(tmp_path):
    from vit.io.npz import load_npz
    path = _npz_member(tmp_path / "e.npz", "<f8", (0, 2**40, 2**40))
    with pytest.raises(ValueError) as info:
        load_npz(path)
    assert "x.npy" in str(info.value) and "at most" in str(info.value), str(info.value)


def test_a_non_zip_file_is_refused_without_echoing_it(tmp_path):
    from vit.io.npz import load_npz
    secret = tmp_path / "passwd"
    secret.write_bytes(b"root:x:0:0:secret")
    with pytest.raises(ValueError) as info:
        load_npz(secret)
    message = str(info.value)
    assert "root" not in message.replace(str(tmp_path), "") and "zip" in message, message
