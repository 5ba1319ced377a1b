"""Runs a command and records its resource use (getrusage RUSAGE_CHILDREN).

    python3 rusage.py OUT.json -- COMMAND [ARGS...]

The command's stdin, stdout and stderr are inherited. OUT.json receives the exit status,
wall seconds, user and system CPU seconds and peak RSS (KiB) of the command and everything
it waited for. The exit status of this script is the command's (128 + signal if killed).
Used by scripts/bench.mjs so that pgbench and the replay are measured the same way.
"""

import json
import resource
import signal
import subprocess
import sys
import time


def main() -> int:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print("usage: rusage.py OUT.json -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    out, command = sys.argv[1], sys.argv[3:]
    started = time.monotonic()
    try:
        child = subprocess.Popen(command)
    except OSError as e:
        print(f"rusage.py: cannot run {command[0]}: {e}", file=sys.stderr)
        return 127

    def forward(signum, _frame):
        child.send_signal(signum)

    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, forward)
    code = child.wait()
    wall = time.monotonic() - started
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(
            {
                "exit_code": code,
                "wall_s": wall,
                "user_s": r.ru_utime,
                "sys_s": r.ru_stime,
                "cpu_s": r.ru_utime + r.ru_stime,
                "max_rss_kb": r.ru_maxrss,
                "voluntary_switches": r.ru_nvcsw,
                "involuntary_switches": r.ru_nivcsw,
            },
            f,
        )
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
