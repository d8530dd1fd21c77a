"""Runs a command and writes its wall time, peak RSS and CPU time as JSON.

For benchmarks of short commands (test/bench/validate.ts): preloading
max-rss.mjs with --import costs a Node process its ES module loader, on
the main thread and again on every worker thread (they inherit execArgv),
about 20 ms of a 300 ms validate run. wait4(2) gives the same figures for
the child from outside, without touching it. The wall time is measured here,
from fork to the child's exit, so this interpreter's own start is not in it.

Usage: python3 child-usage.py OUT.json COMMAND [ARG...]; exits with the
command's status (128 + n when a signal ended it).
"""

import json
import os
import sys
import time


def main() -> int:
    out, command = sys.argv[1], sys.argv[2:]
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    elapsed = time.perf_counter() - start
    with open(out, "w", encoding="utf-8") as f:
        json.dump(
            {
                "ms": elapsed * 1000,
                # Linux reports ru_maxrss in KiB.
                "maxRssKiB": usage.ru_maxrss,
                "cpuMs": (usage.ru_utime + usage.ru_stime) * 1000,
            },
            f,
        )
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


if __name__ == "__main__":
    sys.exit(main())
