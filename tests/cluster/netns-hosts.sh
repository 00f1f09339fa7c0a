#!/usr/bin/env bash
# Several "hosts" on this machine, for multi-host tests and for trying a cluster launch by hand.
#
#   tests/cluster/netns-hosts.sh up DIR N [PREFIX]   # hosts PREFIX1..PREFIXN (default prefix "h")
#   tests/cluster/netns-hosts.sh down DIR            # removes exactly what `up DIR` made; idempotent
#   tests/cluster/netns-hosts.sh clean PREFIX        # removes a set of PREFIX whose DIR is lost
#
# Each host is a network namespace mbh-<PREFIX><i> with a veth pair (eth0 inside, mbh-<PREFIX><i>
# outside) on a bridge mbh-<PREFIX> in the root namespace, which holds 10.211.K.1/24; host i is
# 10.211.K.(10+i). K is derived from PREFIX and moved on (under a lock) while another bridge
# holds that subnet, so two sets with different prefixes never clash. Each host runs its own
# sshd (listening only on its address; root by key only) started inside
# `ip netns exec NS unshare --uts` with the hostname PREFIX<i>, so everything started over ssh has
# that host's network and host name; file system and pid namespace stay shared, as on hosts
# with a shared file system. `ip netns exec` bind-mounts /etc/netns/NS/hosts over /etc/hosts, so
# the hosts resolve each other by name.
#
# DIR receives: ssh_config (Host PREFIX<i> -> its address, the key, no host-key checks, BatchMode),
# id_ed25519 (the client key), host keys, sshd configs, logs and pid files, hosts.env (SUBNET,
# BRIDGE, ADDR_<host>, HOSTS) and the state `down` reads.
# Exit codes: 0 done; 1 something did not come up (named); 2 a prerequisite is missing (not root,
# iproute2 / openssh-server / openssh-client / util-linux missing: named); 3 network namespaces
# cannot be created here (e.g. a container without CAP_SYS_ADMIN / CAP_NET_ADMIN).
set -u

usage() { echo "usage: $0 up DIR N [PREFIX] | down DIR | clean PREFIX" >&2; exit 2; }
die() { echo "netns-hosts: $1" >&2; exit "${2:-1}"; }
[ $# -ge 2 ] || usage
verb=$1
dir=$2
LOCK=/run/moebench-netns-hosts.lock

# Kills every process in namespace $1 (TERM, then KILL after 3 s).
kill_namespace_procs() {
  local ns=$1 pids i
  pids=$(ip netns pids "$ns" 2>/dev/null)
  [ -n "$pids" ] || return 0
  kill -TERM $pids 2>/dev/null
  for i in $(seq 30); do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [ -n "$pids" ] || return 0
    sleep 0.1
  done
  kill -KILL $pids 2>/dev/null
  sleep 0.2
}

# Removes the hosts of prefix $1 numbered 1..$2 (state in $3, may be ""): their sshds, every
# process left in their namespaces, the namespaces, veths, bridge and /etc/netns entries.
remove_set() {
  local prefix=$1 n=$2 state=$3 i ns
  for i in $(seq "$n"); do
    ns="mbh-$prefix$i"
    if [ -n "$state" ] && [ -s "$state/sshd-$prefix$i.pid" ]; then
      kill -TERM "$(tr -dc '0-9' <"$state/sshd-$prefix$i.pid")" 2>/dev/null
      rm -f "$state/sshd-$prefix$i.pid"
    fi
    if ip netns list 2>/dev/null | grep -qw "^$ns"; then
      kill_namespace_procs "$ns"
      ip netns del "$ns" 2>/dev/null
    fi
    ip link del "$ns" 2>/dev/null  # the outer veth end (gone with the namespace normally)
    rm -rf "/etc/netns/$ns"
  done
  ip link del "mbh-$prefix" 2>/dev/null
  return 0
}

do_down() {
  [ -f "$dir/netns-hosts.state" ] || return 0
  remove_set "$(sed -n 's/^PREFIX=//p' "$dir/netns-hosts.state")" "$(sed -n 's/^N=//p' "$dir/netns-hosts.state")" "$dir"
  rm -f "$dir/netns-hosts.state"
}

# `clean PREFIX`: a set whose DIR is lost (a test killed before its `down`).
do_clean() {
  local prefix=$1 n
  [[ "$prefix" =~ ^[a-z]{1,8}$ ]] || die "PREFIX must be 1 to 8 lowercase letters (got '$prefix')" 2
  n=$(ip netns list 2>/dev/null | sed -n "s/^mbh-$prefix\([0-9][0-9]*\)\b.*/\1/p" | sort -n | tail -n 1)
  remove_set "$prefix" "${n:-0}" ""
}

# Is 10.211.K.0/24 ($1 = "10.211.K") in use here: an address in it, or a route to it?
subnet_used() {
  ip -o -4 addr show 2>/dev/null | grep -q " $1\." || ip -4 route show 2>/dev/null | grep -q "^$1\."
}

do_up() {
  local n=${1:-} prefix=${2:-h}
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 40 ] || die "N must be 1..40 (got '$n')" 2
  [[ "$prefix" =~ ^[a-z]{1,8}$ ]] ||
    die "PREFIX must be 1 to 8 lowercase letters (got '$prefix'): hosts are PREFIX<i>, namespaces mbh-PREFIX<i>" 2
  [ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, veth pairs, sshd); run as root" 2
  command -v ip >/dev/null || die "ip is not installed (Debian: apt-get install iproute2)" 2
  [ -x /usr/sbin/sshd ] || die "/usr/sbin/sshd is not installed (Debian: apt-get install openssh-server)" 2
  command -v ssh >/dev/null && command -v ssh-keygen >/dev/null ||
    die "ssh / ssh-keygen are not installed (Debian: apt-get install openssh-client)" 2
  command -v unshare >/dev/null && command -v flock >/dev/null ||
    die "unshare / flock are not installed (Debian: apt-get install util-linux)" 2
  mkdir -p "$dir" || die "cannot create $dir" 2
  dir=$(cd "$dir" && pwd)
  [ -f "$dir/netns-hosts.state" ] && die "hosts of $dir are up already: $0 down $dir first" 2
  local bridge="mbh-$prefix" i ns probe="mbh-probe$$"
  ip netns list 2>/dev/null | grep -q "^mbh-$prefix[0-9]" &&
    die "namespaces mbh-$prefix<i> exist already: another set of prefix '$prefix' is up (pick another prefix), or one was left behind ($0 clean $prefix removes it)" 2
  # Can this machine make namespaces at all? (A container without CAP_SYS_ADMIN cannot.)
  local err
  if ! err=$(ip netns add "$probe" 2>&1); then
    die "cannot create a network namespace here: $err" 3
  fi
  if ! err=$(ip netns exec "$probe" unshare --uts true 2>&1); then
    ip netns del "$probe" 2>/dev/null
    die "cannot create a UTS namespace inside a network namespace here: $err" 3
  fi
  ip netns del "$probe"

  # The subnet: from PREFIX's checksum, the next free one while another bridge holds it.
  local k sub
  exec 9>"$LOCK"
  flock 9
  k=$(( $(printf '%s' "$prefix" | cksum | cut -d' ' -f1) % 250 ))
  for _ in $(seq 250); do
    sub="10.211.$k"
    subnet_used "$sub" || break
    k=$(( (k + 1) % 250 ))
  done
  subnet_used "$sub" && die "no free subnet 10.211.K.0/24 (every one has an address or a route here)" 1
  printf 'PREFIX=%s\nN=%s\n' "$prefix" "$n" >"$dir/netns-hosts.state"
  trap 'do_down; exit 1' INT TERM
  ip link add "$bridge" type bridge || { do_down; die "cannot create the bridge $bridge" 3; }
  ip addr add "$sub.1/24" dev "$bridge"
  ip link set "$bridge" up
  flock -u 9

  # Keys: one client key, one host key for all hosts (they are one machine).
  ssh-keygen -q -t ed25519 -N '' -f "$dir/id_ed25519" -C moebench-netns-hosts <<<y >/dev/null 2>&1 ||
    { do_down; die "ssh-keygen failed"; }
  ssh-keygen -q -t ed25519 -N '' -f "$dir/host_ed25519" -C moebench-netns-host <<<y >/dev/null 2>&1 ||
    { do_down; die "ssh-keygen failed"; }
  cp "$dir/id_ed25519.pub" "$dir/authorized_keys"
  chmod 600 "$dir/id_ed25519" "$dir/host_ed25519" "$dir/authorized_keys"
  mkdir -p /run/sshd && chmod 755 /run/sshd

  local hosts_file="127.0.0.1 localhost"$'\n' names="" host addr
  : >"$dir/ssh_config"
  {
    echo "SUBNET=$sub.0/24"
    echo "BRIDGE=$bridge"
    echo "BRIDGE_ADDR=$sub.1"
  } >"$dir/hosts.env"
  for i in $(seq "$n"); do
    host="$prefix$i"
    addr="$sub.$((10 + i))"
    hosts_file+="$addr $host"$'\n'
    names+="$host "
    echo "ADDR_$host=$addr" >>"$dir/hosts.env"
    cat >>"$dir/ssh_config" <<EOF
Host $host
  HostName $addr
  User root
  IdentityFile $dir/id_ed25519
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  BatchMode yes
  LogLevel ERROR
  ConnectTimeout 10
EOF
  done
  echo "HOSTS=\"${names% }\"" >>"$dir/hosts.env"

  for i in $(seq "$n"); do
    host="$prefix$i"
    ns="mbh-$host"
    addr="$sub.$((10 + i))"
    ip netns add "$ns" || { do_down; die "cannot create the network namespace $ns" 3; }
    mkdir -p "/etc/netns/$ns"
    printf '%s' "$hosts_file" >"/etc/netns/$ns/hosts"
    ip link add "$ns" type veth peer name eth0 netns "$ns" || { do_down; die "cannot create the veth pair $ns/eth0" 3; }
    ip link set "$ns" master "$bridge"
    ip link set "$ns" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$addr/24" dev eth0
    ip -n "$ns" link set eth0 up
    cat >"$dir/sshd_config-$host" <<EOF
# sshd of host $host (namespace $ns), generated by tests/cluster/netns-hosts.sh
ListenAddress $addr
Port 22
HostKey $dir/host_ed25519
PidFile $dir/sshd-$host.pid
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
LogLevel ERROR
MaxStartups 100:30:200
MaxSessions 100
EOF
    ip netns exec "$ns" unshare --uts sh -c "hostname $host && exec /usr/sbin/sshd -f '$dir/sshd_config-$host' -E '$dir/sshd-$host.log'" ||
      { do_down; die "sshd of $host did not start: $(tail -n 3 "$dir/sshd-$host.log" 2>/dev/null | tr '\n' ' ')"; }
  done
  trap - INT TERM

  # Up when every host answers over ssh with its own name (bounded: 10 s each).
  local got
  for i in $(seq "$n"); do
    host="$prefix$i"
    got=""
    for _ in $(seq 50); do
      got=$(ssh -F "$dir/ssh_config" "$host" hostname 2>/dev/null) && [ "$got" = "$host" ] && break
      sleep 0.2
    done
    [ "$got" = "$host" ] ||
      { do_down; die "host $host does not answer over ssh as $host (got '$got'); see $dir/sshd-$host.log"; }
  done
  echo "hosts ${names% } up on $sub.0/24; ssh -F $dir/ssh_config ${prefix}1"
}

case "$verb" in
  up) shift 2; do_up "$@" ;;
  down) [ $# -eq 2 ] || usage; do_down ;;
  clean) [ $# -eq 2 ] || usage; do_clean "$2" ;;
  *) usage ;;
esac
