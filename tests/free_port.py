"""One free TCP port on 127.0.0.1 for a test server, outside the kernel's ephemeral range.

A port taken by binding port 0 comes from the ephemeral range (ip_local_port_range), the
same range every outbound connection's local port is drawn from: between the pick and the
server's own bind, a client connection (to Kafka, PostgreSQL, a floe node) may take it, and
the server fails with "Address already in use" (a Connect worker did so in CI). A random
port below that range that binds now is only taken by another picker, which draws at random
too. Used by the integration tests, tests/compat and scripts/pg-test-server.sh
(`python3 tests/free_port.py` prints one). FLOE_PORTS="LOW-HIGH" picks from another range:
the benchmarks take 5000-14999, so that they may run beside the tests without taking a
port a test server gives up for a moment while it restarts."""
import os
import random
import socket

LOW = 15000


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port():
    high = _ephemeral_low()
    low = LOW
    if os.environ.get("FLOE_PORTS"):
        low, high = (int(x) for x in os.environ["FLOE_PORTS"].split("-"))
    if high - low >= 1000:
        for _ in range(200):
            p = random.randrange(low, high)
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    continue
                return p
    with socket.socket() as s:   # no room below the ephemeral range: the kernel's pick
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    print(free_port())
