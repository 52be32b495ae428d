"""For the attackers that write on the worker's channel themselves: the one pipe their process
holds open for writing (the worker's reply pipe)."""
import os


def reply_pipe() -> int:
    for name in os.listdir("/proc/self/fd"):
        try:
            if not os.readlink(f"/proc/self/fd/{name}").startswith("pipe:"):
                continue
            with open(f"/proc/self/fdinfo/{name}") as f:
                flags = int(next(line for line in f if line.startswith("flags:")).split()[1], 8)
        except (OSError, StopIteration):
            continue
        if flags & os.O_WRONLY:
            return int(name)
    raise RuntimeError("no reply pipe")
