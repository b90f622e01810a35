"""The JSONL log survives crashes: fsync per write, torn lines repaired, atomic compaction."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from langmem_tiers.errors import BackendError
from langmem_tiers.short_term import jsonl_log
from langmem_tiers.short_term.jsonl_log import JsonlMessageLog, session_file_name
from langmem_tiers.short_term.records import MessageDraft, draft_from_message


def drafts(*texts: str) -> list[MessageDraft]:
    return [draft_from_message(HumanMessage(t), index=i) for i, t in enumerate(texts)]


def texts(log: JsonlMessageLog, session: str = "s1") -> list[str]:
    return [r.text for r in log.read(session)]


def test_every_write_is_fsynced_before_the_call_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    log = JsonlMessageLog(tmp_path)
    log.append("s1", drafts("a"))
    first = len(synced)
    assert first >= 2  # the file, and the directory entry of the new file
    log.append("s1", drafts("b"))
    log.remove("s1", ["m1"])
    assert len(synced) == first + 2


def test_file_format_is_one_json_object_per_line(tmp_path: Path) -> None:
    log = JsonlMessageLog(tmp_path)
    log.append("s1", drafts("a", "b"))
    log.set_tier_level("s1", "m1", 2)
    log.remove("s1", ["m2"], reason="consolidated")
    lines = log.path_for("s1").read_text("utf-8").splitlines()
    entries = [json.loads(line) for line in lines]
    assert [e["op"] for e in entries] == ["header", "append", "level", "remove"]
    assert entries[0]["format"] == jsonl_log.FORMAT
    assert entries[0]["session_id"] == "s1"
    assert [m["id"] for m in entries[1]["messages"]] == ["m1", "m2"]
    assert entries[3]["ids"] == ["m2"]
    assert entries[3]["reason"] == "consolidated"


def test_torn_last_line_is_moved_to_a_sidecar_and_the_file_repaired(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = JsonlMessageLog(tmp_path)
    log.append("s1", drafts("a", "b"))
    log.append("s1", drafts("c"))
    path = log.path_for("s1")
    whole = path.read_bytes()
    torn = b'{"op":"append","messages":[{"id":"m4","seq":4,"role":"hu'
    with open(path, "ab") as handle:  # a crash in the middle of the next write
        handle.write(torn)

    with caplog.at_level(logging.WARNING, logger=jsonl_log.__name__):
        reopened = JsonlMessageLog(tmp_path)
        assert texts(reopened) == ["a", "b", "c"]
    assert path.read_bytes() == whole
    assert Path(str(path) + ".torn").read_bytes() == torn + b"\n"
    assert any("torn" in r.getMessage() for r in caplog.records)
    # Ids continue after the last acknowledged message, and the file stays readable.
    assert [r.id for r in reopened.append("s1", drafts("d"))] == ["m4"]
    assert texts(JsonlMessageLog(tmp_path)) == ["a", "b", "c", "d"]


def test_a_whole_record_missing_only_its_newline_is_kept(tmp_path: Path) -> None:
    log = JsonlMessageLog(tmp_path)
    log.append("s1", drafts("a"))
    path = log.path_for("s1")
    record = drafts("b")[0].to_record(seq=2)
    with open(path, "ab") as handle:  # the crash came just before the newline
        handle.write(json.dumps({"op": "append", "messages": [record.to_json()]}).encode())
    reopened = JsonlMessageLog(tmp_path)
    assert texts(reopened) == ["a", "b"]
    assert path.read_bytes().endswith(b"\n")
    assert not Path(str(path) + ".torn").exists()
    assert [r.id for r in reopened.append("s1", drafts("c"))] == ["m3"]


def test_a_zero_filled_tail_is_treated_as_torn(tmp_path: Path) -> None:
    log = JsonlMessageLog(tmp_path)
    log.append("s1", drafts("a"))
    with open(log.path_for("s1"), "ab") as handle:
        handle.write(b"\x00" * 64)
    assert texts(JsonlMessageLog(tmp_path)) == ["a"]


def test_a_corrupt_complete_line_is_an_error_not_silently_skipped(tmp_path: Path) -> None:
    log = JsonlMessageLog(tmp_path)
    log.append("s1", drafts("a"))
    with open(log.path_for("s1"), "ab") as handle:
        handle.write(b"not json\n")
    with pytest.raises(BackendError, match="line 3"):
        JsonlMessageLog(tmp_path).read("s1")


def test_a_failed_write_acknowledges_nothing_and_leaves_a_readable_file(
    tmp_path: Path,
) -> None:
    class CrashingLog(JsonlMessageLog):
        crash = False

        def _write_bytes(self, path: Path, data: bytes) -> None:
            if self.crash:
                with open(path, "ab") as handle:
                    handle.write(data[: len(data) // 2])
                raise OSError(28, "No space left on device")
            super()._write_bytes(path, data)

    log = CrashingLog(tmp_path)
    log.append("s1", drafts("kept 1", "kept 2"))
    log.crash = True
    with pytest.raises(BackendError, match="Nothing of this batch was acknowledged"):
        log.append("s1", drafts("lost"))
    log.crash = False
    assert texts(log) == ["kept 1", "kept 2"]
    assert [r.id for r in log.append("s1", drafts("after"))] == ["m3"]
    assert texts(JsonlMessageLog(tmp_path)) == ["kept 1", "kept 2", "after"]


def test_compaction_rewrites_atomically_and_keeps_the_id_counter(tmp_path: Path) -> None:
    log = JsonlMessageLog(tmp_path, compact_min_lines=8)
    for i in range(10):
        log.append("s1", drafts(f"msg {i}"))
    log.remove("s1", [f"m{i}" for i in range(1, 9)])  # 8 removed, 2 live: compacts
    path = log.path_for("s1")
    assert len(path.read_bytes().splitlines()) == 2
    reopened = JsonlMessageLog(tmp_path)
    assert texts(reopened) == ["msg 8", "msg 9"]
    assert reopened.next_id("s1") == "m11"
    reopened.clear("s1")
    reopened.compact("s1")
    assert JsonlMessageLog(tmp_path).next_id("s1") == "m11"


def test_a_crash_during_compaction_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = JsonlMessageLog(tmp_path)
    log.append("s1", drafts("a", "b", "c"))
    log.remove("s1", ["m1", "m2"])
    before = log.path_for("s1").read_bytes()

    def crash(src: object, dst: object) -> None:
        raise OSError("power cut")

    monkeypatch.setattr(os, "replace", crash)
    log.compact("s1")
    monkeypatch.undo()
    assert log.path_for("s1").read_bytes() == before
    assert not list(tmp_path.glob("*.compact-tmp"))
    assert texts(JsonlMessageLog(tmp_path)) == ["c"]


def test_a_leftover_temporary_file_is_ignored_and_removed(tmp_path: Path) -> None:
    log = JsonlMessageLog(tmp_path)
    log.append("s1", drafts("a"))
    leftover = Path(str(log.path_for("s1")) + ".compact-tmp")
    leftover.write_bytes(b'{"op":"header"')
    assert texts(JsonlMessageLog(tmp_path)) == ["a"]
    assert not leftover.exists()


def test_two_log_objects_on_one_directory_see_each_others_writes(tmp_path: Path) -> None:
    first, second = JsonlMessageLog(tmp_path), JsonlMessageLog(tmp_path)
    first.append("s1", drafts("a"))
    assert [r.id for r in second.append("s1", drafts("b"))] == ["m2"]
    assert texts(first) == ["a", "b"]
    second.set_tier_level("s1", "m1", 3)
    assert first.read("s1")[0].required_tier_level == 3


def test_session_ids_become_safe_distinct_file_names(tmp_path: Path) -> None:
    names = {
        session_file_name(s) for s in ["a/b", "a%2Fb", "../x", ".hidden", "a b", "é", "x" * 400]
    }
    assert len(names) == 7
    for name in names:
        assert "/" not in name
        assert not name.startswith(".")
        assert len(name) < 200
    log = JsonlMessageLog(tmp_path)
    log.append("../../escape", drafts("a"))
    assert [p.parent for p in tmp_path.glob("*.jsonl")] == [tmp_path]


def _fixed(text: str) -> list[MessageDraft]:
    # A fixed timestamp, so files of the same shape have the same size.
    at = "2026-01-01T00:00:00.000001+00:00"
    return [draft_from_message(HumanMessage(text), index=0, created_at=at)]


def _compact_into_the_same_inode(log: JsonlMessageLog, session: str) -> None:
    """Compact as another process would, ending on the file's old inode (ext4 reuses it)."""
    path = log.path_for(session)
    keep = path.with_name("old-inode")
    os.link(path, keep)  # holds the inode a compaction frees, as the file system may reuse it
    log.compact(session)
    with open(keep, "r+b") as handle:  # the compacted bytes, now in the old inode
        handle.write(path.read_bytes())
        handle.truncate()
    os.replace(keep, path)


def test_a_file_replaced_by_another_writer_is_read_again_even_with_the_same_inode_and_size(
    tmp_path: Path,
) -> None:
    mine, other = JsonlMessageLog(tmp_path), JsonlMessageLog(tmp_path)
    mine.append("s1", _fixed("msg 1"))
    assert texts(mine) == ["msg 1"]
    before = os.stat(mine.path_for("s1"))
    other.append("s1", _fixed("msg 2"))
    other.remove("s1", ["m1"])
    _compact_into_the_same_inode(other, "s1")
    after = os.stat(mine.path_for("s1"))
    assert (after.st_ino, after.st_size) == (before.st_ino, before.st_size)
    assert texts(mine) == ["msg 2"]
    assert [r.id for r in mine.append("s1", _fixed("msg 3"))] == ["m3"], "an id was reused"


def test_a_replaced_file_that_grew_is_not_taken_for_a_corrupt_one(tmp_path: Path) -> None:
    mine, other = JsonlMessageLog(tmp_path), JsonlMessageLog(tmp_path)
    mine.append("s1", _fixed("msg 1"))
    assert texts(mine) == ["msg 1"]
    other.append("s1", _fixed("a longer message 2"))
    other.remove("s1", ["m1"])
    _compact_into_the_same_inode(other, "s1")
    other.append("s1", _fixed("msg 3"))
    assert texts(mine) == ["a longer message 2", "msg 3"]
    assert [r.id for r in mine.append("s1", _fixed("msg 4"))] == ["m4"]


def test_a_file_from_before_file_ids_is_read_and_given_one(tmp_path: Path) -> None:
    record = _fixed("old message")[0].to_record(seq=1)
    old_header = {"op": "header", "format": jsonl_log.FORMAT, "version": 1,
                  "session_id": "s1", "last_seq": 0}  # fmt: skip
    path = tmp_path / session_file_name("s1")
    lines = [old_header, {"op": "append", "messages": [record.to_json()]}]
    path.write_bytes(b"".join(json.dumps(e).encode() + b"\n" for e in lines))
    log = JsonlMessageLog(tmp_path)
    assert texts(log) == ["old message"]
    header = json.loads(path.read_bytes().splitlines()[0])
    assert isinstance(header["file_id"], str)
    assert header["last_seq"] == 1
    assert [r.id for r in log.append("s1", drafts("new"))] == ["m2"]
    assert texts(JsonlMessageLog(tmp_path)) == ["old message", "new"]


def test_messages_written_out_of_order_are_read_in_id_order(tmp_path: Path) -> None:
    records = [
        d.to_record(seq=seq) for d, seq in zip(drafts("c", "a", "b"), (3, 1, 2), strict=True)
    ]
    header = {"op": "header", "format": jsonl_log.FORMAT, "version": 1,
              "session_id": "s1", "last_seq": 0}  # fmt: skip
    lines = [header, *({"op": "append", "messages": [r.to_json()]} for r in records)]
    path = tmp_path / session_file_name("s1")
    path.write_bytes(b"".join(json.dumps(e).encode() + b"\n" for e in lines))
    log = JsonlMessageLog(tmp_path)
    assert texts(log) == ["a", "b", "c"]
    assert [r.id for r in log.append("s1", drafts("d"))] == ["m4"]
    assert texts(log) == ["a", "b", "c", "d"]


def test_each_compaction_gives_the_file_a_new_id_and_generation(tmp_path: Path) -> None:
    log = JsonlMessageLog(tmp_path)
    log.append("s1", drafts("a", "b"))

    def header() -> dict[str, object]:
        return dict(json.loads(log.path_for("s1").read_bytes().splitlines()[0]))

    first = header()
    assert first["generation"] == 0
    log.compact("s1")
    second = header()
    assert second["generation"] == 1
    assert second["file_id"] != first["file_id"]


@pytest.mark.parametrize(
    ("session_id", "name"),
    [
        ("sessA", "sessA.jsonl"),
        ("Alice", "Alice.jsonl"),
        ("alice@example.com", "alice@example.com.jsonl"),
        ("user-42_chat.v2+x", "user-42_chat.v2+x.jsonl"),
        ("a/b", "a%2Fb.jsonl"),
        ("a%2Fb", "a%252Fb.jsonl"),
        ("..", "%2E..jsonl"),
        ("a b", "a%20b.jsonl"),
        ("é", "%C3%A9.jsonl"),
        ("NUL", "%4EUL.jsonl"),
        ("com1.txt", "%63om1.txt.jsonl"),
        ("c:\\x", "c%3A%5Cx.jsonl"),
    ],
)
def test_a_session_file_is_named_after_its_id_when_that_is_a_safe_name(
    session_id: str, name: str
) -> None:
    assert session_file_name(session_id) == name


def test_a_file_with_the_earlier_name_is_found_and_renamed(tmp_path: Path) -> None:
    log = JsonlMessageLog(tmp_path)
    log.append("sessA", drafts("before the upgrade"))
    log.path_for("sessA").rename(tmp_path / "sess%41.jsonl")  # as earlier versions named it
    (tmp_path / "sess%41.lock").touch()
    reopened = JsonlMessageLog(tmp_path)
    assert texts(reopened, "sessA") == ["before the upgrade"]
    assert sorted(p.name for p in tmp_path.glob("*.jsonl")) == ["sessA.jsonl"]
    assert not (tmp_path / "sess%41.lock").exists()
    assert [r.id for r in reopened.append("sessA", drafts("after"))] == ["m2"]
    assert texts(JsonlMessageLog(tmp_path), "sessA") == ["before the upgrade", "after"]
