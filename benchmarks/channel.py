"""The judge-worker channel alone: a message of tensors sent down one pipe and echoed back up
another by a forked process, through kdiff.sandbox.protocol (encode, write_all, read_message),
the pipes widened as CandidateProcess widens them. Prints the median round trip.

    python benchmarks/channel.py [--mib 1] [--tensors 2] [--repeats 60] [--default-pipes]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from kdiff.sandbox import protocol


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=float, default=1.0, help="size of each tensor")
    ap.add_argument("--tensors", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=60)
    ap.add_argument("--default-pipes", action="store_true", help="leave the pipes at 64 KiB")
    args = ap.parse_args()
    n = int(args.mib * (1 << 20)) // 4
    message = {"ok": True, "outputs": [torch.randn(n) for _ in range(args.tensors)]}
    down_r, down_w = os.pipe()
    up_r, up_w = os.pipe()
    if not args.default_pipes:
        protocol.widen_pipe(down_w)
        protocol.widen_pipe(up_w)
    child = os.fork()
    if child == 0:  # the echo: reads a message, sends it back, until the pipe closes
        os.close(down_w)
        os.close(up_r)
        while True:
            try:
                echoed = protocol.read_message(down_r, None, trusted=True)
            except protocol.ChannelClosed:
                os._exit(0)
            protocol.write_all(up_w, protocol.encode(echoed))
    os.close(down_r)
    os.close(up_w)
    seconds = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        protocol.write_all(down_w, protocol.encode(message))
        protocol.read_message(up_r, None, trusted=False)
        seconds.append(time.perf_counter() - start)
    os.close(down_w)
    os.waitpid(child, 0)
    pipes = "64 KiB" if args.default_pipes else f"{protocol.PIPE_BYTES >> 10} KiB"
    print(f"{args.tensors} x {args.mib:g} MiB each way, {pipes} pipes: median round trip "
          f"{statistics.median(seconds) * 1e3:.2f} ms over {args.repeats}")


if __name__ == "__main__":
    main()
