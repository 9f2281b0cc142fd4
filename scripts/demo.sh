#!/usr/bin/env bash
# The fabricdiag demo on a fresh Debian 12 machine: installs missing
# packages, builds, then runs a real deployment on loopback diagnosing a
# simulated MoE training cluster:
#   - fabricdiag-sim keeps a sysfs tree and `ethtool -S` files for every
#     simulated GPU node (8 mlx5 RoCE NICs each) and leaf switch, advancing
#     every counter in real time from the job's traffic model;
#   - one real fabricdiag-agent per node and switch reads its tree, serves
#     /metrics and streams to
#   - a real fabricdiag-collector, which runs the analyzers;
#   - a stand-in training job (python/examples/standin_job.py: Python, no
#     torch) declares the MoE job the way rank 0 does, over the collector's
#     HTTP API with explicit ranks and a 10 s lease that it renews;
#   - nobody writes a topology: the agents read the LLDP neighbors the
#     simulator writes (--lldp_file), the collector draws the fabric from
#     them, and the demo adopts what it drew as the declared topology
#     (`fabricdiag topology adopt`);
#   - the fabricdiag CLI prints every finding as it opens and resolves
#     (`fabricdiag watch`).
# The timeline: healthy, a hot expert, a PFC storm, ECMP polarization, a TP
# group declared across two nodes, a host cable moved to another leaf port
# (cabling_mismatch), then the training job killed with SIGKILL during a hot
# expert: its layout expires with its lease and its findings resolve. About
# two and a half minutes, then it stops everything it started.
#
# Usage: scripts/demo.sh
#          [--scenario=all|hot_expert|pfc_storm|ecmp|tp_cross|miscabling|lease]
#          [--nodes=N] [--keep] [--no_build]
#   --nodes=N   GPU nodes (even, >= 4; default 8), half behind each leaf
#   --keep      keep the cluster (and the collector's live page) running after
#               the timeline (Ctrl-C stops)
set -euo pipefail
cd "$(dirname "$0")/.."

scenario=all
nodes=8
keep=0
build=1
for arg in "$@"; do
  case "$arg" in
    --scenario=*) scenario=${arg#*=} ;;
    --nodes=*) nodes=${arg#*=} ;;
    --keep) keep=1 ;;
    --no_build) build=0 ;;
    -h | --help)
      sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "demo.sh: unknown argument '$arg' (see --help)" >&2
      exit 2
      ;;
  esac
done
case "$scenario" in
  all | hot_expert | pfc_storm | ecmp | tp_cross | miscabling | lease) ;;
  *)
    echo "demo.sh: --scenario must be all, hot_expert, pfc_storm, ecmp, tp_cross, miscabling or lease" >&2
    exit 2
    ;;
esac
if ! [[ "$nodes" =~ ^[0-9]+$ ]] || ((nodes < 4 || nodes % 2 != 0 || nodes > 256)); then
  echo "demo.sh: --nodes must be an even number between 4 and 256" >&2
  exit 2
fi

if ((build)); then
  scripts/install-deps.sh
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j"$(nproc)" --target fabricdiag-agent \
    fabricdiag-collector fabricdiag fabricdiag-sim
fi

bin=${FABRICDIAG_BUILD_DIR:-build}
agent=$bin/agent/fabricdiag-agent
collector=$bin/server/fabricdiag-collector
cli=$bin/cli/fabricdiag
sim=$bin/sim/fabricdiag-sim
base_port=${DEMO_BASE_PORT:-19800}
grpc="127.0.0.1:$((base_port + 11))"
http="127.0.0.1:$((base_port + 12))"
# Counter files are rewritten every second: keep them in memory when we can.
work_base=/tmp
[[ -d /dev/shm && -w /dev/shm ]] && work_base=/dev/shm
work=$(mktemp -d "$work_base/fabricdiag-demo.XXXXXX")

pids=()
cleanup() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo; echo "interrupted: stopping"; exit 130' INT TERM

banner() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
say() { printf '\033[36m-- %s\033[0m\n' "$*"; }

# --- the cluster: one MoE job over every node, two leaves -------------------
hosts=()
for ((i = 0; i < nodes; i++)); do hosts+=("$(printf 'gpu-%03d' "$i")"); done
half=$((nodes / 2))
rails=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7
model="{\"params\": 1.6e10, \"hidden\": 4096, \"layers\": 32, \"seq_len\": 4096,
 \"micro_batch\": 1, \"micro_batches\": 8, \"dtype_bytes\": 2,
 \"experts\": $((nodes * 8)), \"top_k\": 2}"
# The job as the simulator's traffic model reads it; the collector gets the
# same layout from the training job itself (below).
{
  echo "job: moe-train-42"
  echo "gpus_per_node: 8"
  echo "parallelism: {tp: 8, pp: 1, dp: $nodes, ep: $nodes}"
  echo "hosts: [$(IFS=,; echo "${hosts[*]}" | sed 's/,/, /g')]"
  echo "rails: [mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7]"
  echo "model: {params: 1.6e10, hidden: 4096, layers: 32, seq_len: 4096,"
  echo "        micro_batch: 1, micro_batches: 8, dtype_bytes: 2,"
  echo "        experts: $((nodes * 8)), top_k: 2}"
} >"$work/moe-train-42.yaml"
{
  echo "switches:"
  echo "  - {name: leaf-0, uplinks: [swp49, swp50, swp51, swp52]}"
  echo "  - {name: leaf-1, uplinks: [swp49, swp50, swp51, swp52]}"
  echo "links:"
  for ((i = 0; i < nodes; i++)); do
    leaf=$((i / half))
    for ((n = 0; n < 8; n++)); do
      echo "  - {host: ${hosts[$i]}, nic: mlx5_$n, switch: leaf-$leaf, port: swp$(((i % half) * 8 + n + 1))}"
    done
  done
} >"$work/topology.yaml"
# A second job whose TP groups of 16 cannot fit in an 8-GPU NVLink domain.
cat >"$work/tp-cross.yaml" <<EOF
job: dense-tp16
gpus_per_node: 8
parallelism: {tp: 16, pp: 1, dp: 1}
hosts: [${hosts[0]}, ${hosts[1]}]
rails: [mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7]
model: {params: 7.0e9, hidden: 4096, layers: 32, seq_len: 4096, micro_batch: 1, micro_batches: 4, dtype_bytes: 2}
EOF

# --- the timeline (seconds from the simulator's start) ----------------------
hot_node=${hosts[3]}
storm_node=${hosts[$((half + 1))]}
lease_node=${hosts[$((nodes - 1))]}
mis_node=${hosts[1]}
mis_port=5  # the port of ${hosts[0]} mlx5_4 on leaf-0
phase() { [[ "$scenario" == all || "$scenario" == "$1" ]]; }
t=12
timeline=()  # "start end what"
{
  echo "step_seconds: 1.0"
  echo "faults:"
  if phase hot_expert; then
    echo "  - {kind: hot_expert, start: $t, end: $((t + 20)), node: $hot_node, nic: mlx5_2, factor: 6}"
    timeline+=("$t $((t + 20)) a hot expert: $hot_node mlx5_2 draws 6x its EP group's traffic")
    t=$((t + 28))
  fi
  if phase pfc_storm; then
    echo "  - {kind: pfc_storm, start: $t, end: $((t + 20)), node: $storm_node, nic: mlx5_1, priority: 3}"
    timeline+=("$t $((t + 20)) a PFC storm: $storm_node mlx5_1 is a stuck receiver pausing priority 3")
    t=$((t + 28))
  fi
  if phase ecmp; then
    echo "  - {kind: ecmp_polarization, start: $t, end: $((t + 20)), switch: leaf-1}"
    timeline+=("$t $((t + 20)) ECMP polarization: leaf-1 hashes most flows onto one uplink")
    t=$((t + 28))
  fi
  if phase miscabling; then
    # Two NICs trade leaf ports: each one's neighbor contradicts the
    # topology adopted at the start.
    echo "  - {kind: miscabling, start: $t, end: $((t + 16)), node: $mis_node, nic: mlx5_4, port: swp$mis_port}"
    timeline+=("$t $((t + 16)) a host cable moved: $mis_node mlx5_4 now plugs into leaf-0 swp$mis_port, whose cable takes its port")
    t=$((t + 26))
  fi
  if phase lease; then
    # Lasts to the end: what resolves its finding is the job's layout
    # expiring, not the fabric healing.
    echo "  - {kind: hot_expert, start: $((t + 14)), node: $lease_node, nic: mlx5_6, factor: 6}"
  fi
} >"$work/scenario.yaml"
if ! grep -q 'kind:' "$work/scenario.yaml"; then
  printf 'step_seconds: 1.0\nfaults: []\n' >"$work/scenario.yaml"
fi
tp_at=-1
if phase tp_cross; then
  tp_at=$t
  timeline+=("$t $((t + 12)) a TP group declared across two nodes (job dense-tp16)")
  t=$((t + 14))
fi
lease_at=-1
if phase lease; then
  lease_at=$t
  t=$((t + 14))
fi
end_at=$((t + 12))  # time for the last findings to resolve

# --- start everything ----------------------------------------------------------
banner "starting a simulated cluster: $nodes GPU nodes x 8 NICs, 2 leaf switches"
"$sim" --layout="$work/moe-train-42.yaml" --topology="$work/topology.yaml" \
  --scenario="$work/scenario.yaml" --out="$work/fabric" --interval=1s \
  >"$work/sim.log" 2>&1 &
pids+=($!)
start=$(date +%s)
for _ in $(seq 1 100); do
  [[ -d "$work/fabric/leaf-1/sys/class/net" ]] && break
  sleep 0.1
done
[[ -d "$work/fabric/leaf-1/sys/class/net" ]] || {
  echo "fabricdiag-sim did not create its tree:" >&2
  cat "$work/sim.log" >&2
  exit 1
}

"$collector" --listen="$grpc" --http_listen="$http" --state_dir="$work/state" \
  >"$work/collector.log" 2>&1 &
pids+=($!)

port=$((base_port + 20))
agents=("${hosts[@]}" leaf-0 leaf-1)
for node in "${agents[@]}"; do
  "$agent" --node="$node" --sysfs_root="$work/fabric/$node/sys" \
    --ethtool_dir="$work/fabric/$node/ethtool" \
    --lldp_file="$work/fabric/$node/lldp.json" --collector="$grpc" \
    --listen="127.0.0.1:$port" --interval=1s >"$work/agent-$node.log" 2>&1 &
  pids+=($!)
  port=$((port + 1))
done

for _ in $(seq 1 100); do
  "$cli" --collector="$grpc" nodes >/dev/null 2>&1 && break
  sleep 0.1
done
# The training job declares itself: rank 0's placement of every rank, over
# HTTP, with a lease its daemon thread renews every third of it.
say "a training job declares moe-train-42 over http://$http (explicit ranks, 10 s lease)"
FABRICDIAG_COLLECTOR="http://$http" FABRICDIAG_LEASE=10 python3 \
  python/examples/standin_job.py --job=moe-train-42 \
  --hosts="$(IFS=,; echo "${hosts[*]}")" --tp=8 --ep="$nodes" --rails="$rails" \
  --model="$model" >"$work/job.log" 2>&1 &
job_pid=$!
pids+=("$job_pid")
for _ in $(seq 1 100); do
  grep -q '^declared ' "$work/job.log" && break
  kill -0 "$job_pid" 2>/dev/null || break
  sleep 0.1
done
grep -q '^declared ' "$work/job.log" || {
  echo "the training job did not declare its layout:" >&2
  cat "$work/job.log" >&2
  exit 1
}
"$cli" --collector="$grpc" layout list
# Nobody declares the cabling: the collector draws it from the LLDP
# neighbors every agent reports, and the demo adopts what it drew as the
# declared topology, against which a moved cable shows.
discovered_links() {
  "$cli" --collector="$grpc" topology show --discovered --json 2>/dev/null |
    python3 -c 'import json, sys; print(len(json.load(sys.stdin).get("links", [])))' 2>/dev/null ||
    echo 0
}
all_discovered() { (($(discovered_links) >= nodes * 8)); }
for _ in $(seq 1 100); do
  all_discovered && break
  sleep 0.2
done
say "the collector drew the fabric from LLDP: $(discovered_links) host links (the topology file is the simulator's alone)"
"$cli" --collector="$grpc" topology adopt | sed -n 1p

say "collector gRPC  $grpc   (try: $cli --collector=$grpc findings)"
say "live page       http://$http/   (findings, node x rail heatmap, uplinks, job groups)"
say "collector HTTP  http://$http/metrics  http://$http/api/v1/findings"
say "agents' /metrics on 127.0.0.1:$((base_port + 20))..$((port - 1)) (${agents[0]} first)"

banner "fabricdiag watch: findings as they open, change and resolve"
"$cli" --collector="$grpc" watch &
pids+=($!)

# --- narrate the timeline -------------------------------------------------------
elapsed() { echo $(($(date +%s) - start)); }
sleep_until() {
  local target=$1
  while (($(elapsed) < target)); do sleep 0.2; done
}
say "t=$(elapsed)s healthy: MoE all-to-all with normal routing skew, DP bursts"
for entry in "${timeline[@]}"; do
  read -r from to what <<<"$entry"
  sleep_until "$from"
  say "t=$(elapsed)s FAULT: $what"
  if ((from == tp_at)); then
    "$cli" --collector="$grpc" layout apply "$work/tp-cross.yaml" >/dev/null
  fi
  sleep_until "$to"
  say "t=$(elapsed)s the fault ends; its findings resolve once the fabric has been clean for a few intervals"
  if ((from == tp_at)); then
    "$cli" --collector="$grpc" layout delete dense-tp16 >/dev/null
  fi
done
# Active findings of the job and whether its layout is still declared.
job_findings() {
  "$cli" --collector="$grpc" findings --json | python3 -c '
import json, sys
print(sum(1 for f in json.load(sys.stdin) if f.get("job") == "moe-train-42"))'
}
job_declared() { "$cli" --collector="$grpc" layout list | grep -q moe-train-42; }
wait_for() {  # SECONDS COMMAND...: true once COMMAND succeeds
  local deadline=$(($(date +%s) + $1))
  shift
  until "$@"; do
    (($(date +%s) < deadline)) || return 1
    sleep 0.5
  done
}
if ((lease_at >= 0)); then
  sleep_until "$lease_at"
  say "t=$(elapsed)s FAULT: a hot expert on $lease_node mlx5_6, which the job's layout explains"
  has_job_findings() { (($(job_findings) > 0)); }
  wait_for 20 has_job_findings ||
    say "(no finding of moe-train-42 yet; killing the job anyway)"
  killed=$(date +%s)
  kill -KILL "$job_pid" 2>/dev/null || true
  wait "$job_pid" 2>/dev/null || true
  say "t=$(elapsed)s the training job is killed with SIGKILL: nobody deletes its layout or renews its lease"
  not_declared() { ! job_declared; }
  if wait_for 20 not_declared; then
    say "t=$(elapsed)s the layout of moe-train-42 expired $(($(date +%s) - killed)) s after the kill (lease 10 s)"
  else
    say "t=$(elapsed)s the layout of moe-train-42 is still declared 20 s after the kill"
  fi
  no_job_findings() { (($(job_findings) == 0)); }
  wait_for 15 no_job_findings || true
  say "t=$(elapsed)s active findings of moe-train-42: $(job_findings)"
fi
sleep_until "$end_at"

banner "every finding of the run: $cli findings --all"
"$cli" --collector="$grpc" findings --all

if ((keep)); then
  banner "still running (--keep): the live page is at http://$http/ ; Ctrl-C stops everything"
  wait
fi
banner "done: stopping the simulator, $((${#agents[@]})) agents and the collector"
