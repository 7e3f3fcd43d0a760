# shellcheck shell=bash
# Service infrastructure for evalua's tests. Sourced by .ci/run; usable by hand:
#
#   source .ci/services.sh
#   ci_install_all            # apt packages + the Python venvs (idempotent)
#   ci_start_all              # PostgreSQL, munge + Slurm; exports the variables below
#   ...                       # run tests
#   ci_stop_all               # stops exactly what ci_start_all started
#
# Exports after ci_install_all / ci_start_all (see .ci/README.md):
#   EVALUA_PHOENIX_BIN  EVALUA_SDK_PYTHON  EVALUA_AGENTDOJO_PYTHON  EVALUA_MATURIN  EVALUA_PG_URL  SLURM_CONF  EVALUA_SLURM
#   EVALUA_REQUIRE_PG  EVALUA_REQUIRE_SLURM  EVALUA_K8S_VALIDATE_VENV  EVALUA_REQUIRE_K8S_VALIDATE
#   EVALUA_REQUIRE_BWRAP  PHOENIX_ALLOW_EXTERNAL_RESOURCES  PHOENIX_TELEMETRY_ENABLED
#   PHOENIX_LOG_MIGRATIONS  EVALUA_CI_RUN (this run's temp dir: data, logs, pid files)
#
# Everything runs as root (CI does). Nothing here needs a network beyond the package
# registries, and only the install functions use those.

EVALUA_CI_DIR=${EVALUA_CI_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
export EVALUA_CI_HOME=${EVALUA_CI_HOME:-/opt/evalua-ci}
# The venvs are made from Debian's /usr/bin/python3 (3.11, package python3-venv), not the
# pyenv one: its interpreter lives under /usr, so a bwrap sandbox that binds /usr read-only
# plus the venv can run EVALUA_SDK_PYTHON without binding /root/.pyenv too.
EVALUA_CI_PYTHON=${EVALUA_CI_PYTHON:-/usr/bin/python3}

CI_TIMINGS=()
CI_APT_UPDATED=0
CI_STOP_FNS=()   # stop functions of services that were started, in start order
# NOTE: ci_step runs its command in an `||` context, where bash ignores `set -e`: every
# function below checks its own steps (`|| return 1`) instead of relying on errexit.

ci_log() { printf '[ci %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

# ci_step LABEL CMD ARGS...: run a step, print and record how long it took.
ci_step() {
  local label=$1 t0 t1 rc=0
  shift
  t0=$(date +%s)
  ci_log "$label ..."
  "$@" || rc=$?
  t1=$(date +%s)
  CI_TIMINGS+=("$(printf '%-32s %4ss%s' "$label" "$((t1 - t0))" "$([ $rc -eq 0 ] || echo " (FAILED rc=$rc)")")")
  ci_log "$label: $((t1 - t0))s$([ $rc -eq 0 ] || echo " FAILED (rc=$rc)")"
  return $rc
}

ci_print_timings() {
  local line
  echo "[ci] ---- timings ----"
  for line in "${CI_TIMINGS[@]}"; do echo "[ci] $line"; done
}

# ---------------------------------------------------------------------------------------
# apt: one update, one install of everything missing.

ci_pkg_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }

ci_apt_install() {
  local missing=() p
  for p in "$@"; do ci_pkg_installed "$p" || missing+=("$p"); done
  if [ ${#missing[@]} -eq 0 ]; then
    ci_log "apt: already installed: $*"
    return 0
  fi
  if [ "$CI_APT_UPDATED" = 0 ]; then
    apt-get update -qq || return 1
    CI_APT_UPDATED=1
  fi
  ci_log "apt: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Every Debian package the tests and services need.
ci_apt_packages() {
  local pkgs=(
    chromium chromium-driver libxml2-utils   # report tests: headless Chromium, xmllint
    bubblewrap                               # per-trial sandboxes
    slurm-wlm munge                          # single-node Slurm cluster
    python3-venv                             # Debian's python3 for the venvs below
    iproute2 curl                            # ss (free ports), smoke checks
    valgrind                                 # the speed guard (bench/guard.sh: callgrind)
  )
  # PostgreSQL server binaries: the image ships postgresql-15; install Debian's if absent.
  ci_pg_bindir >/dev/null 2>&1 || pkgs+=(postgresql)
  echo "${pkgs[@]}"
}

# ---------------------------------------------------------------------------------------
# Python venvs: re-created only when the requirements file (or the interpreter) changed.

ci_venv() {
  local venv=$1 req=$2 stamp want
  stamp="$venv/.evalua-ci-stamp"
  want="$(sha256sum "$req" | cut -d' ' -f1) $("$EVALUA_CI_PYTHON" -c 'import sys; print(sys.version.split()[0])')"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    ci_log "venv $venv is up to date"
    return 0
  fi
  rm -rf "$venv"
  "$EVALUA_CI_PYTHON" -m venv "$venv" || return 1
  "$venv/bin/pip" install --disable-pip-version-check -q --no-input -r "$req" || return 1
  echo "$want" >"$stamp"
}

ci_phoenix_install() {
  mkdir -p "$EVALUA_CI_HOME" || return 1
  ci_venv "$EVALUA_CI_HOME/phoenix-venv" "$EVALUA_CI_DIR/requirements-phoenix.txt" || return 1
  export EVALUA_PHOENIX_BIN="$EVALUA_CI_HOME/phoenix-venv/bin/phoenix"
  # Phoenix must not reach out: no telemetry, no DNS look-ups at start (checked with strace).
  export PHOENIX_ALLOW_EXTERNAL_RESOURCES=false PHOENIX_TELEMETRY_ENABLED=false
  # Without this, the first start echoes every migration's SQL (~4,500 lines).
  export PHOENIX_LOG_MIGRATIONS=false
  [ -x "$EVALUA_PHOENIX_BIN" ]
}

ci_sdk_install() {
  mkdir -p "$EVALUA_CI_HOME" || return 1
  ci_venv "$EVALUA_CI_HOME/sdk-venv" "$EVALUA_CI_DIR/requirements-sdk.txt" || return 1
  export EVALUA_SDK_PYTHON="$EVALUA_CI_HOME/sdk-venv/bin/python"
  "$EVALUA_SDK_PYTHON" -c 'import openai, anthropic, mcp, mcp.client.stdio, mcp.server.mcpserver, opentelemetry.sdk.trace
import mcp.client.streamable_http, agents, agents.mcp
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter'
}

# The Kubernetes manifest validator deploy/k8s/validate.sh uses (kubernetes-validate,
# pinned in deploy/k8s/validate-requirements.txt): tests/cluster.rs runs validate.sh with it.
ci_k8s_validate_install() {
  mkdir -p "$EVALUA_CI_HOME" || return 1
  ci_venv "$EVALUA_CI_HOME/k8s-validate-venv" "$EVALUA_CI_DIR/../deploy/k8s/validate-requirements.txt" || return 1
  export EVALUA_K8S_VALIDATE_VENV="$EVALUA_CI_HOME/k8s-validate-venv"
  "$EVALUA_K8S_VALIDATE_VENV/bin/kubernetes-validate" --version >/dev/null || return 1
  export EVALUA_REQUIRE_K8S_VALIDATE=1
}

# AgentDojo (pinned in requirements-agentdojo.txt): tests/agentdojo.rs has its own runner write
# run logs (bench/agentdojo/logs.py) for `evalua grade` to read and re-execute.
ci_agentdojo_install() {
  mkdir -p "$EVALUA_CI_HOME" || return 1
  ci_venv "$EVALUA_CI_HOME/agentdojo-venv" "$EVALUA_CI_DIR/requirements-agentdojo.txt" || return 1
  export EVALUA_AGENTDOJO_PYTHON="$EVALUA_CI_HOME/agentdojo-venv/bin/python"
  "$EVALUA_AGENTDOJO_PYTHON" -c 'import agentdojo.benchmark, agentdojo.task_suite.load_suites'
}

# maturin (pinned in requirements-maturin.txt): .ci/run builds evalua's wheel with it.
ci_maturin_install() {
  mkdir -p "$EVALUA_CI_HOME" || return 1
  ci_venv "$EVALUA_CI_HOME/maturin-venv" "$EVALUA_CI_DIR/requirements-maturin.txt" || return 1
  export EVALUA_MATURIN="$EVALUA_CI_HOME/maturin-venv/bin/maturin"
  "$EVALUA_MATURIN" --version >/dev/null || return 1
  "$EVALUA_CI_HOME/maturin-venv/bin/pipx" --version >/dev/null || return 1
  "$EVALUA_CI_HOME/maturin-venv/bin/uv" --version >/dev/null
}

ci_install_all() {
  # shellcheck disable=SC2046
  ci_step "apt install" ci_apt_install $(ci_apt_packages)
  ci_step "pip: phoenix venv" ci_phoenix_install
  ci_step "pip: sdk venv" ci_sdk_install
  ci_step "pip: k8s validator venv" ci_k8s_validate_install
  ci_step "pip: maturin venv" ci_maturin_install
  ci_step "pip: agentdojo venv" ci_agentdojo_install
}

# ---------------------------------------------------------------------------------------
# Helpers.

# ci_free_port START: the first port >= START with nothing listening on 127.0.0.1/any.
ci_free_port() {
  local p=$1
  while [ -n "$(ss -Htln "sport = :$p")" ]; do p=$((p + 1)); done
  echo "$p"
}

# ci_wait_pid_gone PID SECONDS
ci_wait_pid_gone() {
  local pid=$1 n=$(($2 * 10))
  while kill -0 "$pid" 2>/dev/null && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
  ! kill -0 "$pid" 2>/dev/null
}

ci_run_dir() {
  if [ -z "${EVALUA_CI_RUN:-}" ] || [ ! -d "$EVALUA_CI_RUN" ]; then
    EVALUA_CI_RUN=$(mktemp -d /tmp/evalua-ci.XXXXXX)
    chmod 755 "$EVALUA_CI_RUN"
    export EVALUA_CI_RUN
  fi
}

# ---------------------------------------------------------------------------------------
# PostgreSQL: a throwaway cluster, trust auth, on 127.0.0.1:$EVALUA_PG_PORT (default 55432).

ci_pg_bindir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
  [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && echo "$d"
}

ci_pg_user() {
  # initdb and postgres refuse to run as root: use Debian's postgres user, else our own.
  if id -u postgres >/dev/null 2>&1; then echo postgres; return; fi
  id -u evalua-pg >/dev/null 2>&1 ||
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin evalua-pg
  echo evalua-pg
}

ci_pg_start() {
  ci_run_dir
  local bin user dir port
  bin=$(ci_pg_bindir) || { ci_log "no PostgreSQL server binaries"; return 1; }
  user=$(ci_pg_user)
  dir="$EVALUA_CI_RUN/pg"
  port=$(ci_free_port "${EVALUA_PG_PORT:-55432}")
  mkdir -p "$dir" && chown "$user:" "$dir" || return 1
  # (cd /: the postgres user may not be able to enter the caller's cwd.)
  (cd / && runuser -u "$user" -- "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 \
    --locale=C.UTF-8 >"$dir/initdb.log" 2>&1) || { cat "$dir/initdb.log"; return 1; }
  CI_PG_BIN=$bin CI_PG_USER=$user CI_PG_DIR=$dir
  CI_STOP_FNS+=(ci_pg_stop)
  # Unix socket in our dir (not /var/run/postgresql); durability off: a test cluster.
  (cd / && runuser -u "$user" -- "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
    -o "-p $port -h 127.0.0.1 -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
    start >/dev/null) || { cat "$dir/postgres.log"; return 1; }
  export EVALUA_PG_URL="postgres://postgres@127.0.0.1:$port/postgres"
  export EVALUA_PG_PORT=$port
  "$bin/psql" "$EVALUA_PG_URL" -qAtc 'select 1' >/dev/null || return 1
  # The PostgreSQL sandbox tests (tests/postgres.rs) must run, not skip.
  export EVALUA_REQUIRE_PG=1
  ci_log "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') at $EVALUA_PG_URL (data $dir/data)"
}

ci_pg_stop() {
  [ -n "${CI_PG_DIR:-}" ] || return 0
  (cd / && runuser -u "$CI_PG_USER" -- "$CI_PG_BIN/pg_ctl" -D "$CI_PG_DIR/data" -m fast -w -t 30 stop >/dev/null) ||
    (cd / && runuser -u "$CI_PG_USER" -- "$CI_PG_BIN/pg_ctl" -D "$CI_PG_DIR/data" -m immediate -w stop >/dev/null)
  CI_PG_DIR=
}

# ---------------------------------------------------------------------------------------
# munge + Slurm: one node (this host), one partition, daemons as root, state in $EVALUA_CI_RUN.

ci_munge_start() {
  if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    ci_log "munged already running: using it (and leaving it running)"
    return 0
  fi
  if [ ! -s /etc/munge/munge.key ]; then   # Debian's postinst makes one; make it if absent
    mkdir -p /etc/munge
    mungekey --create --keyfile=/etc/munge/munge.key 2>/dev/null ||
      dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
    chown munge:munge /etc/munge /etc/munge/munge.key
    chmod 700 /etc/munge
    chmod 400 /etc/munge/munge.key
  fi
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /run/munge /var/lib/munge /var/log/munge
  chmod 755 /run/munge   # clients (root, the tests) need to reach the socket
  rm -f /run/munge/munged.pid
  runuser -u munge -- /usr/sbin/munged || return 1
  CI_STOP_FNS+=(ci_munge_stop)
  local n=50
  until munge -n 2>/dev/null | unmunge >/dev/null 2>&1; do
    n=$((n - 1)); [ $n -gt 0 ] || { ci_log "munged did not come up"; return 1; }
    sleep 0.1
  done
}

ci_munge_stop() {
  local pid
  pid=$(cat /run/munge/munged.pid 2>/dev/null) || return 0
  kill "$pid" 2>/dev/null || return 0
  ci_wait_pid_gone "$pid" 10 || kill -9 "$pid" 2>/dev/null || true
}

ci_slurm_start() {
  ci_run_dir
  local dir host cpus mem ctld_port slurmd_port n state
  dir="$EVALUA_CI_RUN/slurm"
  host=$(hostname -s)
  cpus=$(nproc)
  # RealMemory must not exceed what slurmd detects, or the node is drained as invalid.
  mem=$(slurmd -C 2>/dev/null | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
  mem=${mem:-1024}
  ctld_port=$(ci_free_port "${EVALUA_SLURMCTLD_PORT:-16817}")
  slurmd_port=$(ci_free_port $((ctld_port + 1)))
  mkdir -p "$dir/state" "$dir/spool" || return 1
  cat >"$dir/slurm.conf" <<EOF || return 1
# Written by .ci/services.sh for this CI run only.
ClusterName=evalua-ci
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=5
KillWait=5
Waittime=0
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF="$dir/slurm.conf"
  CI_SLURM_DIR=$dir
  CI_STOP_FNS+=(ci_slurm_stop)
  slurmctld -f "$SLURM_CONF" || { cat "$dir/slurmctld.log"; return 1; }
  slurmd -f "$SLURM_CONF" || { cat "$dir/slurmd.log"; return 1; }
  n=300   # 60 s
  while :; do
    state=$(sinfo -h -N -o %t 2>/dev/null | head -n1)
    [ "$state" = idle ] && break
    n=$((n - 1))
    if [ $n -le 0 ]; then
      ci_log "Slurm node never became idle (state '$state')"
      sinfo -N -l || true
      tail -n 30 "$dir/slurmctld.log" "$dir/slurmd.log" || true
      return 1
    fi
    sleep 0.2
  done
  export EVALUA_SLURM=1 EVALUA_REQUIRE_SLURM=1   # the Slurm tests (tests/cluster.rs) must run, not skip
  ci_log "Slurm $(sinfo -V | awk '{print $2}'): node $host idle, $cpus CPUs, SLURM_CONF=$SLURM_CONF"
}

ci_slurm_stop() {
  [ -n "${CI_SLURM_DIR:-}" ] || return 0
  local f pid n=100 jobs
  # slurmd leaves running job steps alone when it stops: cancel what the tests left first.
  jobs=$(squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ')
  if [ -n "${jobs// /}" ]; then
    ci_log "cancelling Slurm jobs left behind: $jobs"
    # shellcheck disable=SC2086
    scancel $jobs 2>/dev/null || true
    while [ -n "$(squeue -h 2>/dev/null)" ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
  fi
  for f in slurmd slurmctld; do
    pid=$(cat "$CI_SLURM_DIR/$f.pid" 2>/dev/null) || continue
    kill "$pid" 2>/dev/null || continue
    ci_wait_pid_gone "$pid" 15 || kill -9 "$pid" 2>/dev/null || true
  done
  if pgrep -x slurmstepd >/dev/null; then
    ci_log "warning: slurmstepd still running: $(pgrep -x slurmstepd | tr '\n' ' ')"
  fi
  CI_SLURM_DIR=
}

# ---------------------------------------------------------------------------------------
# bubblewrap: nothing to start; check that the flags the sandboxes use work here.

ci_bwrap_check() {
  ci_run_dir
  local w="$EVALUA_CI_RUN/bwrap" out
  mkdir -p "$w" || return 1
  out=$(bwrap --unshare-all --share-net --die-with-parent --new-session --clearenv \
    --proc /proc --dev /dev --tmpfs /tmp --ro-bind /usr /usr \
    --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 \
    --bind "$w" "$w" --chdir "$w" --setenv PATH /usr/bin \
    sh -c 'ls /proc | grep -c "^[0-9][0-9]*$"; pwd; echo ok > written') || return 1
  # The shell, ls, grep and bwrap itself: only the sandbox's few processes are visible.
  set -- $out
  [ "$1" -le 6 ] && [ "$2" = "$w" ] && [ -f "$w/written" ] || { ci_log "bwrap check failed: $out"; return 1; }
  export EVALUA_REQUIRE_BWRAP=1
  ci_log "bwrap $(bwrap --version | awk '{print $2}'): pid/mount/user/ipc/uts/cgroup namespaces work"
}

# ---------------------------------------------------------------------------------------

ci_start_all() {
  ci_step "start PostgreSQL" ci_pg_start
  ci_step "start munge" ci_munge_start
  ci_step "start Slurm" ci_slurm_start
  ci_step "check bwrap" ci_bwrap_check
}

# Stops every service that was started, newest first; never fails.
ci_stop_all() {
  local i
  for ((i = ${#CI_STOP_FNS[@]} - 1; i >= 0; i--)); do
    "${CI_STOP_FNS[$i]}" || ci_log "stop: ${CI_STOP_FNS[$i]} failed"
  done
  CI_STOP_FNS=()
  if [ -n "${EVALUA_CI_RUN:-}" ] && [ -d "$EVALUA_CI_RUN" ] && [ -z "${EVALUA_CI_KEEP_RUN:-}" ]; then
    rm -rf "$EVALUA_CI_RUN"
  fi
}
