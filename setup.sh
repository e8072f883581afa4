#!/usr/bin/env bash
# One command on a fresh Debian 12 machine: ROS 1 from Debian, a venv that sees it, pinned PyPI
# packages, the Intera SDK in src/intera_sdk, RViz and Xvfb, and a catkin build of ./src.
# Idempotent; a re-run only rebuilds what changed.
#   ./setup.sh            everything: the robot stack, the Intera SDK (and what it needs), RViz and Xvfb
#   ./setup.sh --minimal  the robot stack only: no SDK, none of its apt/PyPI extras, no RViz/Xvfb
# The SDK (RethinkRobotics/intera_sdk at 6614dec, test material: copied unmodified into the gitignored
# src/intera_sdk, never into the repository) comes from $INTERA_SDK_SRC (a directory), else
# ../shared/intera_sdk beside the repository, else a git clone of the pinned commit ($INTERA_SDK_GIT).
# A src/intera_sdk that is not the copy this script made (a user's own, or one edited since) is left as it is.
# (--with-sdk and --with-viz, the old opt-ins, are still accepted and do nothing: both are the default.)
set -eo pipefail
if [ -n "$INTERA_SDK_SRC" ] && [ -d "$INTERA_SDK_SRC" ]; then INTERA_SDK_SRC=$(cd "$INTERA_SDK_SRC" && pwd); fi
cd "$(dirname "$0")"
WITH_SDK=1
WITH_VIZ=1
for a in "$@"; do case "$a" in --minimal) WITH_SDK=0; WITH_VIZ=0 ;; --with-sdk | --with-viz) ;;
  *) echo "unknown option $a (./setup.sh [--minimal])" >&2; exit 2 ;; esac; done
SDK_PIN=6614dec
SDK_GIT="${INTERA_SDK_GIT:-https://github.com/RethinkRobotics/intera_sdk}"
export DEBIAN_FRONTEND=noninteractive
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo

APT_PKGS="cmake g++ python3-venv python3-pip python3-yaml
  catkin catkin-tools ros-message-generation ros-message-runtime rosbash
  python3-rospy python3-rostest librostest-dev python3-actionlib python3-roslaunch
  python3-rostopic python3-rosmsg python3-rosnode python3-rosservice python3-rosparam
  ros-std-msgs libstd-msgs-dev ros-geometry-msgs libgeometry-msgs-dev
  ros-sensor-msgs libsensor-msgs-dev ros-actionlib-msgs libactionlib-msgs-dev
  ros-trajectory-msgs libtrajectory-msgs-dev ros-std-srvs libstd-srvs-dev
  ros-diagnostic-msgs libdiagnostic-msgs-dev ros-visualization-msgs libvisualization-msgs-dev
  python3-std-msgs python3-geometry-msgs python3-sensor-msgs python3-actionlib-msgs
  python3-trajectory-msgs python3-std-srvs python3-diagnostic-msgs python3-visualization-msgs
  ros-robot-state-publisher python3-tf2-ros
  libegl1 libegl-mesa0 libgl1-mesa-dri"  # (the last three: MuJoCo's headless rendering, MUJOCO_GL=egl)
SDK_APT="git python3-tf python3-cv-bridge libcv-bridge-dev python3-dynamic-reconfigure python3-pykdl python3-tf-conversions
  libdynamic-reconfigure-config-init-mutex-dev"
[ "$WITH_SDK" = 1 ] && APT_PKGS="$APT_PKGS $SDK_APT"
[ "$WITH_VIZ" = 1 ] && APT_PKGS="$APT_PKGS rviz xvfb"

# apt only when something is missing: a re-run stays fast and offline.
missing=$(dpkg-query -W -f='${Package} ${Status}\n' $APT_PKGS 2>/dev/null | awk '$4 != "installed" {print $1}' || true)
want=$(echo $APT_PKGS | wc -w); have=$(dpkg-query -W -f='${Status}\n' $APT_PKGS 2>/dev/null | grep -c 'ok installed' || true)
if [ -n "$missing" ] || [ "$have" != "$want" ]; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends $APT_PKGS >/dev/null
fi

[ -x .venv/bin/python3 ] || /usr/bin/python3 -m venv --system-site-packages .venv
stamp=.venv/.requirements.sha
if [ ! -f "$stamp" ] || ! sha1sum -c --status "$stamp" 2>/dev/null; then
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
  sha1sum requirements.txt > "$stamp"
fi
site=$(.venv/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# scripts on a simulated robot's time see it from their first line (tools/_intera_compat_simtime.py says why)
cp tools/_intera_compat_hooks.py tools/_intera_compat_simtime.py "$site/"
echo "import _intera_compat_simtime" > "$site/_intera_compat_simtime.pth"
if [ "$WITH_SDK" = 1 ]; then
  sdk_stamp=.venv/.requirements-sdk.sha
  if [ ! -f "$sdk_stamp" ] || ! sha1sum -c --status "$sdk_stamp" 2>/dev/null; then
    .venv/bin/pip install -q --disable-pip-version-check -r requirements-sdk.txt -c requirements.txt
    sha1sum requirements-sdk.txt requirements.txt > "$sdk_stamp"
  fi
  # PyYAML 5.x's yaml.load default for the SDK's scripts (tools/_intera_sdk_compat.py says why)
  cp tools/_intera_sdk_compat.py "$site/"
  echo "import _intera_sdk_compat" > "$site/_intera_sdk_compat.pth"
fi

# The SDK's copy: a tree's manifest (every file's content and which are executable, .git left out) tells
# whether src/intera_sdk is the source already (nothing to do), the copy made last time (.cache/intera_sdk.manifest:
# replaced when the source changed) or someone's own (left alone).
sdk_manifest() {
  (cd "$1" && find . -name .git -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha1sum &&
    find . -name .git -prune -o -type f -perm -u+x -print | LC_ALL=C sort)
}
install_sdk() {
  local dst=src/intera_sdk stamp=.cache/intera_sdk.manifest from= have
  mkdir -p .cache
  if [ -n "$INTERA_SDK_SRC" ]; then
    from=$INTERA_SDK_SRC
    [ -d "$from" ] || { echo "INTERA_SDK_SRC=$from is not a directory" >&2; return 1; }
  elif [ -d ../shared/intera_sdk ]; then
    from=../shared/intera_sdk
  fi
  if [ -e "$dst" ]; then
    have=$(sdk_manifest "$dst")
    if [ -f "$stamp" ] && [ "$have" = "$(cat "$stamp")" ] &&
       { [ -z "$from" ] || [ "$have" = "$(sdk_manifest "$from")" ]; }; then
      return 0  # the copy made last time, unchanged, and the source has not changed (or is only the pinned clone)
    fi
    if [ -n "$from" ] && [ "$have" = "$(sdk_manifest "$from")" ]; then
      echo "$have" > "$stamp"; return 0  # already the source's content (copied by hand): adopted
    fi
    if [ ! -f "$stamp" ] || [ "$have" != "$(cat "$stamp")" ]; then
      echo "note: src/intera_sdk is not the copy ./setup.sh made (your own, or edited since): left as it is;" \
           "remove it to have ${from:-the pinned $SDK_PIN} installed" >&2
      return 0
    fi
  fi
  if [ -z "$from" ]; then
    from=.cache/intera_sdk-$SDK_PIN
    if [ ! -d "$from/.git" ]; then
      rm -rf "$from.tmp"
      git clone -q --no-checkout "$SDK_GIT" "$from.tmp"
      git -C "$from.tmp" -c advice.detachedHead=false checkout -q "$SDK_PIN"
      mv "$from.tmp" "$from"
    fi
  fi
  echo "installing the Intera SDK into src/intera_sdk from $from"
  rm -rf .cache/intera_sdk.new && mkdir .cache/intera_sdk.new
  tar -C "$from" --exclude=.git -cf - . | tar -C .cache/intera_sdk.new --no-same-owner -xf -
  chmod -R u+w .cache/intera_sdk.new  # (a read-only source stays removable here)
  rm -rf "$dst" && mv .cache/intera_sdk.new "$dst"
  sdk_manifest "$dst" > "$stamp"
}
if [ "$WITH_SDK" = 1 ]; then install_sdk; fi  # (not `&& install_sdk`: set -e would not reach inside)

. .venv/bin/activate
# catkin caches PYTHONPATH at configure time: the devel dir must exist first (environment_notes P4).
mkdir -p devel/lib/python3/dist-packages
export ROS_LANG_DISABLE=gencpp:geneus:genlisp:gennodejs
if [ ! -f .catkin_tools/profiles/default/config.yaml ]; then
  catkin init >/dev/null
  catkin config --cmake-args -DPYTHON_EXECUTABLE="$PWD/.venv/bin/python3" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
pkgs=
if [ "$WITH_SDK" = 0 ] && [ -d src/intera_sdk ]; then
  # --minimal installed nothing the SDK needs: build every package but its own
  pkgs=$(comm -23 <(catkin list -u -d src | sort) <(catkin list -u -d src/intera_sdk | sort))
  echo "note: --minimal leaves src/intera_sdk's packages out of the build" >&2
fi
catkin build --no-status --no-notify -s $pkgs 2>&1 | tail -n 3
# the realtime cycle's numba kernels compiled once into their cache (__pycache__ beside each module), so no robot
# process compiles them at its start (loop/warm.py)
(. ./env.sh && python -m intera_compat.loop.warm) || { echo "setup: the cycle's kernels do not compile (above)" >&2; exit 1; }
echo "setup ok: . ./env.sh"
