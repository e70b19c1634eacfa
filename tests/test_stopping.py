"""A stop request (pipelines/flow/stopping.py) on its own, without Spark: the signals it takes, the gate it puts in
front of the micro-batches. The whole path through a real continuous run is in tests/test_survival.py."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from pipelines.flow.stopping import StopRequest


def test_a_signal_asks_to_stop_and_a_second_one_interrupts():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    with StopRequest() as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.1)  # the handler runs in the main thread between bytecodes
        assert stop.requested.is_set() and stop.signal_name == "SIGTERM"
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_the_gate_lets_batches_under_way_finish_and_holds_new_ones():
    stop = StopRequest()
    entered, release, done = threading.Event(), threading.Event(), []
    batch = stop.guard(lambda df, batch_id: (entered.set(), release.wait(), done.append(batch_id)))
    running = threading.Thread(target=batch, args=(None, 1), daemon=True)
    running.start()
    assert entered.wait(5)
    stop.requested.set()
    held = threading.Thread(target=batch, args=(None, 2), daemon=True)
    held.start()
    assert not stop.wait_idle(0.2)  # batch 1 is under way
    release.set()
    assert stop.wait_idle(5)
    held.join(0.3)
    assert done == [1] and held.is_alive()  # batch 2 never began: it waits at the gate until the process ends
