#!/usr/bin/env bash
# A local Redis Cluster with the rl module: 3 masters and 3 replicas on 127.0.0.1,
# ports CLUSTER_PORT..CLUSTER_PORT+5 (default 7000-7005; the cluster bus uses port+10000),
# each node daemonized with its data, nodes.conf and server.log in ./cluster/<port>/.
#
#   scripts/cluster.sh         start a fresh cluster (what `make cluster` runs)
#   scripts/cluster.sh stop    shut its nodes down (`make cluster-stop`)
#
# Other overrides: RL_MODULE (the .so to load), REDIS_SERVER (e.g. a valkey-server).
set -euo pipefail
cd "$(dirname "$0")/.."

first=${CLUSTER_PORT:-7000}
ports=$(seq "$first" $((first + 5)))
module=${RL_MODULE:-$PWD/target/release/librl.so}
server=${REDIS_SERVER:-redis-server}

if [ "${1:-}" = stop ]; then
  for port in $ports; do
    redis-cli -p "$port" shutdown nosave 2>/dev/null && echo "stopped $port" || true
  done
  exit 0
fi

[ -f "$module" ] || { echo "cluster: no module at $module; run cargo build --release" >&2; exit 1; }
for port in $ports; do
  if redis-cli -p "$port" ping >/dev/null 2>&1; then
    echo "cluster: port $port is already serving; run make cluster-stop first" >&2
    exit 1
  fi
done

# Each run starts from empty nodes: `--cluster create` only joins nodes that know no cluster.
for port in $ports; do
  dir=$PWD/cluster/$port
  rm -rf "$dir" && mkdir -p "$dir"
  "$server" --port "$port" --bind 127.0.0.1 --daemonize yes \
    --dir "$dir" --logfile "$dir/server.log" --pidfile "$dir/server.pid" \
    --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
    --appendonly yes --repl-diskless-sync-delay 0 --loadmodule "$module"
done

# Polls `$@` for up to 30 s.
wait_for() {
  for _ in $(seq 300); do "$@" && return 0; sleep 0.1; done
  return 1
}
for port in $ports; do
  wait_for redis-cli -p "$port" ping >/dev/null 2>&1 ||
    { echo "cluster: node $port did not start; see cluster/$port/server.log" >&2; exit 1; }
done

addrs=$(for port in $ports; do printf '127.0.0.1:%s ' "$port"; done)
# shellcheck disable=SC2086
redis-cli --cluster create $addrs --cluster-replicas 1 --cluster-yes >cluster/create.log 2>&1 ||
  { cat cluster/create.log >&2; exit 1; }

# Ready: the cluster is ok in this node's view and, on a replica, the link to its master is up.
ready() {
  redis-cli -p "$1" cluster info | grep -q '^cluster_state:ok' &&
    ! redis-cli -p "$1" info replication | grep -q '^master_link_status:down'
}
for port in $ports; do
  wait_for ready "$port" || { echo "cluster: node $port is not ready; see cluster/$port/server.log" >&2; exit 1; }
  redis-cli -p "$port" info replication | tr -d '\r' |
    awk -F: -v port="$port" '/^role:/ { role = $2 } /^master_port:/ { of = " of " $2 }
      END { print "  " port ": " (role == "master" ? "master" : "replica" of) }'
done
cat <<EOF
Cluster is up (the join's log: cluster/create.log).
  connect: redis-cli -c -p $first
  try:     redis-cli -c -p $first RL.GCRA user:42 10 1s BURST 5
  stop:    make cluster-stop
EOF
