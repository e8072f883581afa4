#!/usr/bin/env bash
# One command on a fresh Debian 12 machine: ROS 1 from Debian, a venv that sees it, pinned PyPI
# packages, and a catkin build of ./src. Idempotent; a re-run only rebuilds what changed.
#   ./setup.sh              robot stack
#   ./setup.sh --with-sdk   also what the Intera SDK needs to build and import beside it
#   ./setup.sh --with-viz   also RViz and Xvfb (rviz:=true, headless screenshots)
set -eo pipefail
cd "$(dirname "$0")"
WITH_SDK=0
WITH_VIZ=0
for a in "$@"; do case "$a" in --with-sdk) WITH_SDK=1 ;; --with-viz) WITH_VIZ=1 ;;
  *) echo "unknown option $a" >&2; exit 2 ;; esac; done
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
SDK_APT="python3-tf python3-cv-bridge libcv-bridge-dev python3-dynamic-reconfigure python3-pykdl python3-tf-conversions
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
  .venv/bin/pip install -q --disable-pip-version-check -r requirements-sdk.txt -c requirements.txt
  # PyYAML 5.x's yaml.load default for the SDK's scripts (tools/_intera_sdk_compat.py says why)
  cp tools/_intera_sdk_compat.py "$site/"
  echo "import _intera_sdk_compat" > "$site/_intera_sdk_compat.pth"
fi

. .venv/bin/activate
# catkin caches PYTHONPATH at configure time: the devel dir must exist first (environment_notes P4).
mkdir -p devel/lib/python3/dist-packages
export ROS_LANG_DISABLE=gencpp:geneus:genlisp:gennodejs
if [ ! -f .catkin_tools/profiles/default/config.yaml ]; then
  catkin init >/dev/null
  catkin config --cmake-args -DPYTHON_EXECUTABLE="$PWD/.venv/bin/python3" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
catkin build --no-status --no-notify -s 2>&1 | tail -n 3
echo "setup ok: . ./env.sh"
