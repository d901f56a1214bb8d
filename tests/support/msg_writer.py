"""Outlook .msg files written for the tests: no library installed here writes one (olefile reads
compound files, nothing writes MAPI messages), so the tests of `mail.read_msg` build theirs here.

Two formats, each kept to what a valid file needs:

- MS-CFB (Compound File Binary), version 3: 512-byte sectors chained by a FAT, a directory of
  128-byte entries whose siblings form a red-black tree, and a mini stream (64-byte sectors
  chained by the mini FAT) holding every stream under the 4096-byte cutoff, as the format requires.
- MS-OXMSG: a message's properties, strings and binary values as `__substg1.0_<tag>` streams and
  fixed-size values (times, integers) as 16-byte entries of `__properties_version1.0`, which also
  gives each variable-size property's size; attachments as `__attach_version1.0_#<n>` storages.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

# -- MS-CFB

_SECTOR = 512
_MINI_SECTOR = 64
_MINI_CUTOFF = 4096        # streams under this many bytes live in the mini stream
_FREE, _END, _FAT = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD
_NO_STREAM = 0xFFFFFFFF
_STORAGE, _STREAM, _ROOT = 1, 2, 5
_RED, _BLACK = 0, 1
_IDS_PER_SECTOR = _SECTOR // 4
_HEADER_FAT_SLOTS = 109    # FAT sector numbers the header holds; more would need DIFAT sectors

Tree = Mapping[str, "bytes | Tree"]   # a storage: names to streams (bytes) and storages


@dataclass
class _Entry:
    name: str
    kind: int
    data: bytes = b""
    left: int = _NO_STREAM
    right: int = _NO_STREAM
    child: int = _NO_STREAM
    color: int = _BLACK
    start: int = 0


def cfb_bytes(tree: Tree) -> bytes:
    """A compound file holding `tree` under its root storage."""
    entries = [_Entry("Root Entry", _ROOT)]

    def add(name: str, node: bytes | Tree) -> int:
        assert len(name) <= 31, name   # 32 UTF-16 code units with the terminating NUL
        entries.append(_Entry(name, _STREAM, node) if isinstance(node, bytes) else _Entry(name, _STORAGE))
        index = len(entries) - 1
        if not isinstance(node, bytes):
            entries[index].child = _siblings(entries, [add(n, v) for n, v in node.items()])
        return index

    entries[0].child = _siblings(entries, [add(n, v) for n, v in tree.items()])

    fat: list[int] = []
    body = bytearray()

    def chain(data: bytes, table: list[int], out: bytearray, size: int) -> int:
        """Appends `data` in whole sectors of `size` chained in `table`; its first sector
        (ENDOFCHAIN for no data)."""
        if not data:
            return _END
        first, count = len(table), -(-len(data) // size)
        out += data.ljust(count * size, b"\0")
        table.extend([*range(first + 1, first + count), _END])
        return first

    mini_fat: list[int] = []
    mini = bytearray()
    for entry in entries[1:]:
        if entry.kind == _STREAM:
            small = len(entry.data) < _MINI_CUTOFF
            entry.start = chain(entry.data, mini_fat if small else fat, mini if small else body,
                                _MINI_SECTOR if small else _SECTOR)
    entries[0].data = bytes(mini)    # the root entry's stream is the mini stream
    entries[0].start = chain(entries[0].data, fat, body, _SECTOR)
    mini_fat_start = chain(_ids(mini_fat), fat, body, _SECTOR)
    entries += [_Entry("", 0, color=_RED)] * (-len(entries) % (_SECTOR // 128))   # unused: all zero
    directory_start = chain(b"".join(_entry_bytes(e) for e in entries), fat, body, _SECTOR)

    # The FAT's own sectors go last and are marked in the FAT: enough of them to cover themselves.
    fat_sectors = -(-len(fat) // (_IDS_PER_SECTOR - 1))
    assert fat_sectors <= _HEADER_FAT_SLOTS, "file too large for a header-only DIFAT"
    fat_ids = list(range(len(fat), len(fat) + fat_sectors))
    fat += [_FAT] * fat_sectors
    body += _ids(fat)
    header = struct.pack(
        "<8s16sHHHHH6sIIIIIIIII", bytes.fromhex("D0CF11E0A1B11AE1"), b"", 0x003E, 0x0003, 0xFFFE,
        9, 6, b"",                         # sector shift (2^9 = 512), mini sector shift (2^6 = 64)
        0, fat_sectors, directory_start, 0, _MINI_CUTOFF,
        mini_fat_start, -(-len(mini_fat) // _IDS_PER_SECTOR), _END, 0)
    header += struct.pack(f"<{_HEADER_FAT_SLOTS}I", *fat_ids, *[_FREE] * (_HEADER_FAT_SLOTS - fat_sectors))
    return header + bytes(body)


def _ids(values: list[int]) -> bytes:
    """Sector numbers as whole 512-byte sectors, the rest free (FREESECT is all ones)."""
    return struct.pack(f"<{len(values)}I", *values).ljust(-(-len(values) // _IDS_PER_SECTOR) * _SECTOR, b"\xff")


def _siblings(entries: list[_Entry], ids: list[int]) -> int:
    """The children of one storage as a red-black tree; its root. Names order by length, then by
    their upper case (MS-CFB 2.6.4). The tree is balanced by halving, so every path down to a leaf
    has as many black nodes when the deepest level alone is red."""
    ordered = sorted(ids, key=lambda i: (len(entries[i].name), entries[i].name.upper()))
    deepest = len(ordered).bit_length() - 1

    def build(low: int, high: int, depth: int) -> int:
        if low >= high:
            return _NO_STREAM
        middle = (low + high) // 2
        node = entries[ordered[middle]]
        node.left, node.right = build(low, middle, depth + 1), build(middle + 1, high, depth + 1)
        node.color = _RED if depth == deepest and depth > 0 else _BLACK
        return ordered[middle]

    return build(0, len(ordered), 0)


def _entry_bytes(entry: _Entry) -> bytes:
    name = entry.name.encode("utf-16-le") + b"\0\0" if entry.name else b""
    start = entry.start if entry.kind != _STORAGE else 0
    return struct.pack("<64sHBBIII16sIQQIQ", name, len(name), entry.kind, entry.color, entry.left,
                       entry.right, entry.child, b"", 0, 0, 0, start, len(entry.data))


# -- MS-OXMSG

PT_LONG, PT_SYSTIME, PT_STRING8, PT_UNICODE, PT_BINARY = 0x0003, 0x0040, 0x001E, 0x001F, 0x0102
_READABLE_WRITABLE = 0x2 | 0x4
_FILETIME_EPOCH = datetime(1601, 1, 1, tzinfo=UTC)

# Property tags (id << 16 | type) of what a test message carries.
SUBJECT = 0x0037001F
CLIENT_SUBMIT_TIME = 0x00390040
MESSAGE_CLASS = 0x001A001F
TRANSPORT_HEADERS = 0x007D001F
SENDER_NAME = 0x0C1A001F
SENDER_ADDRESS_TYPE = 0x0C1E001F
SENDER_EMAIL = 0x0C1F001F
SENDER_SMTP = 0x5D01001F
DISPLAY_TO = 0x0E04001F
DELIVERY_TIME = 0x0E060040
BODY = 0x1000001F
HTML = 0x10130102
INTERNET_CPID = 0x3FDE0003   # the Windows code page of HTML
MESSAGE_CODEPAGE = 0x3FFD0003   # the Windows code page of 8-bit strings (PT_STRING8)
ATTACH_NUM = 0x0E210003
ATTACH_DATA = 0x37010102
ATTACH_SHORT_NAME = 0x3704001F
ATTACH_METHOD = 0x37050003
ATTACH_LONG_NAME = 0x3707001F
_ATTACH_BY_VALUE = 1


@dataclass
class Message:
    """What a generated .msg says; `properties` adds or replaces any property by its tag."""

    subject: str = "Eelgrass survey"
    body: str | None = "Hello team,\r\n\r\nThe survey is on.\r\n"
    html: bytes | None = None
    sender: tuple[str, str] = ("Dana Ortiz", "dana@example.org")
    to: str = "Field Team"
    sent: datetime | None = None
    attachments: Sequence[tuple[str, bytes]] = ()
    properties: Mapping[int, object] = field(default_factory=dict)


def msg_bytes(message: Message) -> bytes:
    """`message` as an Outlook .msg file."""
    name, address = message.sender
    props: dict[int, object] = {MESSAGE_CLASS: "IPM.Note", SUBJECT: message.subject, SENDER_NAME: name,
                                SENDER_ADDRESS_TYPE: "SMTP", SENDER_EMAIL: address, SENDER_SMTP: address,
                                DISPLAY_TO: message.to, BODY: message.body, HTML: message.html,
                                CLIENT_SUBMIT_TIME: message.sent, DELIVERY_TIME: message.sent}
    props.update(message.properties)
    count = len(message.attachments)
    # The top-level header: 8 reserved bytes, the next recipient and attachment ids, the recipient
    # and attachment counts, 8 reserved bytes (MS-OXMSG 2.4.1.1). This message has no recipients.
    tree: dict[str, bytes | Tree] = _property_streams(props, struct.pack("<8xIIII8x", 0, count, 0, count))
    # Named properties' mapping: required in every message, empty when it names none.
    tree["__nameid_version1.0"] = {f"__substg1.0_000{n}0102": b"" for n in (2, 3, 4)}
    for number, (filename, data) in enumerate(message.attachments):
        tree[f"__attach_version1.0_#{number:08X}"] = _property_streams(
            {ATTACH_NUM: number, ATTACH_METHOD: _ATTACH_BY_VALUE, ATTACH_LONG_NAME: filename,
             ATTACH_SHORT_NAME: _short_name(filename), ATTACH_DATA: data}, bytes(8))   # 8 reserved bytes
    return cfb_bytes(tree)


def _property_streams(props: Mapping[int, object], header: bytes) -> dict[str, bytes | Tree]:
    """A property stream (after `header`, one 16-byte entry per property: tag, flags, then the
    value when it fits in 8 bytes, else its size) and a stream for each variable-size value."""
    streams: dict[str, bytes | Tree] = {}
    entries = [header]
    for tag, value in props.items():
        if value is None:
            continue
        kind = tag & 0xFFFF
        if kind in (PT_UNICODE, PT_STRING8, PT_BINARY):
            # an 8-bit string is given as its bytes, already in the message's code page
            data = value.encode("utf-16-le") if isinstance(value, str) else bytes(value)  # type: ignore[arg-type]
            streams[f"__substg1.0_{tag:08X}"] = data
            # a string's size counts the terminating NUL the stream leaves out
            fixed = struct.pack("<II", len(data) + {PT_UNICODE: 2, PT_STRING8: 1}.get(kind, 0), 0)
        elif kind == PT_SYSTIME:   # a FILETIME: 100 ns since 1601; an int is written as it is
            if isinstance(value, datetime):
                value = (value - _FILETIME_EPOCH) // timedelta(microseconds=1) * 10
            fixed = struct.pack("<Q", value)
        elif kind == PT_LONG:
            fixed = struct.pack("<iI", value, 0)
        else:
            raise ValueError(f"property type {kind:04X} is not written here")
        entries.append(struct.pack("<II", tag, _READABLE_WRITABLE) + fixed)
    streams["__properties_version1.0"] = b"".join(entries)
    return streams


def _short_name(filename: str) -> str:
    """The 8.3 name Outlook also gives an attachment."""
    stem, dot, suffix = filename.rpartition(".")
    return f"{stem[:8]}.{suffix[:3]}" if dot else filename[:8]
