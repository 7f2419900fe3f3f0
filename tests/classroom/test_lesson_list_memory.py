"""The list of lessons costs the same for large lessons as for small ones (issue 19): a real server over
40 lessons of ~0.9 MB each answers 20 list requests (4 at a time) with its peak RSS (VmHWM) grown by
only a few MB, as for 40 one-view lessons. The figures are printed (pytest -s)."""

from __future__ import annotations

import json
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from app.classroom import store
from tests.classroom.conftest import TOKEN, app_process, auth

LESSONS = 40
BIG_VIEW = {"state": {"sentence": "s" * 4000}, "note": "n" * 2000}


def peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def growth_of_listing(data: Path) -> tuple[int, int]:
    """(peak RSS growth in KiB over 20 list requests, lessons listed) of a real server over `data`."""

    def get(_: int) -> int:
        request = urllib.request.Request(data_url + "/api/lessons?limit=1000", headers=auth(TOKEN))
        with urllib.request.urlopen(request) as r:
            return len(json.loads(r.read()))

    with app_process(data) as (base, proc):
        data_url = base
        get(0)  # the first request imports and warms what every later one uses
        before = peak_kib(proc.pid)
        with ThreadPoolExecutor(4) as pool:
            counts = list(pool.map(get, range(20)))
        return peak_kib(proc.pid) - before, min(counts)


def test_the_list_does_not_grow_with_the_lessons(tmp_path: Path) -> None:
    grown = {}
    for name, views in (("small", [{"state": {"step": "score"}, "note": ""}]), ("large", [BIG_VIEW] * 150)):
        data = tmp_path / name
        s = store.Store(data)
        for i in range(LESSONS):
            s.add_lesson(f"{name} {i}", views)
        s.close()
        grown[name], listed = growth_of_listing(data)
        assert listed == LESSONS + 1  # and the ready-made one
    size = len(json.dumps([BIG_VIEW] * 150)) / 2**20
    print(f"\npeak RSS growth listing {LESSONS} lessons 20 times, 4 at once: "
          f"{grown['small']} KiB (1 view each), {grown['large']} KiB ({size:.2f} MiB each)")  # fmt: skip
    assert grown["large"] < 8 * 1024
    assert grown["large"] < grown["small"] + 4 * 1024
