"""Mail: messages (.eml, .mbox, Outlook .msg) as documents, their attachments as child documents.

The reader (`expand_mail`) turns a mail file into one row per message and one per attachment,
like an archive's members and under the same caps: a message is dated by its `Date` header, its
`Subject` is its title, and in an mbox its path names its thread (`inbox.mbox!<thread>/<message>.eml`,
the thread being the first message its `References` or `In-Reply-To` headers lead back to), so a
thread stays together. `message_markdown` converts one message: its headers as front matter
(`from` is its author), the subject as heading, then the body: text/plain where there is one,
else its HTML through markitdown.

Messages are parsed by Python's `email` package. An mbox is split here rather than by
`mailbox.mbox`, which needs a path on disk: an mbox stored in the object store, or a member of
an archive, is bytes, and nothing is ever written to disk; the split is the mbox format's own
rule (a message starts at a line beginning `From `). `.msg` files are read with olefile.
"""

from __future__ import annotations

import codecs
import email
import email.policy
import email.utils
import io
import json
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.parser import BytesHeaderParser
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, BinaryIO

from pipeline import records
from pipeline.documents.mime import mime_for

if TYPE_CHECKING:
    from pipeline.documents.walk import SourceOptions

Row = dict[str, Any]

MESSAGE = "message/rfc822"
MBOX = "application/mbox"
OUTLOOK = "application/vnd.ms-outlook"
_MAIL_FILES = {".eml": MESSAGE, ".mbox": MBOX, ".msg": OUTLOOK}

# Header lines read to tell a message from text that is not one: a message has at least one.
_MESSAGE_HEADERS = ("from", "to", "date", "subject", "message-id")
_ID = re.compile(r"<([^<>\s]+)>")
_UNSAFE_NAME = re.compile(r"[^\w.@+=-]+")
_NAME_MAX = 120


class MailError(ValueError):
    """A message cannot be read; the message says why."""


def is_mail(filename: str) -> bool:
    """True for the mail files the reader expands into messages and attachments."""
    return PurePosixPath(filename.lower()).suffix in _MAIL_FILES


# -- one message


def parse(content: bytes) -> EmailMessage:
    """The message in `content`; `MailError` when it has no header a message has."""
    nul = content.find(b"\x00", 0, 65536)
    if nul >= 0:
        raise MailError(f"malformed message: binary content (NUL at byte {nul})")
    message = email.message_from_bytes(content, policy=email.policy.default)
    if not any(message.get(h) for h in _MESSAGE_HEADERS):
        raise MailError("malformed message: none of the headers From, To, Date, Subject, Message-ID")
    return message  # type: ignore[return-value]


def header(message: EmailMessage, name: str) -> str:
    try:
        value = message.get(name)
    except (ValueError, IndexError, TypeError):  # a header the parser cannot decode
        return ""
    return " ".join(str(value).split()) if value is not None else ""


def sent_at(message: EmailMessage) -> datetime | None:
    """The `Date` header in UTC; None when absent, unreadable, or without a zone (`-0000` says the
    zone is unknown: precision is never faked)."""
    raw = header(message, "date")
    if not raw:
        return None
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return when.astimezone(UTC)


def message_ids(value: str) -> list[str]:
    return _ID.findall(value or "")


def thread_root(message: EmailMessage) -> str | None:
    """The first message of its thread that its headers name, or None when it starts one."""
    references = message_ids(header(message, "references"))
    if references:
        return references[0]
    parent = message_ids(header(message, "in-reply-to"))
    return parent[0] if parent else None


def body_text(message: EmailMessage) -> str:
    """text/plain where there is one, else the HTML converted by markitdown; "" when neither."""
    try:
        part = message.get_body(preferencelist=("plain", "html"))
        if part is None:
            return ""
        content = part.get_content()
    except (LookupError, ValueError, KeyError, AssertionError) as err:
        raise MailError(f"malformed message: its body cannot be decoded ({type(err).__name__}: {err})") from None
    if isinstance(content, bytes):
        content = content.decode("utf-8", "replace")
    if part.get_content_subtype() == "html":
        return html_to_markdown(content)
    return content


def html_to_markdown(html: str) -> str:
    from markitdown import StreamInfo
    from markitdown.converters import HtmlConverter

    info = StreamInfo(mimetype="text/html", extension=".html", charset="utf-8")
    return HtmlConverter().convert(io.BytesIO(html.encode("utf-8")), info).markdown


def attachment_names(message: EmailMessage) -> list[str]:
    return [name for name, _ in attachments(message)]


def attachments(message: EmailMessage) -> list[tuple[str, Callable[[], bytes]]]:
    """(safe unique name, a reader of its bytes) of each attachment, in message order."""
    found: list[tuple[str, Callable[[], bytes]]] = []
    seen: set[str] = set()
    for index, part in enumerate(message.iter_attachments(), start=1):
        name = _safe_name(part.get_filename() or "", part.get_content_type(), index)
        name = _unique(name, seen)

        def read(part: Any = part) -> bytes:
            if part.get_content_type() == MESSAGE:
                inner = part.get_payload()
                return (inner[0] if isinstance(inner, list) else inner).as_bytes()
            got = part.get_payload(decode=True)
            return got if isinstance(got, bytes) else str(part.get_payload()).encode("utf-8")
        found.append((name, read))
    return found


def _safe_name(name: str, content_type: str, index: int) -> str:
    name = PurePosixPath(name.replace("\\", "/")).name.strip()
    if not name or name in (".", ".."):
        extension = ".eml" if content_type == MESSAGE else ""
        name = f"attachment-{index}{extension}"
    return name[:_NAME_MAX]


def _unique(name: str, seen: set[str]) -> str:
    candidate, number = name, 1
    while candidate.lower() in seen:
        number += 1
        stem, suffix = PurePosixPath(name).stem, PurePosixPath(name).suffix
        candidate = f"{stem} ({number}){suffix}"
    seen.add(candidate.lower())
    return candidate


@dataclass(frozen=True)
class Envelope:
    """What a message says about itself, as its document's front matter shows it."""

    subject: str
    author: str
    to: str = ""
    cc: str = ""
    date: datetime | None = None
    message_id: str = ""
    in_reply_to: str = ""
    thread: str = ""
    attachments: tuple[str, ...] = field(default_factory=tuple)

    def front_matter(self) -> str:
        fields = [("author", self.author), ("to", self.to), ("cc", self.cc),
                  ("date", self.date.isoformat().replace("+00:00", "Z") if self.date else ""),
                  ("subject", self.subject), ("message_id", self.message_id),
                  ("in_reply_to", self.in_reply_to), ("thread", self.thread)]
        lines = [f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in fields if v]
        if self.attachments:
            lines.append(f"attachments: {json.dumps(list(self.attachments), ensure_ascii=False)}")
        return "---\n" + "\n".join(lines) + "\n---"


def envelope(message: EmailMessage) -> Envelope:
    own = message_ids(header(message, "message-id"))
    parent = message_ids(header(message, "in-reply-to"))
    root = thread_root(message)
    return Envelope(subject=header(message, "subject"), author=header(message, "from"),
                    to=header(message, "to"), cc=header(message, "cc"), date=sent_at(message),
                    message_id=own[0] if own else "", in_reply_to=parent[0] if parent else "",
                    thread=root or (own[0] if own else ""), attachments=tuple(attachment_names(message)))


def render(envelope: Envelope, body: str) -> str:
    """A message as Markdown: front matter, the subject as heading, the body."""
    heading = f"# {envelope.subject}" if envelope.subject else "# (no subject)"
    body = body.replace("\r\n", "\n").replace("\r", "\n").strip()
    return "\n\n".join(part for part in (envelope.front_matter(), heading, body) if part)


def message_markdown(content: bytes) -> str:
    message = parse(content)
    return render(envelope(message), body_text(message))


def mbox_markdown(content: bytes) -> str:
    """An mbox read whole (a member of an archive, or stored bytes): every message in turn, each
    under its subject. A message that cannot be read fails the document, naming it."""
    parts = []
    for number, raw in enumerate(split_mbox(iter(content.splitlines(keepends=True))), start=1):
        try:
            parts.append(message_markdown(raw).replace("\n# ", "\n## ", 1))
        except MailError as err:
            raise MailError(f"message {number}: {err}") from None
    if not parts:
        raise MailError("malformed mbox: no message (an mbox starts with a `From ` line)")
    return "\n\n".join(parts)


def split_mbox(lines: Iterator[bytes]) -> Iterator[bytes]:
    """The messages of an mbox, each without its `From ` separator line, one held at a time."""
    current: list[bytes] | None = None
    for line in lines:
        if line.startswith(b"From "):
            if current is not None:
                yield b"".join(current)
            current = []
        elif current is not None:
            current.append(line)
    if current is not None:
        yield b"".join(current)


# -- Outlook .msg


# MAPI property tags (id << 16 | type) of the streams read; 001F is UTF-16 text, 0102 binary.
_MSG_SUBJECT = "0037"
_MSG_SENDER_NAME = "0C1A"
_MSG_SENDER_EMAIL = "0C1F"
_MSG_SENDER_SMTP = "5D01"
_MSG_TO = "0E04"
_MSG_CC = "0E03"
_MSG_BODY = "1000"
_MSG_HTML = "1013"
_MSG_HEADERS = "007D"
_MSG_ATTACH_LONG_NAME = "3707"
_MSG_ATTACH_NAME = "3704"
_MSG_ATTACH_DATA = "37010102"
# PR_CLIENT_SUBMIT_TIME, then PR_MESSAGE_DELIVERY_TIME: PT_SYSTIME values of the property stream.
_MSG_TIMES = (0x00390040, 0x0E060040)
_FILETIME_EPOCH = datetime(1601, 1, 1, tzinfo=UTC)
# PR_INTERNET_CPID (PT_LONG): the Windows code page of the binary HTML body.
_MSG_INTERNET_CPID = 0x3FDE0003
# PR_MESSAGE_CODEPAGE (PT_LONG): the Windows code page of the message's 8-bit strings (PT_STRING8).
_MSG_CODEPAGE = 0x3FFD0003
# Windows code pages Python does not name `cp<number>`; the rest it does (cp1252, cp932, cp65001).
_CODE_PAGES = {1200: "utf-16-le", 1201: "utf-16-be", 20127: "ascii", 28591: "latin-1",
               **{28590 + n: f"iso8859_{n}" for n in range(2, 10)}, 28603: "iso8859_13",
               28605: "iso8859_15", 50220: "iso2022_jp", 50221: "iso2022_jp", 50222: "iso2022_jp",
               50225: "iso2022_kr", 51932: "euc_jp", 51949: "euc_kr", 52936: "hz", 54936: "gb18030",
               20866: "koi8_r", 21866: "koi8_u", 10000: "mac_roman", 65000: "utf-7"}
# FILETIMEs count 100 ns from 1601 and run to the year 30828; a later one than Python's dates
# hold (a damaged property) dates nothing.
_FILETIME_END = (datetime(9999, 12, 31, tzinfo=UTC) - _FILETIME_EPOCH) // timedelta(microseconds=1) * 10


@dataclass(frozen=True)
class Outlook:
    envelope: Envelope
    body: str
    attachments: tuple[tuple[str, bytes], ...]


def read_msg(content: bytes) -> Outlook:
    """An Outlook message: its envelope (the transport headers' Date where it came by SMTP, else
    the time it was sent), its body, and its attachments."""
    import olefile

    # Bytes, never a path: olefile takes bytes under 1536 as the name of a file to open.
    if not olefile.isOleFile(data=content):
        raise MailError("malformed message: not an Outlook .msg (no OLE compound file header)")
    try:
        ole = olefile.OleFileIO(io.BytesIO(content))
    except (OSError, ValueError) as err:
        raise MailError(f"malformed message: {err}") from None
    with ole:
        def stream(path: str) -> bytes | None:
            if not ole.exists(path):
                return None
            try:
                return ole.openstream(path).read()
            except OSError as err:   # a damaged entry: olefile opens no storage as a stream
                raise MailError(f"malformed message: {path}: {err}") from None

        properties = _msg_properties(stream("__properties_version1.0"))
        # 8-bit strings are in the message's code page; with none given, or one Python lacks, Latin-1
        eight_bit = _code_page(properties.get(_MSG_CODEPAGE), default="latin-1")

        def text(tag: str, storage: str = "") -> str:
            for kind, codec in (("001F", "utf-16-le"), ("001E", eight_bit)):
                data = stream(f"{storage}__substg1.0_{tag}{kind}")
                if data is not None:
                    return data.decode(codec, "replace").rstrip("\x00")
            return ""

        headers = email.message_from_string(text(_MSG_HEADERS), policy=email.policy.default) \
            if text(_MSG_HEADERS) else None
        sender = text(_MSG_SENDER_NAME)
        address = text(_MSG_SENDER_SMTP) or text(_MSG_SENDER_EMAIL)
        author = f"{sender} <{address}>" if sender and address and "@" in address else sender or address
        body = text(_MSG_BODY)
        if not body.strip():
            # Binary HTML is in the message's code page; a page Python lacks, or none, reads as UTF-8.
            raw = stream(f"__substg1.0_{_MSG_HTML}0102")
            html = raw.decode(_code_page(properties.get(_MSG_INTERNET_CPID)), "replace") if raw \
                else text(_MSG_HTML)
            body = html_to_markdown(html) if html else ""
        found: list[tuple[str, bytes]] = []
        seen: set[str] = set()
        storages = sorted({entry[0] for entry in ole.listdir(streams=True, storages=True)
                           if entry and entry[0].startswith("__attach_version1.0_")})
        for index, storage in enumerate(storages, start=1):
            prefix = storage + "/"
            name = _unique(_safe_name(text(_MSG_ATTACH_LONG_NAME, prefix) or text(_MSG_ATTACH_NAME, prefix),
                                      "", index), seen)
            data = stream(prefix + f"__substg1.0_{_MSG_ATTACH_DATA}")
            if data is None:
                continue   # an embedded message or OLE object: no bytes of its own to import
            found.append((name, data))
        sent = sent_at(headers) if headers is not None else None
        sent = sent or _msg_time(properties)
        own = message_ids(header(headers, "message-id")) if headers is not None else []
        root = thread_root(headers) if headers is not None else None
        parent = message_ids(header(headers, "in-reply-to")) if headers is not None else []
        subject = text(_MSG_SUBJECT)
        if not (subject or author or body.strip()):
            raise MailError("malformed message: no subject, sender or body")
        return Outlook(Envelope(subject=subject, author=author, to=text(_MSG_TO), cc=text(_MSG_CC), date=sent,
                                message_id=own[0] if own else "", in_reply_to=parent[0] if parent else "",
                                thread=root or (own[0] if own else ""),
                                attachments=tuple(n for n, _ in found)),
                       body, tuple(found))


def _msg_properties(data: bytes | None) -> dict[int, int]:
    """The fixed-size values of the top-level property stream by tag: a 32-byte header, then
    16-byte entries (tag, flags, an 8-byte value: a FILETIME for PT_SYSTIME, a PT_LONG in its low
    4 bytes). olefile reads the compound file but not MAPI properties, so these bytes are read here."""
    if data is None:
        return {}
    return {tag: value for tag, _flags, value in
            (struct.unpack_from("<IIQ", data, offset) for offset in range(32, len(data) - 15, 16))}


def _msg_time(properties: dict[int, int]) -> datetime | None:
    """PR_CLIENT_SUBMIT_TIME, else the delivery time."""
    times = {tag: _FILETIME_EPOCH + timedelta(microseconds=value // 10) for tag, value in properties.items()
             if tag in _MSG_TIMES and 0 < value < _FILETIME_END}
    return next((times[t] for t in _MSG_TIMES if t in times), None)


def _code_page(cpid: int | None, default: str = "utf-8") -> str:
    """Python's codec for a Windows code page (PT_LONG, the low 4 bytes); `default` for none or
    one Python does not know."""
    if cpid is None:
        return default
    cpid &= 0xFFFFFFFF
    name = _CODE_PAGES.get(cpid, f"cp{cpid}")
    try:
        return codecs.lookup(name).name
    except LookupError:
        return default


def msg_markdown(content: bytes) -> str:
    got = read_msg(content)
    return render(got.envelope, got.body)


# -- the reader's expansion


class _Caps:
    """Members (messages and attachments) and expanded bytes of one mail file, against the
    archive caps (`SourceOptions`)."""

    def __init__(self, options: SourceOptions):
        self.options = options
        self.members = 0
        self.expanded = 0

    def refusal(self, size: int) -> str | None:
        self.members += 1
        options = self.options
        if self.members > options.archive_max_members:
            return (f"over CORPUSMEM_ARCHIVE_MAX_MEMBERS={options.archive_max_members}: "
                    f"messages and attachments after the first {options.archive_max_members} are not read")
        if size > options.max_file_bytes:
            return f"is {size} bytes, over CORPUSMEM_MAX_FILE_BYTES={options.max_file_bytes}"
        if self.expanded + size > options.archive_max_bytes:
            return f"mail file expands past CORPUSMEM_ARCHIVE_MAX_BYTES={options.archive_max_bytes}"
        self.expanded += size
        return None


def expand_mail(filename: str, stream: BinaryIO, options: SourceOptions, *, item: str, ref: str,
                dated: Callable[[Row, bool], object]) -> Iterator[Row]:
    """Rows of a mail file read from `stream`: each message, then its attachments. `dated(row,
    member)` sets a row's said-on time the way the run was asked to (mtime, path, sidecar; a
    `member`, a message of an mbox, takes only the time); a message's own Date header, where it
    has one, wins over it, and its attachments take the message's date."""
    suffix = PurePosixPath(filename.lower()).suffix
    caps = _Caps(options)
    if suffix == ".mbox":
        yield from _expand_mbox(stream, options, caps, item=item, ref=ref, dated=dated)
        return
    content = stream.read(options.max_file_bytes + 1)
    row = options.base_row(item, ref, filename)
    row.update(content=content, size_bytes=len(content))
    if len(content) > options.max_file_bytes:
        yield records.fail(row, "read", f"file is over CORPUSMEM_MAX_FILE_BYTES={options.max_file_bytes} bytes")
        return
    dated(row, False)
    if row["outcome"] == records.FAILED:
        yield row
        return
    try:
        if suffix == ".msg":
            got = read_msg(content)
            found = [(name, (lambda data=data: data)) for name, data in got.attachments]
            subject, when = got.envelope.subject, got.envelope.date
        else:
            message = parse(content)
            found = attachments(message)
            subject, when = header(message, "subject"), sent_at(message)
    except MailError:
        yield row   # `convert` reads it again and fails it with the reason: one item, one error
        return
    yield from _message_rows(row, subject, when, found, options, caps, item=item, ref=row["source_ref"])


def _message_rows(row: Row, subject: str, when: datetime | None, found: list[tuple[str, Callable[[], bytes]]],
                  options: SourceOptions, caps: _Caps, *, item: str, ref: str) -> Iterator[Row]:
    if subject:
        row["title"] = subject
    if when is not None:
        row["source_modified_at"] = when
    yield row
    for name, read in found:
        child = options.base_row(f"{item}!{name}", f"{ref}!{name}", name)
        child["mime"] = mime_for(name)
        try:
            data = read()
        except Exception as err:  # a part the email package cannot decode fails only itself
            yield records.fail(child, "read", f"cannot read attachment: {type(err).__name__}: {err}")
            continue
        refusal = caps.refusal(len(data))
        if refusal:
            child["size_bytes"] = len(data)
            yield records.fail(child, "read", f"attachment {refusal}")
            continue
        child.update(content=data, size_bytes=len(data), source_modified_at=row["source_modified_at"])
        yield child


def _expand_mbox(stream: BinaryIO, options: SourceOptions, caps: _Caps, *, item: str, ref: str,
                 dated: Callable[[Row, bool], object]) -> Iterator[Row]:
    # First pass: each message's id and parent, to find its thread's first message (a reply's
    # References name it; a reply with only In-Reply-To is followed up its chain in this mbox).
    start = stream.tell()
    parents: dict[str, str | None] = {}
    for raw in split_mbox(iter(stream)):
        headers = BytesHeaderParser(policy=email.policy.default).parsebytes(raw)
        own = message_ids(header(headers, "message-id"))  # type: ignore[arg-type]
        if own:
            parents.setdefault(own[0], thread_root(headers))  # type: ignore[arg-type]
    stream.seek(start)
    names: set[str] = set()
    count = 0
    for number, raw in enumerate(split_mbox(iter(stream)), start=1):
        count = number
        try:
            message = parse(raw)
            own = message_ids(header(message, "message-id"))
            root = _root(own[0] if own else None, parents)
            leaf = _unique(_path_part(own[0]) if own else f"message-{number}", names)
            path = f"{_path_part(root)}/{leaf}.eml" if root else f"{leaf}.eml"
        except MailError:
            message, path = None, _unique(f"message-{number}", names) + ".eml"
        row = options.base_row(f"{item}!{path}", f"{ref}!{path}", PurePosixPath(path).name)
        refusal = caps.refusal(len(raw))
        if refusal:
            row["size_bytes"] = len(raw)
            yield records.fail(row, "read", f"message {refusal}")
            continue
        row.update(content=raw, size_bytes=len(raw))
        dated(row, True)
        if message is None:
            yield row   # `convert` fails it with the reason
            continue
        yield from _message_rows(row, header(message, "subject"), sent_at(message), attachments(message),
                                 options, caps, item=f"{item}!{path}", ref=f"{ref}!{path}")
    if count == 0:
        yield records.fail(options.base_row(item, ref, PurePosixPath(item).name), "read",
                           "malformed mbox: no message (an mbox starts with a `From ` line)")


def _root(own: str | None, parents: dict[str, str | None]) -> str | None:
    """The first message of `own`'s thread: up its parents while this mbox knows them."""
    if own is None:
        return None
    seen = {own}
    current = own
    while parents.get(current) and parents[current] not in seen:
        current = parents[current]  # type: ignore[assignment]
        seen.add(current)
    return current


def _path_part(message_id: str) -> str:
    return _UNSAFE_NAME.sub("_", message_id)[:_NAME_MAX] or "_"
