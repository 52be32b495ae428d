"""Reading a file that someone else named: a candidate, a problem, a run's results, a file a
worker reports. Only regular files (links followed) of bounded size are read; a device
(/dev/zero reads forever), a FIFO (blocks until a writer comes), a folder or an oversized file
is refused with a one-line reason naming the file."""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path

# A candidate or problem module. Generated kernels are single modules: the shipped corpus's
# largest file is 24 KB, and a model's whole answer is bounded by its output-token limit
# (128k tokens at about 4 bytes each: 512 KiB). Twice that; Python parses 1 MiB of source in
# about 0.75 s (4 MiB of kernels/gdn/gla.py repeated: 3.1 s).
MAX_SOURCE_BYTES = 1 << 20


class UnreadableFile(ValueError):
    """Not a regular file of bounded size; the message names the file and says why."""


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _check(path: Path, st: os.stat_result, limit: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        link = f" (a link to {os.path.realpath(path)})" if os.path.islink(path) else ""
        raise UnreadableFile(f"{path}: not a regular file: {_kind(st.st_mode)}{link}")
    if st.st_size > limit:
        raise UnreadableFile(f"{path}: {st.st_size} bytes, more than the {limit} read")


def read_regular_file(path: Path | str, limit: int = MAX_SOURCE_BYTES) -> bytes:
    """The bytes of `path`, a regular file (or a link to one) of at most `limit` bytes.
    Checked before opening (opening a device can act on it) and again on the open file (the
    name may have been replaced in between), which is opened without blocking (a FIFO put
    there then opens and reads empty instead of waiting for a writer); at most `limit` + 1
    bytes are read whatever the size said. OSError (no such file, no permission) passes."""
    path = Path(path)
    _check(path, os.stat(path), limit)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        _check(path, os.fstat(fd), limit)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise UnreadableFile(f"{path}: grew past the {limit} bytes read")
    return b"".join(chunks)


def with_named_siblings(path: Path) -> list[tuple[Path, bytes]]:
    """`path` and its content, then each `.py` file beside it whose name (its stem, as a word)
    appears in `path`'s text or in one of these files' text, with its content: the modules a
    problem or a candidate imports or loads from its own folder (a GPU MODE problem's
    `reference.py`, which imports `utils`; a materialised submission's `submission.py`).
    Naming errs on the side of more files. OSError or UnreadableFile for an unreadable one."""
    path = Path(path)
    siblings = {p.stem: p for p in path.parent.glob("*.py") if p != path}
    found = [(path, read_regular_file(path))]
    pending = [found[0][1]]
    while pending:
        text = pending.pop().decode("utf-8", "replace")
        for stem in sorted(siblings):
            if re.search(rf"(?<![\w.]){re.escape(stem)}\b", text):
                sibling = siblings.pop(stem)
                found.append((sibling, read_regular_file(sibling)))
                pending.append(found[-1][1])
    return found


def named_data_files(files: list[tuple[Path, bytes]]) -> list[Path]:
    """The files other than modules beside the first of `files` (with_named_siblings') whose
    names any of them has in its text: what it reads by name (a `.cu` source it builds, a
    table it loads). Links and folders are left out."""
    folder = files[0][0].parent
    text = b"\n".join(body for _, body in files).decode("utf-8", "replace")
    return [p for p in sorted(folder.iterdir()) if p.suffix != ".py" and not p.is_symlink()
            and p.is_file() and re.search(rf"(?<![\w.]){re.escape(p.name)}(?![\w.])", text)]


def joined(files: list[tuple[Path, bytes]]) -> bytes:
    """The first file's content, then the name and content of each other one: what names a
    file together with the siblings it runs beside (with_named_siblings). A file alone is its
    own bytes."""
    first, *rest = files
    return first[1] + b"".join(f"\0{p.stem}\0".encode() + body for p, body in rest)
