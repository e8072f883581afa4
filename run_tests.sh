#!/usr/bin/env bash
# Runs every test: pure-core pytest, node tests against a private rosmaster, every rostest .test.
# The pytest summary line is the last thing printed.
set -eo pipefail
cd "$(dirname "$0")"
. ./env.sh
ROS_HOME="$(mktemp -d)"; export ROS_HOME
trap 'rm -rf "$ROS_HOME"' EXIT
unset ROS_IP
# INTERA_TEST_WORKERS=N runs N pytest-xdist workers (a module's — a class's — tests stay on one, which starts its
# robot once; each worker has its own rosmaster and its emulators their own loopback address). The default is this
# process alone: on 2 cores two workers' robot stacks beside a CPU hog starve each other's 1 kHz loops (measured:
# link-loss faults of the ros_control fake and the Cobot's lifebit; docs/testing.md)
python -m pytest -q -rfEs -n "${INTERA_TEST_WORKERS:-0}" --dist loadscope "$@"  # (-rfEs: failures, errors, skips)
