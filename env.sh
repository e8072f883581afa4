# Source me: . ./env.sh — the venv (pinocchio, MuJoCo, …) plus the workspace's devel space.
_icws="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
. "$_icws/.venv/bin/activate"
. "$_icws/devel/setup.bash"
export ROS_HOSTNAME="${ROS_HOSTNAME:-localhost}"
unset _icws
