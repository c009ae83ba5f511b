"""One line on the machine a benchmark ran on, for docs/performance.md: cores, CPU, RAM,
Python, and the load average at the start (these machines are shared; figures are noisy); and
the command that ran it."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path


def describe() -> str:
    cpu = "unknown CPU"
    ram = "unknown RAM"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB RAM"
                break
    except OSError:
        pass
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} CPUs (nproc), {cpu}, {ram}, Python {platform.python_version()}, "
        f"load average {load}"
    )


def command() -> str:
    """The command line that ran this benchmark, as it would be typed again from the root."""
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    script = f"-m {spec.name}" if spec is not None else sys.argv[0]
    return " ".join([".venv/bin/python", script, *sys.argv[1:]])
