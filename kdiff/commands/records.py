"""`kdiff records export|import`: a results store's verdicts to a compressed records file and
back (kdiff.verdicts.records), so that an audit survives from one machine to the next."""
from __future__ import annotations

import argparse
from pathlib import Path

from kdiff.commands.invocation import EXIT_OK, UsageError
from kdiff.verdicts import records
from kdiff.verdicts.store import UnreadableStore


def export_records(args: argparse.Namespace) -> int:
    if not args.store.is_file():
        raise UsageError(f"{args.store}: no results store there")
    if not args.out.name.endswith(records.SUFFIX):
        raise UsageError(f"--out {args.out}: a records file's name ends in {records.SUFFIX}")
    try:
        written = records.export(args.store, args.out, args.run)
    except (LookupError, UnreadableStore) as exc:
        raise UsageError(str(exc)) from None
    print(f"wrote {written.tally()} to {args.out} ({_size(args.out)})")
    return EXIT_OK


def import_records(args: argparse.Namespace) -> int:
    try:
        read, added = records.import_into(args.store, args.paths)
    except (records.UnreadableRecords, UnreadableStore) as exc:
        raise UsageError(str(exc)) from None
    line = f"imported {added} into {args.store}"
    if added != read:
        line += f" (of {read} read; the rest were there already and kept)"
    print(line)
    return EXIT_OK


def _size(path: Path) -> str:
    size = path.stat().st_size
    return f"{size:,} bytes" if size < 10_000 else f"{round(size / 1000):,} KB"
