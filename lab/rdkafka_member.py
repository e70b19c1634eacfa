"""The lab's librdkafka consumer (confluent-kafka's Consumer), run as its own process with the project's Python:

    python lab/rdkafka_member.py key=value ... lab.topics=t1,t2

Keys starting with `lab.` belong to this program, every other pair is a librdkafka configuration. No logger is
given to the client, so librdkafka's default log callback prints its lines to standard error in its own shape
(`%7|<epoch>.<ms>|FAC|<name>| [thrd:...]: ...`); the lab sends standard error to the instance's log file.

Commands on standard input, one a line, as LabConsumer takes them: `sleep MS` (the next loop iteration processes
for MS without polling), `slow MS` (every iteration does), `subscribe t1,t2`, `close` (a clean close: the consumer
leaves its group), `halt` (exit at once, no leave). Status lines on standard output start with `LAB `.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

_lock = threading.Lock()
_state: dict[str, Any] = {"sleep_once": 0, "slow": 0, "subscription": None, "closing": False}


def say(line: str) -> None:
    """A status line for the lab (standard output, flushed at once)."""
    with _lock:
        sys.stdout.write(f"LAB {line}\n")
        sys.stdout.flush()


def topics(csv: str) -> list[str]:
    return [t.strip() for t in csv.split(",") if t.strip()]


def read_commands() -> None:
    """The control thread: commands from standard input change what the poll loop does next."""
    for raw in sys.stdin:
        parts = raw.strip().split(None, 1)
        if not parts:
            continue
        cmd, arg = parts[0], (parts[1] if len(parts) > 1 else "")
        if cmd == "sleep":
            _state["sleep_once"] = int(arg)
            say(f"ack sleep {arg}")
        elif cmd == "slow":
            _state["slow"] = int(arg)
            say(f"ack slow {arg}")
        elif cmd == "subscribe":
            _state["subscription"] = arg
        elif cmd == "close":
            _state["closing"] = True
        elif cmd == "halt":
            say("halting")
            os._exit(3)
        else:
            say(f"unknown-command {raw.strip()}")
    _state["closing"] = True  # the harness went away: leave cleanly rather than linger


def main(argv: list[str]) -> int:
    conf: dict[str, str] = {}
    lab: dict[str, str] = {}
    for arg in argv:
        key, _, value = arg.partition("=")
        (lab if key.startswith("lab.") else conf)[key] = value
    poll_s = int(lab.get("lab.poll.ms", "200")) / 1000.0
    threading.Thread(target=read_commands, name="lab-commands", daemon=True).start()
    consumer = Consumer(conf)

    def on_assign(c: Consumer, partitions: list[TopicPartition]) -> None:
        parts = ", ".join(f"{p.topic}-{p.partition}" for p in partitions)
        say(f"assigned member={c.memberid()} generation=-1 partitions=[{parts}]")

    def on_revoke(c: Consumer, partitions: list[TopicPartition]) -> None:
        say(f"revoked [{', '.join(f'{p.topic}-{p.partition}' for p in partitions)}]")

    def on_lost(c: Consumer, partitions: list[TopicPartition]) -> None:
        say(f"lost [{', '.join(f'{p.topic}-{p.partition}' for p in partitions)}]")

    consumer.subscribe(topics(lab.get("lab.topics", "")), on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    say(f"started pid={os.getpid()}")
    try:
        while not _state["closing"]:
            subscription = _state["subscription"]
            if subscription is not None:
                _state["subscription"] = None
                consumer.subscribe(topics(subscription), on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
                say(f"subscribed {subscription}")
            msg = consumer.poll(poll_s)
            if msg is not None:
                err = msg.error()
                if err is not None and err.code() != KafkaError._PARTITION_EOF:
                    say(f"error {err}")
                elif err is None:
                    say("records 1")
            sleep_ms = _state["sleep_once"] + _state["slow"]
            _state["sleep_once"] = 0
            if sleep_ms > 0:
                say(f"processing ms={sleep_ms}")
                time.sleep(sleep_ms / 1000.0)
                say(f"processed ms={sleep_ms}")
        say("closing")
    finally:
        consumer.close()
    say("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
