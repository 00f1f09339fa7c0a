#!/usr/bin/env bash
# A private one-node Slurm on this machine, for tests and for trying a job script by hand.
#
#   tests/cluster/slurm-local.sh start DIR [PID]  # munged (if none answers), slurmctld, slurmd;
#                                     # prints the `export SLURM_CONF=DIR/slurm.conf` line to use.
#                                     # PID: a process (the test) whose end stops this Slurm too,
#                                     # should it die without calling stop
#   tests/cluster/slurm-local.sh stop DIR   # stops exactly what `start DIR` started; removes its state
#
# DIR holds everything: slurm.conf (generated: this host as the only node, CPUs = max(8, cores)
# so `srun -n 4` runs on a 2-core machine, partition "debug" oversubscribed up to 8 tasks per
# CPU, MpiDefault=pmix so a plain `srun -n 4 moebench run CONFIG` starts MPI ranks), the daemons'
# state, spool, logs and pid files. Ports: the first free pair from 16817/16818 up.
# munged is the system one (/run/munge, the key of the munge package); it is started only when
# none answers and then stopped by `stop` (DIR/munged.pid marks that this script started it).
# Needs root, slurm-wlm (slurmctld, slurmd, slurm-client, the pmix plugin), munge and libpmix.so,
# which Slurm's pmix plugin loads (Debian: apt-get install slurm-wlm munge libpmix-dev; the last
# comes with libopenmpi-dev already). Exit codes: 0 done, 1 a daemon did not come up (its log is
# named), 2 a prerequisite is missing (named).
set -u

usage() { echo "usage: $0 start DIR [PID] | stop DIR" >&2; exit 2; }
if [ $# -lt 2 ] || [ $# -gt 3 ]; then usage; fi
verb=$1
dir=$2
owner=${3:-}
die() { echo "slurm-local: $1" >&2; exit "${2:-1}"; }

# Whether process $1 runs (a zombie does not: it has ended, its parent has not reaped it yet).
running() { [ -r "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]; }

# pid from a pid file, if that process runs program $2.
live_pid() {
  local file=$1 prog=$2 pid
  [ -s "$file" ] || return 1
  pid=$(tr -dc '0-9' <"$file")
  [ -n "$pid" ] && running "$pid" && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$prog" ] && echo "$pid"
}

# Stops the program whose pid file is $1 (if it is alive and is $2): TERM, then KILL after 10 s.
stop_daemon() {
  local file=$1 prog=$2 pid
  pid=$(live_pid "$file" "$prog") || { rm -f "$file"; return 0; }
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 100); do
    running "$pid" || break
    sleep 0.1
  done
  running "$pid" && kill -KILL "$pid" 2>/dev/null
  rm -f "$file"
}

do_stop() {
  [ -d "$dir" ] || return 0
  [ -f "$dir/slurm.conf" ] && SLURM_CONF="$dir/slurm.conf" scancel --full --quiet --user=root >/dev/null 2>&1
  [ "${1:-}" = from-watch ] || stop_daemon "$dir/watch.pid" bash
  stop_daemon "$dir/slurmd.pid" slurmd
  stop_daemon "$dir/slurmctld.pid" slurmctld
  stop_daemon "$dir/munged.pid" munged
  rm -rf "$dir/state" "$dir/spool"
  return 0
}

# The last lines of the first non-empty file of $@, on one line.
last_words() {
  local f
  for f in "$@"; do
    if [ -s "$f" ]; then tail -n 3 "$f" | tr '\n' ' '; return; fi
  done
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

do_start() {
  [ -z "$owner" ] || running "$owner" || die "no process $owner to watch" 2
  [ "$(id -u)" -eq 0 ] || die "needs root (slurmd runs jobs as any user); run as root" 2
  local tool
  for tool in slurmctld slurmd srun sbatch sinfo scancel; do
    command -v "$tool" >/dev/null || die "$tool is not installed (Debian: apt-get install slurm-wlm)" 2
  done
  for tool in munged munge unmunge; do
    command -v "$tool" >/dev/null || die "$tool is not installed (Debian: apt-get install munge)" 2
  done
  [ -r /etc/munge/munge.key ] || die "/etc/munge/munge.key is missing (reinstall munge, or create it: mungekey)" 2
  compgen -G "/usr/lib/*/slurm-wlm/mpi_pmix*.so" >/dev/null || compgen -G "/usr/lib*/slurm/mpi_pmix*.so" >/dev/null ||
    die "Slurm's pmix plugin (mpi_pmix.so) is not installed (Debian: apt-get install slurm-wlm-basic-plugins)" 2
  compgen -G "/usr/lib/*/pmix2/lib/libpmix.so" >/dev/null || compgen -G "/usr/lib*/libpmix.so" >/dev/null ||
    compgen -G "/usr/lib/*/libpmix.so" >/dev/null ||
    die "libpmix.so is not installed: Slurm's pmix plugin loads it (Debian: apt-get install libpmix-dev)" 2
  mkdir -p "$dir" || die "cannot create $dir" 2
  dir=$(cd "$dir" && pwd)
  if live_pid "$dir/slurmctld.pid" slurmctld >/dev/null || live_pid "$dir/slurmd.pid" slurmd >/dev/null; then
    die "a Slurm of $dir is running already: stop it first ($0 stop $dir)" 2
  fi
  mkdir -p "$dir/state" "$dir/spool"

  # munged: the running one if it answers, else ours.
  if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null
    runuser -u munge -- munged --force >"$dir/munged.out" 2>&1 ||
      die "munged did not start: $(cat "$dir/munged.out") (log: /var/log/munge/munged.log)"
    cp /run/munge/munged.pid "$dir/munged.pid"
    for _ in $(seq 50); do
      munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
      sleep 0.1
    done
    munge -n | unmunge >/dev/null 2>&1 || { do_stop; die "munged does not answer (log: /var/log/munge/munged.log)"; }
  fi

  local host cpus ctl_port=16817 port
  host=$(hostname -s)
  cpus=$(nproc --all)
  [ "$cpus" -lt 8 ] && cpus=8
  while ! port_free "$ctl_port" || ! port_free $((ctl_port + 1)); do
    ctl_port=$((ctl_port + 2))
    [ "$ctl_port" -gt 16999 ] && die "no free port pair between 16817 and 17000" 2
  done
  port=$((ctl_port + 1))
  cat >"$dir/slurm.conf" <<EOF
# Generated by tests/cluster/slurm-local.sh: a private one-node Slurm on $host.
ClusterName=moebench
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctl_port
SlurmdPort=$port
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
AuthType=auth/munge
MpiDefault=pmix
ReturnToService=2
SlurmdParameters=config_overrides
InactiveLimit=0
KillWait=5
MinJobAge=300
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
EOF
  export SLURM_CONF="$dir/slurm.conf"
  slurmctld -f "$SLURM_CONF" >"$dir/slurmctld.out" 2>&1 ||
    { do_stop; die "slurmctld did not start: $(last_words "$dir/slurmctld.out" "$dir/slurmctld.log")(log: $dir/slurmctld.log)"; }
  slurmd -f "$SLURM_CONF" -N "$host" >"$dir/slurmd.out" 2>&1 ||
    { do_stop; die "slurmd did not start: $(last_words "$dir/slurmd.out" "$dir/slurmd.log")(log: $dir/slurmd.log)"; }
  # Up when the node is idle (bounded: 30 s).
  local state=""
  for _ in $(seq 150); do
    state=$(sinfo -h -n "$host" -o %T 2>/dev/null)
    [ "$state" = idle ] && break
    sleep 0.2
  done
  if [ "$state" != idle ]; then
    do_stop
    die "the node $host is not idle after 30 s (state: ${state:-no answer from slurmctld}); see $dir/slurmctld.log and $dir/slurmd.log"
  fi
  if [ -n "$owner" ]; then  # stops this Slurm when the owner ends without `stop`
    setsid bash "$0" watch "$dir" "$owner" </dev/null >/dev/null 2>&1 &
    echo $! >"$dir/watch.pid"
  fi
  echo "export SLURM_CONF=$SLURM_CONF"
}

# Waits for the owner to end, then stops the Slurm of DIR (`stop` ends this watch first).
do_watch() {
  while running "$owner"; do sleep 1; done
  do_stop from-watch
  rm -f "$dir/watch.pid"
}

case "$verb" in
  start) do_start ;;
  stop) do_stop ;;
  watch) [ -n "$owner" ] || usage; do_watch ;;
  *) usage ;;
esac
