#!/usr/bin/env bash
# Runs every test: pure-core pytest, node tests against a private rosmaster, every rostest .test.
# The pytest summary line is the last thing printed.
set -eo pipefail
cd "$(dirname "$0")"
. ./env.sh
ROS_HOME="$(mktemp -d)"; export ROS_HOME
trap 'rm -rf "$ROS_HOME"' EXIT
unset ROS_IP
python -m pytest -q -rfEs "$@"  # (-rfEs: failures, errors and every skip with its reason)
