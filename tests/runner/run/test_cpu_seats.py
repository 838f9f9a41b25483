"""Jobs side by side on a machine without a GPU (runner/run/loop.py CpuSeats): every server takes a
place; a server of CPU ranks takes them all, so it never starts beside another server (8 ranks of a
twin take 14.7 GB) and no server starts beside it."""

from __future__ import annotations

import threading
import time

from driftmatrix.runner.run.loop import CpuSeats


def test_a_server_of_cpu_ranks_waits_for_every_place_and_holds_them():
    seats = CpuSeats(2)
    assert seats.needed(["m"], gpus=0) == 1
    assert seats.needed(["m", "-tp", "4"], gpus=0) == 2
    assert seats.needed(["m", "-tp", "4"], gpus=4) == 1  # on GPUs its ranks are GPUs, placed by their pool
    seats.acquire(1)  # a one-rank server runs
    got = []
    ranked = threading.Thread(target=lambda: got.append(seats.acquire(seats.needed(["m", "-tp", "2"], 0))))
    ranked.start()
    time.sleep(0.3)
    assert not got  # it waits for the server beside it
    seats.release(1)
    ranked.join(5)
    assert got == [2] and seats.free == 0
    other = threading.Thread(target=lambda: got.append(seats.acquire(1)))
    other.start()
    time.sleep(0.3)
    assert got == [2]  # and no server starts beside it
    seats.release(2)
    other.join(5)
    assert got == [2, 1]
