#!/usr/bin/env bash
# Runs every test: pure-core pytest, node tests against a private rosmaster, every rostest .test.
# The pytest summary line is the last thing printed.
set -eo pipefail
cd "$(dirname "$0")"
. ./env.sh
ROS_HOME="$(mktemp -d)"; export ROS_HOME
trap 'rm -rf "$ROS_HOME"' EXIT
unset ROS_IP
# Two pytest-xdist workers with a role each (src/intera_compat/test/worker_roles.py, docs/testing.md): the first
# runs every test that starts a wall-time robot stack, one at a time, its processes favoured by the scheduler; the
# other the pure core's, the offline loop's and the simulated-time fixture's. INTERA_TEST_WORKERS=0: this process
# alone. Bytecode is kept (the environment may say not to): every node of every launch imports the package again.
unset PYTHONDONTWRITEBYTECODE
python -m pytest -q -rfEs -n "${INTERA_TEST_WORKERS:-2}" --dist loadgroup "$@"  # (-rfEs: failures, errors, skips)
