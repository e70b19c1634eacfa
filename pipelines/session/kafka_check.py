"""Before a Kafka source starts: can the bootstrap servers be reached at all? Spark's Kafka consumer retries an
unreachable broker without end, so without this check a wrong address looks like a run that hangs."""

from __future__ import annotations

import socket

from pipelines.settings.config import Config, ConfigError

CONNECT_TIMEOUT_S = 5.0


def parse_servers(servers: str) -> list[tuple[str, int]]:
    """`host:port[,host:port...]` as (host, port) pairs; a ConfigError names an entry without a port."""
    pairs = []
    for entry in (s.strip() for s in servers.split(",")):
        host, sep, port = entry.rpartition(":")
        if not entry or not sep or not host or not port.isdigit():
            raise ConfigError(f"bootstrap server {entry!r} is not host:port (e.g. kafka-1.example.com:9092)")
        pairs.append((host.strip("[]"), int(port)))
    return pairs


def check_brokers(cfg: Config, *, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Return when one bootstrap server accepts a TCP connection; raise ConfigError naming them all otherwise."""
    servers = cfg.kafka.bootstrap_servers or ""
    problems = []
    for host, port in parse_servers(servers):
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as exc:
            problems.append(f"{host}:{port} ({exc.strerror or exc})")
    raise ConfigError(f"no Kafka bootstrap server could be reached: {', '.join(problems)}; check "
                      "--bootstrap-servers (kafka.bootstrap_servers) and that the brokers listen there")
