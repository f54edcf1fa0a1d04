"""Hosts on one machine: Linux network namespaces on a private bridge (bench/cluster.py).

Every name the bench makes starts with PREFIX (namespaces `orcl-<host>`, the bridge
`orclbr0`, veth ends `orcl-<host>`), so `remove_all()` finds and removes whatever a bench
left, even one killed with SIGKILL: every process inside each namespace gets SIGKILL, then
the namespaces, links and the bridge are deleted. Needs root (`ip netns`).

The subnet is private (RFC 1918) and the bridge has no route out: traffic stays between
the namespaces and the root namespace's end of the bridge.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass

PREFIX = "orcl-"
BRIDGE = "orclbr0"
SUBNET = "10.213.77"  # /24; .1 is the bridge (the root namespace, where the bench runs)
GATEWAY = f"{SUBNET}.1"
COMMAND_TIMEOUT_S = 20
IP = shutil.which("ip") or "/usr/sbin/ip"


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([IP, *args], check=check, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)


@dataclass(frozen=True)
class Host:
    """One namespace with one address on the bridge."""

    name: str  # short: web1, w1, db, broker, lb
    address: str

    @property
    def netns(self) -> str:
        return f"{PREFIX}{self.name}"

    @property
    def link(self) -> str:
        """The veth end on the bridge (root namespace); down = the host is cut off."""
        return f"{PREFIX}{self.name}"[:15]

    def command(self, argv: list[str]) -> list[str]:
        return [IP, "netns", "exec", self.netns, *argv]

    def pids(self) -> list[int]:
        result = ip("netns", "pids", self.netns, check=False)
        return [int(pid) for pid in result.stdout.split() if pid.isdigit()]

    def kill_all(self) -> int:
        """SIGKILL every process in the namespace; return how many there were."""
        pids = self.pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        return len(pids)

    def set_link(self, up: bool) -> None:
        ip("link", "set", self.link, "up" if up else "down")


def make_bridge() -> None:
    ip("link", "add", BRIDGE, "type", "bridge")
    ip("addr", "add", f"{GATEWAY}/24", "dev", BRIDGE)
    ip("link", "set", BRIDGE, "up")


def make_host(host: Host) -> None:
    """The namespace, its loopback, and a veth pair: `eth0` inside, `host.link` on the bridge."""
    ip("netns", "add", host.netns)
    ip("-n", host.netns, "link", "set", "lo", "up")
    ip("link", "add", host.link, "type", "veth", "peer", "name", "eth0", "netns", host.netns)
    ip("link", "set", host.link, "master", BRIDGE)
    ip("link", "set", host.link, "up")
    ip("-n", host.netns, "addr", "add", f"{host.address}/24", "dev", "eth0")
    ip("-n", host.netns, "link", "set", "eth0", "up")


def remove_all() -> list[str]:
    """Kill every process in our namespaces, delete them, their links and the bridge; return
    what was removed. Safe to call when nothing is left."""
    removed = []
    namespaces = [line.split()[0] for line in ip("netns", "list", check=False).stdout.splitlines() if line.strip()]
    for netns in namespaces:
        if not netns.startswith(PREFIX):
            continue
        Host(netns.removeprefix(PREFIX), "").kill_all()
        ip("netns", "del", netns, check=False)
        removed.append(f"netns {netns}")
    links = [
        line.split(":")[1].strip().split("@")[0] for line in ip("-o", "link", "show", check=False).stdout.splitlines()
    ]
    for link in links:
        if link.startswith(PREFIX) or link == BRIDGE:
            ip("link", "del", link, check=False)
            removed.append(f"link {link}")
    return removed
