"""Where an output's bytes lie in the worker, as the kernel names memory: an address span,
and for a shared mapping of a file also the file's range, since two shared mappings of one
file (a memfd mapped anew each call) are one memory at two addresses, which no comparison of
addresses finds. Read from /proc/self/maps, for memory torch's allocator did not hand out
(its own is private and anonymous: its address names it)."""

from __future__ import annotations

from dataclasses import dataclass

from kdiff.sandbox.protocol import spans_overlap


@dataclass(frozen=True)
class FileRange:
    device: str  # major:minor, as /proc/self/maps writes it
    inode: int
    start: int  # byte offsets in the file
    end: int

    def overlaps(self, other: FileRange) -> bool:
        return (
            (self.device, self.inode) == (other.device, other.inode)
            and self.start < other.end
            and other.start < self.end
        )


@dataclass(frozen=True)
class Memory:
    span: tuple[int, int]  # addresses, kdiff.sandbox.protocol.storage_span
    file: FileRange | None = None  # where a shared mapping of a file holds its start

    def overlaps(self, other: Memory) -> bool:
        return spans_overlap(self.span, other.span) or (
            self.file is not None and other.file is not None and self.file.overlaps(other.file)
        )


def _shared_file_mappings() -> list[tuple[int, int, int, str, int]]:
    """(start, end, file offset, device, inode) of each shared mapping of a file. A private
    one (perms `p`) is copied on write: two of one file are two memories."""
    mappings = []
    with open("/proc/self/maps", encoding="ascii", errors="replace") as f:
        for line in f:
            fields = line.split(maxsplit=5)
            if len(fields) < 5 or fields[1][3:4] != "s" or fields[4] == "0":
                continue
            start, end = (int(v, 16) for v in fields[0].split("-"))
            mappings.append((start, end, int(fields[2], 16), fields[3], int(fields[4])))
    return mappings


def memory_of(spans: list[tuple[int, int]], foreign: list[bool]) -> list[Memory]:
    """The memory of each address span; for those marked `foreign` (memory torch's allocator
    did not hand out) the file range too, where a shared mapping of a file holds it."""
    mappings = _shared_file_mappings() if any(foreign) else []
    memories = []
    for (start, end), outside in zip(spans, foreign):
        hit = next((m for m in mappings if outside and m[0] <= start < m[1]), None)
        file = (
            None
            if hit is None
            else FileRange(hit[3], hit[4], hit[2] + start - hit[0], hit[2] + end - hit[0])
        )
        memories.append(Memory((start, end), file))
    return memories
