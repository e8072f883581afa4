#!/usr/bin/env python3
"""The invariant fuzz suite (test/test_invariants_fuzz.py) for a long random run: batches of examples under the
``long`` profile until ``--minutes`` (default 30) are up. Each failure is shrunk and printed (its operations as
``rig.…`` lines, ready for test_fuzz_regressions.py); the invariant it broke is then left out for the rest of
the run, so the remaining time looks for other failures. Ends with one line:

    BENCH fuzz_long minutes=… examples=… failures=… found=<invariant>:<…>,…

``examples`` counts every example the state machine ran (those that shrank a failure included).

    python bench/fuzz_long.py [--minutes 30] [--ignore rest,goal] [--batch 50] [--no-shrink]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test"))

from hypothesis import settings  # noqa: E402
from hypothesis.reporting import with_reporter  # noqa: E402
from hypothesis.stateful import run_state_machine_as_test  # noqa: E402

import fuzz_profiles  # noqa: E402,F401  (registers the profiles)
import test_invariants_fuzz as suite  # noqa: E402
from fuzz_rig import Violation  # noqa: E402


class Counting(suite.LoopInvariants):
    examples = 0

    def __init__(self):
        super().__init__()
        Counting.examples += 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--batch", type=int, default=50, help="examples per Hypothesis run (a fresh random seed each)")
    ap.add_argument("--ignore", default="", help="invariants left out from the start (comma-separated)")
    ap.add_argument("--no-shrink", action="store_true", help="report failures as found (shrinking one takes minutes)")
    args = ap.parse_args()
    Counting.ignore = frozenset(x for x in args.ignore.split(",") if x)  # (the rig of each example reads it)
    end = time.monotonic() + 60.0 * args.minutes
    base = settings.get_profile("long_noshrink" if args.no_shrink else "long")
    found: list[tuple[str, str, float]] = []  # (invariant, message, minutes into the run)
    t0 = time.monotonic()
    while time.monotonic() < end:
        lines: list[str] = []
        try:
            with with_reporter(lines.append):
                run_state_machine_as_test(Counting, settings=settings(base, max_examples=args.batch))
        except Violation as e:
            found.append((e.name, str(e), (time.monotonic() - t0) / 60.0))
            print(f"\n=== {e.name}: {e}\n" + "\n".join(lines + getattr(e, "__notes__", [])), flush=True)
            Counting.ignore = Counting.ignore | {e.name}
        except Exception as e:  # noqa: BLE001  (an assertion of a rule, an error in the loop: reported the same way)
            name = type(e).__name__
            found.append((name, str(e).splitlines()[0] if str(e) else name, (time.monotonic() - t0) / 60.0))
            print(f"\n=== {name}: {e}\n" + "\n".join(lines + getattr(e, "__notes__", [])), flush=True)
        print(f"[{(time.monotonic() - t0) / 60.0:5.1f} min] examples {Counting.examples}, failures {len(found)}",
              flush=True)
    minutes = (time.monotonic() - t0) / 60.0
    summary = ",".join(f"{name}@{at:.1f}min" for name, _, at in found) or "none"
    print(f"BENCH fuzz_long minutes={minutes:.1f} examples={Counting.examples} failures={len(found)} found={summary}")
    print(f"      (examples include those that shrank each failure; ignored from the start: {args.ignore or 'none'})")
    for name, msg, _ in found:
        print(f"      {name}: {msg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
