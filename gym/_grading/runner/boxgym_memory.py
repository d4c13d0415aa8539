"""Kills for want of memory in this container, and whose they were (standard library only).

Shipped into grading containers beside the grading scripts (the code families' runner,
the SQL runner). The kernel's counters decide, never a message: a kill while this
container stayed below its own memory limit was the host's (or a cgroup's above the
container), whatever the code under test did; one at the limit is what filled the
container's.
"""

_OOM_KILLS = (
    ("/sys/fs/cgroup/memory.events", "oom_kill"),  # cgroup v2
    ("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill"),  # cgroup v1
)
"""Processes of this cgroup the kernel killed for want of memory: any OOM's kills, at
this cgroup's limit, at an ancestor's, the host's."""
_LIMIT_OOMS = (("/sys/fs/cgroup/memory.events", "oom"),)
"""cgroup v2's count of OOMs at this cgroup's own limit (an ancestor's or the host's is not
counted here, though the kills they make in this cgroup count in ``oom_kill``)."""
_PEAKS = (
    (
        "/sys/fs/cgroup/memory/memory.max_usage_in_bytes",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ),
    (
        "/sys/fs/cgroup/memory/memory.memsw.max_usage_in_bytes",
        "/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes",
    ),
)
"""cgroup v1's peaks of this cgroup's memory, and of memory and swap together, each with
its limit (v1 counts no OOMs by whose limit they were; with swap, the second limit is
reached with the first's usage below it)."""
PEAK_SLACK = 8 << 20
"""How far below the limit a peak may stop and still be the limit's: the kernel charges
in batches of 64 pages and huge pages of 2 MiB, and a charge that would pass the limit
is never recorded."""
_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def memory_limit():
    """This container's memory limit in bytes (None: unknown)."""
    for path in _LIMITS:
        try:
            with open(path) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit():
            return int(text)
    return None


def oom_kills():
    """Processes of this container the kernel killed for want of memory so far (None: unknown)."""
    return _counter(_OOM_KILLS)


def limit_ooms():
    """OOMs at this container's own memory limit so far (None: not counted, cgroup v1)."""
    return _counter(_LIMIT_OOMS)


def _counter(sources):
    for path, key in sources:
        try:
            with open(path) as fh:
                for line in fh:
                    name, _, value = line.partition(" ")
                    if name == key:
                        return int(value)
        except (OSError, ValueError):
            continue
    return None


def memory_peaks():
    """(peak, limit) in bytes of each of this container's v1 memory counters that has both."""
    peaks = []
    for pair in _PEAKS:
        try:
            values = []
            for path in pair:
                with open(path) as fh:
                    values.append(int(fh.read().strip()))
        except (OSError, ValueError):
            continue
        peaks.append(tuple(values))
    return peaks


class Kills:
    """The kernel's kills for want of memory in this container from now on."""

    def __init__(self):
        self.kills, self.limit_ooms = oom_kills(), limit_ooms()

    def since(self):
        """Processes killed since this was made (0 when unknown)."""
        after = oom_kills()
        if self.kills is None or after is None:
            return 0
        return max(0, after - self.kills)

    def own_limit_reached(self):
        """Whether this container's memory reached its own limit since (None: unknown).

        cgroup v2 counts the OOMs at this cgroup's limit; v1 keeps peaks, which an OOM at
        a limit takes to that limit. False when the host (or an ancestor cgroup) ran out
        of memory while this container stayed below its own limits.
        """
        after = limit_ooms()
        if self.limit_ooms is not None and after is not None:
            return after > self.limit_ooms
        peaks = memory_peaks()
        if not peaks:
            return None
        return any(peak >= limit - PEAK_SLACK for peak, limit in peaks)

    def by_the_host(self):
        """Why a kill since was the host's (None: no kill, or at this container's limit)."""
        killed = self.since()
        if not killed or self.own_limit_reached() is not False:
            return None
        peaks = "; ".join(f"peak {p} of {limit} bytes" for p, limit in memory_peaks())
        return (
            f"the kernel killed {killed} process(es) of the grading for want of memory while "
            f"the container stayed below its own limit ({memory_limit()} bytes"
            f"{'; ' + peaks if peaks else ''}): the host, or a cgroup above the container, "
            "ran out of memory; grade it again on a host with memory to spare"
        )
