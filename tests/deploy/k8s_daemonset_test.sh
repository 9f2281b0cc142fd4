#!/bin/sh
# Checks the agent's Kubernetes DaemonSet manifest.
#
#   k8s_daemonset_test.sh MANIFEST AGENT_BINARY
#
# No cluster and no kubectl here, so this checks what the manifest promises
# (see its header) by parsing it with python3-yaml:
#   - one apps/v1 DaemonSet whose selector matches the pod labels;
#   - hostNetwork, the host's /sys mounted read-only (hostPath /sys) at the
#     directory --sysfs_root names;
#   - --node from the downward API (spec.nodeName) via $(NODE_NAME);
#   - least privilege: runAsNonRoot with a non-zero uid, seccomp
#     RuntimeDefault, no privileged, no privilege escalation, read-only root
#     file system, ALL capabilities dropped and none added, no hostPID or
#     hostIPC, no service account token, no writable hostPath;
#   - Prometheus annotations, containerPort and --listen agree on one port;
#   - requests and limits for cpu and memory; a GPU-node toleration;
#   - every flag in args is one the agent (AGENT_BINARY --helpfull) knows.
# Exits 77 (skipped) when python3 or its yaml module is missing.
set -eu

if [ "$#" -ne 2 ]; then
  echo "usage: $0 MANIFEST AGENT_BINARY" >&2
  exit 2
fi
manifest=$1
agent=$2

if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP: python3 not found; cannot parse $manifest"
  exit 77
fi
if ! python3 -c 'import yaml' >/dev/null 2>&1; then
  echo "SKIP: python3 has no yaml module (python3-yaml); cannot parse $manifest"
  exit 77
fi
if [ ! -f "$manifest" ]; then
  echo "FAIL: $manifest does not exist" >&2
  exit 1
fi
if [ ! -x "$agent" ]; then
  echo "FAIL: agent binary $agent is not an executable file" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
# The agent's flags, one name per line, from its own help.
"$agent" --helpfull 2>&1 | sed -n 's/^ *--\([a-z_][a-z0-9_]*\) .*/\1/p' | sort -u >"$tmp/flags"
if ! grep -qx sysfs_root "$tmp/flags"; then
  echo "FAIL: could not read the agent's flags from $agent --helpfull" >&2
  exit 1
fi

python3 - "$manifest" "$tmp/flags" <<'EOF'
import sys
import yaml

manifest_path, flags_path = sys.argv[1], sys.argv[2]
known_flags = set(open(flags_path).read().split())
failures = []


def check(ok, message):
    if not ok:
        failures.append(message)


with open(manifest_path) as f:
    docs = [d for d in yaml.safe_load_all(f) if d is not None]
daemonsets = [d for d in docs if d.get("kind") == "DaemonSet"]
if len(daemonsets) != 1:
    print(f"FAIL: expected one DaemonSet, found {len(daemonsets)}", file=sys.stderr)
    sys.exit(1)
ds = daemonsets[0]
check(ds.get("apiVersion") == "apps/v1", "apiVersion is not apps/v1")

spec = ds["spec"]
template = spec["template"]
pod = template["spec"]
labels = template["metadata"].get("labels", {})
selector = spec["selector"]["matchLabels"]
check(all(labels.get(k) == v for k, v in selector.items()),
      "selector.matchLabels does not match the pod template's labels")

check(pod.get("hostNetwork") is True, "hostNetwork is not true (ethtool ioctls need the node's netns)")
check(pod.get("dnsPolicy") == "ClusterFirstWithHostNet",
      "dnsPolicy is not ClusterFirstWithHostNet (hostNetwork pods cannot resolve Services)")
check(not pod.get("hostPID") and not pod.get("hostIPC"), "hostPID or hostIPC is set")
check(pod.get("automountServiceAccountToken") is False, "the service account token is mounted")

pod_sc = pod.get("securityContext", {})
check(pod_sc.get("runAsNonRoot") is True, "pod runAsNonRoot is not true")
check(isinstance(pod_sc.get("runAsUser"), int) and pod_sc["runAsUser"] != 0,
      "pod runAsUser is not a non-zero uid")
check(pod_sc.get("seccompProfile", {}).get("type") == "RuntimeDefault",
      "seccompProfile is not RuntimeDefault")

tolerations = pod.get("tolerations", [])
check(any(t.get("key") == "nvidia.com/gpu" and t.get("operator") == "Exists"
          for t in tolerations), "no toleration for the nvidia.com/gpu taint")

containers = pod.get("containers", [])
check(len(containers) == 1, f"expected one container, found {len(containers)}")
c = containers[0]
sc = c.get("securityContext", {})
check(sc.get("privileged", False) is False, "the container is privileged")
check(sc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation is not false")
check(sc.get("readOnlyRootFilesystem") is True, "readOnlyRootFilesystem is not true")
caps = sc.get("capabilities", {})
check(caps.get("drop") == ["ALL"], "capabilities do not drop ALL")
check(not caps.get("add"), f"capabilities are added: {caps.get('add')}")

args = c.get("args", [])
flags = {}
for a in args:
    check(isinstance(a, str) and a.startswith("--") and "=" in a,
          f"argument {a!r} is not --flag=value")
    if isinstance(a, str) and "=" in a:
        name, value = a[2:].split("=", 1)
        flags[name] = value
        check(name in known_flags, f"--{name} is not a flag of fabricdiag-agent")

env = {e["name"]: e for e in c.get("env", [])}
node = flags.get("node", "")
check(node.startswith("$(") and node.endswith(")"),
      "--node does not come from an environment variable $(VAR)")
var = node[2:-1]
check(env.get(var, {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName",
      f"--node=$({var}) is not the downward API's spec.nodeName")

# /sys: hostPath volume /sys, mounted read-only where --sysfs_root points.
volumes = {v["name"]: v for v in pod.get("volumes", [])}
sysfs_root = flags.get("sysfs_root")
check(sysfs_root not in (None, "", "/sys"),
      "--sysfs_root does not point at the mounted host /sys")
sys_mounts = [m for m in c.get("volumeMounts", []) if m.get("mountPath") == sysfs_root]
check(len(sys_mounts) == 1, f"nothing is mounted at --sysfs_root={sysfs_root}")
for m in sys_mounts:
    check(m.get("readOnly") is True, f"{sysfs_root} is not mounted readOnly")
    check(volumes.get(m["name"], {}).get("hostPath", {}).get("path") == "/sys",
          f"the volume at {sysfs_root} is not hostPath /sys")
for m in c.get("volumeMounts", []):
    if "hostPath" in volumes.get(m["name"], {}):
        check(m.get("readOnly") is True, f"hostPath volume {m['name']} is writable")

# Agent identity: with --collector, the ingest token comes from a Secret
# volume (read-only, no access for others: the agent refuses a token
# anyone may read), mounted where --ingest_token_file points.
if flags.get("collector"):
    token = flags.get("ingest_token_file", "")
    check(token.startswith("/"), "--collector without --ingest_token_file (agents must prove who they are)")
    token_dir = token.rsplit("/", 1)[0]
    token_mounts = [m for m in c.get("volumeMounts", []) if m.get("mountPath") == token_dir]
    check(len(token_mounts) == 1, f"nothing is mounted at {token_dir} for --ingest_token_file")
    for m in token_mounts:
        check(m.get("readOnly") is True, f"{token_dir} is not mounted readOnly")
        secret = volumes.get(m["name"], {}).get("secret")
        check(isinstance(secret, dict) and secret.get("secretName"),
              f"the volume at {token_dir} is not a Secret")
        if isinstance(secret, dict):
            mode = secret.get("defaultMode", 0o644)
            check(mode & 0o077 in (0, 0o040) and not mode & 0o007,
                  f"the token Secret's defaultMode {mode:o} lets others read it")
    check(isinstance(pod_sc.get("fsGroup"), int),
          "no pod fsGroup: the non-root agent could not read the root-owned Secret")

# One port for Prometheus, the container and --listen.
annotations = template["metadata"].get("annotations", {})
check(annotations.get("prometheus.io/scrape") == "true", "no prometheus.io/scrape: \"true\"")
port = annotations.get("prometheus.io/port")
check(isinstance(port, str), "prometheus.io/port is missing or not a string")
check(annotations.get("prometheus.io/path") == "/metrics", "prometheus.io/path is not /metrics")
container_ports = [str(p.get("containerPort")) for p in c.get("ports", [])]
check(port in container_ports, f"prometheus.io/port {port} is not a containerPort {container_ports}")
check(flags.get("listen", "").rsplit(":", 1)[-1] == port,
      f"--listen={flags.get('listen')} does not serve port {port}")

res = c.get("resources", {})
for kind in ("requests", "limits"):
    for r in ("cpu", "memory"):
        check(r in res.get(kind, {}), f"resources.{kind}.{r} is not set")

if failures:
    for f in failures:
        print(f"FAIL: {f}", file=sys.stderr)
    sys.exit(1)
print(f"PASS: {manifest_path}: DaemonSet with hostNetwork, read-only host /sys at "
      f"{sysfs_root}, node name from spec.nodeName, least privilege, scrape port {port}")
EOF
