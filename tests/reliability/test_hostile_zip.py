"""Hostile zip structure in an .npz: the end-of-central-directory record (and its zip64
twins) is read and checked by ``vit.npz`` BEFORE ``zipfile`` parses the central directory,
which it does whole, one ZipInfo per entry: a million entries cost it seconds and about
400 MB. Entry counts, the directory's size and offset, the comment length and the zip64
records are each checked against the file and the member limit; every refusal is one
ValueError naming the file, from any loader and from the command line (exit 2, one line).

The zip structures are built here with struct, after PKWARE's APPNOTE.TXT section 4.3
(the good ones are also read by ``zipfile`` itself, which checks the builders).
"""
from __future__ import annotations

import io
import struct
import zipfile

import numpy as np
import pytest
from cli_util import run_cli
from hostile_util import run_limited

from vit.io import npz
from vit.io.npz import MAX_NPZ_MEMBERS, load_npz

# signature, disk, directory's disk, entries on this disk, entries, size, offset, comment
EOCD = struct.Struct("<4s4H2LH")
# signature, record size, made by, needed, disk, directory's disk, entries on this disk,
# entries, size, offset
ZIP64_END = struct.Struct("<4sQ2H2L4Q")
ZIP64_LOCATOR = struct.Struct("<4sLQL")  # signature, zip64 end disk, its offset, disks
CD_ENTRY = struct.Struct("<4s6H3L5H2L")  # fixed part of a central directory header (46 bytes)
LOCAL = struct.Struct("<4s5H3L2H")  # fixed part of a local file header (30 bytes)


def _npy(array) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def good_npz(path, **arrays) -> bytes:
    np.savez(path, **(arrays or {"x": np.arange(6.0).reshape(2, 3), "y": np.arange(3)}))
    return path.read_bytes()


def split_end(data: bytes) -> tuple[bytes, list]:
    """(everything before the end record, the end record's fields) of a comment-less zip."""
    return data[:-EOCD.size], list(EOCD.unpack(data[-EOCD.size:]))


def with_end(data: bytes, **change) -> bytes:
    """``data`` with fields of its end record replaced (and ``tail`` bytes appended)."""
    body, fields = split_end(data)
    names = ["sig", "disk", "cd_disk", "here", "total", "size", "offset", "comment"]
    for key, value in change.items():
        if key != "tail":
            fields[names.index(key)] = value
    return body + EOCD.pack(*fields) + change.get("tail", b"")


def as_zip64(data: bytes, **change) -> bytes:
    """A comment-less zip rewritten with a zip64 end record and locator (as zipfile writes
    past 65,535 entries), the plain record holding the 0xFFFF.. sentinels; ``change``
    replaces zip64 fields (``here``, ``total``, ``size``, ``offset``, ``record_size``,
    ``reloff``, ``disks``, ``sig64``) or sets the plain record's (``plain_total``, ...)."""
    body, (_, _, _, here, total, size, offset, _) = split_end(data)
    z = {"sig64": b"PK\x06\x06", "record_size": ZIP64_END.size - 12, "here": here,
         "total": total, "size": size, "offset": offset, "reloff": len(body), "disks": 1}
    z.update({k: v for k, v in change.items() if not k.startswith("plain_")})
    end64 = ZIP64_END.pack(z["sig64"], z["record_size"], 45, 45, 0, 0, z["here"], z["total"],
                           z["size"], z["offset"])
    locator = ZIP64_LOCATOR.pack(b"PK\x06\x07", 0, z["reloff"], z["disks"])
    plain = [b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0]
    for key, index in (("plain_here", 3), ("plain_total", 4), ("plain_size", 5),
                       ("plain_offset", 6)):
        if key in change:
            plain[index] = change[key]
    return body + end64 + locator + EOCD.pack(*plain)


def many_entries(path, entries: int, declared: int | None = None, zip64: bool = False):
    """One stored member ``x.npy`` and a central directory of ``entries`` headers all naming
    it (51 bytes each: a million take 51 MB, written in chunks); the end record declares
    ``declared`` entries (default: ``entries``; through a zip64 record if ``zip64``)."""
    data, name = _npy(np.zeros(1)), b"x.npy"
    local = LOCAL.pack(b"PK\x03\x04", 20, 0, 0, 0, 0, zipfile.crc32(data), len(data),
                       len(data), len(name), 0) + name + data
    entry = CD_ENTRY.pack(b"PK\x01\x02", 20, 20, 0, 0, 0, 0, zipfile.crc32(data), len(data),
                          len(data), len(name), 0, 0, 0, 0, 0, 0) + name
    declared = entries if declared is None else declared
    with open(path, "wb") as f:
        f.write(local)
        for start in range(0, entries, 10_000):
            f.write(entry * min(10_000, entries - start))
        size = len(entry) * entries
        if zip64:
            f.write(ZIP64_END.pack(b"PK\x06\x06", ZIP64_END.size - 12, 45, 45, 0, 0, declared,
                                   declared, size, len(local)))
            f.write(ZIP64_LOCATOR.pack(b"PK\x06\x07", 0, len(local) + size, 1))
            f.write(EOCD.pack(b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0))
        else:
            count = min(declared, 0xFFFF)
            f.write(EOCD.pack(b"PK\x05\x06", 0, 0, count, count, size, len(local), 0))
    return path


@pytest.fixture
def no_zipfile(monkeypatch):
    """zipfile.ZipFile made to fail the test: the refusal must come before it parses."""
    def reached(*args, **kwargs):
        raise AssertionError("zipfile.ZipFile was reached")
    monkeypatch.setattr(npz.zipfile, "ZipFile", reached)


def refused(path, match: str) -> str:
    with pytest.raises(ValueError) as info:
        load_npz(path)
    message = str(info.value)
    assert message.startswith(str(path) + ":"), message
    assert "\n" not in message and len(message) < 400, message
    assert match in message, message
    return message


# ---- good files still load -------------------------------------------------------------------
def test_good_files_still_load_including_zip64_and_a_comment(tmp_path):
    want = {"x": np.arange(6.0).reshape(2, 3), "y": np.arange(3)}
    data = good_npz(tmp_path / "good.npz", **want)
    commented = tmp_path / "comment.npz"
    commented.write_bytes(data)
    with zipfile.ZipFile(commented, "a") as zf:
        zf.comment = b"a comment, as any zip may carry"
    zip64 = tmp_path / "zip64.npz"
    zip64.write_bytes(as_zip64(data))
    with zipfile.ZipFile(zip64) as zf:  # the builder writes what zipfile reads
        assert sorted(zf.namelist()) == ["x.npy", "y.npy"]
    for path in (tmp_path / "good.npz", commented, zip64):
        got = load_npz(path)
        assert sorted(got) == ["x", "y"]
        for key in want:
            np.testing.assert_array_equal(got[key], want[key])
    empty = tmp_path / "empty.npz"
    np.savez(empty)
    assert load_npz(empty) == {}


@pytest.mark.slow  # fast: test_good_files_still_load_including_zip64_and_a_comment
def test_the_member_limit_itself_still_loads(tmp_path):
    path = tmp_path / "limit.npz"
    np.savez(path, **{f"a{i}": np.zeros(1, np.uint8) for i in range(MAX_NPZ_MEMBERS)})
    assert len(load_npz(path)) == MAX_NPZ_MEMBERS


# ---- too many entries: refused from the end record alone ---------------------------------------
def test_65535_declared_entries_are_refused_before_zipfile_parses(tmp_path, no_zipfile):
    path = many_entries(tmp_path / "many.npz", 0xFFFF)
    refused(path, f"65,535 members; expected at most {MAX_NPZ_MEMBERS:,}")


def test_five_million_entries_in_a_zip64_record_are_refused(tmp_path, no_zipfile):
    path = many_entries(tmp_path / "five-million.npz", 10, declared=5_000_000, zip64=True)
    refused(path, f"5,000,000 members; expected at most {MAX_NPZ_MEMBERS:,}")


def test_a_directory_holding_more_entries_than_declared_is_refused(tmp_path, no_zipfile):
    path = many_entries(tmp_path / "more.npz", 200_000, declared=10)
    refused(path, "more than the 10 entries")


def test_a_directory_holding_fewer_entries_than_declared_is_refused(tmp_path, no_zipfile):
    path = many_entries(tmp_path / "fewer.npz", 100, declared=200)
    refused(path, "100 entries")


def test_a_million_entries_cost_neither_time_nor_memory(tmp_path):
    """Under a 400 MB address space (zipfile alone would need more for the ZipInfo objects)."""
    path = many_entries(tmp_path / "million.npz", 1_000_000, zip64=True)
    result, _ = run_limited(f"from vit.io.npz import load_npz\nload_npz({str(path)!r})")
    assert result.startswith("ValueError") and "1,000,000 members" in result, result


# ---- malformed end records: one ValueError each, before zipfile ---------------------------------
def _cases(data: bytes) -> dict:
    n = len(data)
    return {
        "counts-disagree": with_end(data, here=1),
        "second-disk": with_end(data, disk=1),
        "directory-on-another-disk": with_end(data, cd_disk=3),
        "offset-past-the-end": with_end(data, offset=n + 10),
        "offset-huge": with_end(data, offset=0xFFFFFFFE),
        "size-past-the-end": with_end(data, size=n),
        "size-huge": with_end(data, size=0xFFFFFFFE),
        "size-short-of-the-end-record": with_end(data, size=split_end(data)[1][5] - 1),
        "comment-past-the-end": with_end(data, comment=100),
        "comment-longer-than-held": with_end(data, comment=40, tail=b"c" * 39),
        "junk-after-the-end-record": with_end(data, tail=b"\x00" * 7),
        "no-end-record": data[:-EOCD.size],
        "end-record-cut": data[:-5],
        "zip64-entries-absurd": as_zip64(data, here=2**64 - 1, total=2**64 - 1),
        "zip64-counts-disagree": as_zip64(data, here=1),
        "zip64-size-absurd": as_zip64(data, size=2**63),
        "zip64-offset-absurd": as_zip64(data, offset=2**64 - 1),
        "zip64-record-size-absurd": as_zip64(data, record_size=2**64 - 1),
        "zip64-locator-points-elsewhere": as_zip64(data, reloff=3),
        "zip64-locator-points-past-the-end": as_zip64(data, reloff=2**63),
        "zip64-many-disks": as_zip64(data, disks=7),
        "zip64-record-missing": as_zip64(data, sig64=b"PK\x00\x00"),
        "zip64-disagrees-with-plain-record": as_zip64(data, plain_total=1),
    }


def test_every_malformed_end_record_is_one_value_error_before_zipfile(tmp_path, monkeypatch):
    cases = _cases(good_npz(tmp_path / "good.npz"))
    called = []
    real = zipfile.ZipFile
    monkeypatch.setattr(npz.zipfile, "ZipFile", lambda *a, **k: called.append(1) or real(*a, **k))
    for name, content in cases.items():
        path = tmp_path / f"{name}.npz"
        path.write_bytes(content)
        with pytest.raises(ValueError) as info:
            load_npz(path)
        message = str(info.value)
        assert message.startswith(f"{path}: "), (name, message)
        assert "\n" not in message and len(message) < 400, (name, message)
        assert not called, (name, message)


# ---- the command line: exit 2, one line ----------------------------------------------------------
def test_the_command_line_refuses_a_hostile_zip_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    hostile = many_entries(tmp_path / "hostile.npz", 10, declared=5_000_000, zip64=True)
    np.save(tmp_path / "image.npy", np.zeros((8, 8)))
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoint.npz").write_bytes(hostile.read_bytes())
    for args in (["eval", hostile], ["predict", hostile, tmp_path / "image.npy"],
                 ["train", "--data", hostile, "--epochs", "1", "--quiet", "--out", "fresh"],
                 ["train", "--out", run, "--resume", "--quiet"]):
        status, out, err = run_cli(args, capsys)
        assert status == 2, (args, status, err)
        assert err.count("\n") == 1 and "Traceback" not in err, (args, err)
        assert "5,000,000 members" in err, (args, err)
