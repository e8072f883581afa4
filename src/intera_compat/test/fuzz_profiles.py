"""Hypothesis profiles of the invariant fuzz suite (``test_invariants_fuzz``), registered on import.

* ``ci`` (default): derandomized (the same examples every run, no example database), a fixed number of
  examples sized so the suite runs in about 20 s on the 2-core CI machine (its share of a 12-min suite), no
  shrinking (a failure is reported at once with the operations that made it; shrinking one can take minutes);
* ``long``: random, many examples, for ``bench/fuzz_long.py`` (which runs it for a given time);
* ``INTERA_FUZZ_PROFILE`` picks one for the pytest run (``INTERA_FUZZ_EXAMPLES`` overrides the count);
  ``INTERA_FUZZ_IGNORE`` (invariant names, comma-separated) looks past known failures while exploring — never in CI.

The robot time of one example is kept short (``STEPS`` operations of at most ~0.3 s each, plus waits), so an
example costs about half a second of wall time.
"""
from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

STEPS = 10  # operations per example (stateful_step_count)
CI_EXAMPLES = 60  # ~0.35 s each alone on the 2-core machine (150 took 53 s); the long run (bench/fuzz_long.py) explores

_common = dict(deadline=None, stateful_step_count=STEPS, database=None, print_blob=False,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
# (no shrinking in CI: a failure is reported at once with its operations; the long run shrinks)
settings.register_profile("ci", derandomize=True, max_examples=CI_EXAMPLES,
                          phases=(Phase.explicit, Phase.reuse, Phase.generate), **_common)
settings.register_profile("long", derandomize=False, max_examples=10 ** 6, **_common)
# (the bench: generation only, a failure is reported once and shrunk by a second, focused run)
settings.register_profile("long_noshrink", derandomize=False, max_examples=10 ** 6,
                          phases=(Phase.explicit, Phase.generate), **_common)


IGNORE = frozenset(x for x in os.environ.get("INTERA_FUZZ_IGNORE", "").split(",") if x)


def profile() -> settings:
    s = settings.get_profile(os.environ.get("INTERA_FUZZ_PROFILE", "ci"))
    n = os.environ.get("INTERA_FUZZ_EXAMPLES")
    return settings(s, max_examples=int(n)) if n else s
