#!/usr/bin/env bash
# Runs every test: pure-core pytest, node tests against a private rosmaster, every rostest .test.
# The pytest summary line is the last thing printed.
set -eo pipefail
cd "$(dirname "$0")"
. ./env.sh
ROS_HOME="$(mktemp -d)"; export ROS_HOME
trap 'rm -rf "$ROS_HOME"' EXIT
unset ROS_IP
# two workers (pytest-xdist; INTERA_TEST_WORKERS=0 runs in this process): the tests of a module (a class) stay on one,
# which starts its robot once; each worker has its own rosmaster and its emulators their own loopback address
python -m pytest -q -rfEs -n "${INTERA_TEST_WORKERS:-2}" --dist loadscope "$@"  # (-rfEs: failures, errors, skips)
