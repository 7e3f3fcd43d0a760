#!/usr/bin/env bash
# deploy/k8s/validate.sh: validate the manifests in this folder, offline once installed.
#
#   deploy/k8s/validate.sh                   against Kubernetes 1.33.0 and 1.37.0
#   K8S_VERSIONS="1.29.0 1.37.0" deploy/k8s/validate.sh
#
# 1. kubernetes-validate (PyPI), which bundles the API's JSON schemas for
#    Kubernetes 1.25-1.37, checks every object with --strict (unknown fields
#    are errors). It is installed, pinned, into a venv on the first run; after
#    that nothing is fetched (checked under `unshare -n`, no network at all).
# 2. check_consistency.py checks what a schema cannot: EVALUA_PARTITIONS equals
#    completions, Indexed mode, restartPolicy Never, ReadWriteMany, and that the
#    merge Job reads the folder the run Job writes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${VALIDATE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/evalua/k8s-validate-venv}
versions=${K8S_VERSIONS:-1.33.0 1.37.0}

if [[ ! -x $venv/bin/kubernetes-validate ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/validate-requirements.txt"
fi

status=0
for v in $versions; do
  "$venv/bin/kubernetes-validate" --strict -k "$v" "$here"/*.yaml || status=1
done
"$venv/bin/python" "$here/check_consistency.py" "$here" || status=1
exit $status
