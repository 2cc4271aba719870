"""Where a run's threads spend their wall time, by sampling: `python3 tests/gpu/thread_sampler.py OUT -- run
CAMPAIGN ...` runs the CLI in this process while a thread samples every other thread's stack each 5 ms, then
writes OUT: per thread name, its samples by the innermost ncucampaign function and the call it was in (a wait
in select or a lock shows as such). A profiler per thread is refused by Python 3.12 ("Another profiling tool is
already active"); sampling works on every version and costs the run little. Used for own seconds
(docs/shared-runs.md): which of a shared run's splits' seconds are ncucampaign's own work.
"""

from __future__ import annotations

import collections
import re
import runpy
import sys
import threading
import time
from types import FrameType

PERIOD_S = 0.005


def where(frame: FrameType | None) -> str:
    """The innermost ncucampaign frame, and the call it made below (the leaf), as `module:function > leaf`."""
    leaf = f"{frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.f_code.co_name}" if frame else "?"
    while frame is not None and "/ncucampaign/" not in frame.f_code.co_filename:
        frame = frame.f_back
    if frame is None:
        return f"(outside ncucampaign) > {leaf}"
    own = re.sub(r".*/ncucampaign/", "", frame.f_code.co_filename)
    return f"{own}:{frame.f_code.co_name} > {leaf}"


def main() -> int:
    out, args = sys.argv[1], sys.argv[sys.argv.index("--") + 1 :]
    samples: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    done = threading.Event()

    def sample() -> None:
        me = threading.get_ident()
        while not done.wait(PERIOD_S):
            names = {t.ident: re.sub(r"_\d+$", "", t.name) for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident != me:
                    samples[names.get(ident, "?")][where(frame)] += 1

    sampler = threading.Thread(target=sample, name="sampler", daemon=True)
    sampler.start()
    sys.argv = ["ncucampaign", *args]
    start = time.monotonic()
    code = 0
    try:
        runpy.run_module("ncucampaign", run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        done.set()
        sampler.join()
        with open(out, "w", encoding="utf-8") as handle:
            handle.write(f"{time.monotonic() - start:.2f} s, a sample each {PERIOD_S * 1000:.0f} ms\n")
            for name, counter in sorted(samples.items(), key=lambda item: -sum(item[1].values())):
                handle.write(f"\n== {name}: {sum(counter.values()) * PERIOD_S:.2f} s sampled\n")
                for place, count in counter.most_common(25):
                    handle.write(f"{count * PERIOD_S:8.3f} s  {place}\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
