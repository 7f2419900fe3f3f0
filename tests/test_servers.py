"""tests/servers.py's free_port: ports no outgoing connection can take, a slice per xdist worker."""

from __future__ import annotations

import itertools
import socket

import pytest

from tests import servers


def test_a_free_port_is_below_the_kernels_own_range_and_can_be_bound() -> None:
    port = servers.free_port()
    assert servers.LOWEST <= port < servers._ephemeral_start()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_a_port_something_holds_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        free = servers.free_port()
        monkeypatch.setattr(servers, "_PORTS", iter([taken, free]))
        assert servers.free_port() == free


def test_each_worker_has_a_slice_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    top = servers._ephemeral_start()
    size = (top - servers.LOWEST) // 3
    slices = []
    for worker in ("gw0", "gw1", "gw2"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        ports = list(itertools.islice(servers._ports(), size))
        assert len(set(ports)) == size and min(ports) >= servers.LOWEST and max(ports) < top
        slices.append(set(ports))
    assert not slices[0] & slices[1] and not slices[1] & slices[2] and not slices[0] & slices[2]
