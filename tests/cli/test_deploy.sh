#!/bin/bash
# The deployment files of deploy/ (issue 17, item 7), checked by the tools that read them:
# - the systemd template unit with `systemd-analyze verify` in a temporary root (the unit
#   tree of this host copied in, a stand-in /usr/local/bin/tide: verify checks that ExecStart
#   exists; no running systemd is needed), for two instances; any message fails, and a unit
#   with a mistyped setting must give one (the check can fail); `systemd-analyze security
#   --offline` rates its sandbox (printed; must be "OK" or better); no setting closes the
#   device list (the GPU); every variable the unit uses is set in worker.env.example;
# - deploy/prometheus/ with `promtool check config` and `promtool check rules`;
# - deploy/compose.yaml parsed as YAML (python3-yaml): the four services, the worker's GPU
#   reservation and health check, the broker's and database's health checks the worker waits
#   for, files it names that exist, Prometheus' target being the worker's metrics port, no
#   password written in it; the Containerfiles' stages and non-root user.
# The images themselves cannot be built here (no registry, no network): docs/operations.md.
# Skipped (77) without systemd-analyze, promtool or python3-yaml.
set -u
SRC=${TIDE_SOURCE_DIR:?}
PY=${TIDE_PYTHON:-python3}
D=$SRC/deploy
command -v systemd-analyze >/dev/null || { echo "SKIP: no systemd-analyze (package systemd)"; exit 77; }
command -v promtool >/dev/null || { echo "SKIP: no promtool (package prometheus)"; exit 77; }
"$PY" -c 'import yaml' 2>/dev/null || { echo "SKIP: no python3-yaml"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# ---- systemd ------------------------------------------------------------------------------
unit=$D/systemd/tide-worker@.service
units=""
for u in /usr/lib/systemd/system /lib/systemd/system; do
    [ -f "$u/sysinit.target" ] && { units=$u; break; }
done
[ -n "$units" ] || { echo "SKIP: no systemd unit tree (sysinit.target) to verify against"; exit 77; }
# make_root DIR UNITFILE: a root holding this host's units, the unit, a stand-in tide
make_root() {
    mkdir -p "$1/usr/lib/systemd" "$1/etc/systemd/system" "$1/usr/local/bin"
    cp -a "$units" "$1/usr/lib/systemd/system"
    cp "$2" "$1/etc/systemd/system/tide-worker@.service"
    printf '#!/bin/sh\nexit 0\n' >"$1/usr/local/bin/tide"
    chmod 755 "$1/usr/local/bin/tide"
}
make_root "$T/root" "$unit"
out=$(systemd-analyze verify --root="$T/root" --man=no tide-worker@0.service tide-worker@3.service 2>&1)
rc=$?
[ $rc = 0 ] || bad "systemd-analyze verify: exit $rc: $out"
[ -z "$out" ] || bad "systemd-analyze verify says: $out"
sed 's/^Restart=on-failure/Restart=on-failur/' "$unit" >"$T/typo.service"
make_root "$T/root2" "$T/typo.service"
out=$(systemd-analyze verify --root="$T/root2" --man=no tide-worker@0.service 2>&1)
[ -n "$out" ] || bad "systemd-analyze verify found nothing wrong in a mistyped unit: the check cannot fail"
sec=$(systemd-analyze security --offline=yes --root="$T/root" tide-worker@0.service 2>&1 | grep 'Overall exposure')
echo "systemd-analyze security: ${sec:-(no rating)}"
grep -Eq 'exposure level for tide-worker@0.service: [0-9.]+ (OK|SAFE)' <<<"$sec" \
    || bad "sandbox rated worse than OK: $sec"
for want in 'User=tide' 'EnvironmentFile=/etc/tide/worker.env' \
    'EnvironmentFile=-/etc/tide/worker-%i.env' 'Restart=on-failure' 'KillSignal=SIGTERM' \
    'ProtectSystem=strict' 'NoNewPrivileges=yes' 'PrivateTmp=yes' 'ExecStart=/usr/local/bin/tide worker --device %i'; do
    grep -qF -- "$want" "$unit" || bad "the unit has no '$want'"
done
# nothing that closes the device list: the GPU is /dev/nvidia* (ProtectClock= implies
# DeviceAllow=char-rtc, which shuts every other device out)
grep -Eq '^(PrivateDevices|DeviceAllow|DevicePolicy|ProtectClock)=' "$unit" \
    && bad "the unit restricts devices: the worker could not open /dev/nvidia*"
# every variable the unit uses is set in the example environment file
for v in $(grep -v '^#' "$unit" | grep -oE '\$\{?[A-Z_]+' | tr -d '${' | sort -u); do
    grep -q "^$v=" "$D/systemd/worker.env.example" || bad "worker.env.example does not set $v"
done
grep -qiE '^[A-Z_]*PASS[A-Z_]*=' "$D/systemd/worker.env.example" \
    && bad "worker.env.example holds a password line"

# ---- Prometheus ---------------------------------------------------------------------------
out=$(promtool check config "$D/prometheus/prometheus.yml" 2>&1) || bad "promtool check config: $out"
out=$(promtool check rules "$D/prometheus/tide-rules.yml" 2>&1) || bad "promtool check rules: $out"

# ---- compose and the Containerfiles -------------------------------------------------------
"$PY" - "$D" <<'EOF' || fail=1
import os, re, sys, yaml
d = sys.argv[1]
problems = []
def bad(msg):
    problems.append(msg)
c = yaml.safe_load(open(os.path.join(d, "compose.yaml")))
sv = c.get("services", {})
for name in ("worker", "rabbitmq", "postgres", "prometheus"):
    if name not in sv:
        bad("compose: no service %s" % name)
w = sv.get("worker", {})
devs = w.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices", [])
if not any(x.get("driver") == "nvidia" and "gpu" in x.get("capabilities", []) for x in devs):
    bad("compose: the worker reserves no NVIDIA GPU")
if "healthcheck" not in w or "/healthz" not in " ".join(w["healthcheck"].get("test", [])):
    bad("compose: the worker's health check does not ask /healthz")
for dep in ("rabbitmq", "postgres"):
    if w.get("depends_on", {}).get(dep, {}).get("condition") != "service_healthy":
        bad("compose: the worker does not wait for %s to be healthy" % dep)
    if "healthcheck" not in sv.get(dep, {}):
        bad("compose: %s has no health check" % dep)
if not re.match(r"^(docker\.io/library/)?rabbitmq:3", sv.get("rabbitmq", {}).get("image", "")):
    bad("compose: rabbitmq is not the rabbitmq:3 image")
if w.get("stop_signal") != "SIGTERM":
    bad("compose: the worker is not stopped with SIGTERM")
cmd = [str(x) for x in w.get("command", [])]
if cmd[:1] != ["worker"] or "--metrics" not in cmd:
    bad("compose: the worker's command is not `tide worker ... --metrics`")
mport = cmd[cmd.index("--metrics") + 1].rsplit(":", 1)[1] if "--metrics" in cmd else "?"
for name, s in sv.items():
    b = s.get("build")
    if b:
        f = os.path.join(d, b.get("context", "."), b.get("dockerfile", "Dockerfile"))
        if not os.path.isfile(f):
            bad("compose: %s builds from %s, which does not exist" % (name, f))
    env = s.get("environment", {})
    for k, v in (env.items() if isinstance(env, dict) else []):
        if "PASS" in k and not str(v).startswith("${"):
            bad("compose: %s has a password written in: %s" % (name, k))
vols = [v.split(":")[0] for v in sv.get("prometheus", {}).get("volumes", [])]
pdir = [v for v in vols if v.startswith("./")]
if not pdir or not os.path.isfile(os.path.join(d, pdir[0], "prometheus.yml")):
    bad("compose: prometheus mounts no directory holding prometheus.yml")
p = yaml.safe_load(open(os.path.join(d, "prometheus", "prometheus.yml")))
targets = [t for j in p["scrape_configs"] for s in j.get("static_configs", []) for t in s["targets"]]
if "worker:" + mport not in targets:
    bad("prometheus.yml scrapes %s, not the worker's worker:%s" % (targets, mport))
env_example = open(os.path.join(d, "env.example")).read()
for v in set(re.findall(r"\$\{([A-Z_]+)", open(os.path.join(d, "compose.yaml")).read())):
    if not re.search(r"^%s=" % v, env_example, re.M):
        bad("env.example does not set %s, which compose.yaml uses" % v)
cf = open(os.path.join(d, "container", "Containerfile")).read()
stages = re.findall(r"^FROM\s+(\S+)", cf, re.M)
if len(stages) < 2 or "COPY --from=build" not in cf:
    bad("Containerfile: not a build stage and a run stage")
users = re.findall(r"^USER\s+(\S+)", cf.split("\nFROM")[-1], re.M)
if not users or users[-1] in ("root", "0"):
    bad("Containerfile: the run stage runs as root")
for m in problems:
    print("FAIL: " + m)
sys.exit(1 if problems else 0)
EOF

[ $fail = 0 ] && echo "ok"
exit $fail
