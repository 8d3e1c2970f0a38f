#!/usr/bin/env bash
# Writes the compose cluster's secrets under docker/secrets (once: a file that
# exists is kept, so `down`/`up` and a re-run change nothing), each readable
# only by the container user that needs it. Compose mounts them at
# /run/secrets/<name> with the host file's owner and mode (outside swarm it
# sets neither), so owners are set here:
#   beluga (uid 10001): cluster-secret, secret-key, admin-password, db-url;
#     metrics-token with group nogroup (65534), which Prometheus runs as;
#   the database (uid 999, the mysql user of the MySQL and MariaDB images):
#     db-password, db-root-password (group 10001 on db-password: no one else);
#   Grafana (uid 472): grafana-admin-password.
# Workers run as root and read theirs as root; tasks run as other users and
# read none. Setting owners needs root: as another user the script asks sudo.
set -euo pipefail
dir="$(cd "$(dirname "$0")/../docker" && pwd)/secrets"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

rand() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }

$SUDO install -d -m 0755 "$dir"
made=()
# put NAME OWNER:GROUP MODE VALUE: writes the file when it is missing.
put() {
  local f="$dir/$1"
  if $SUDO test -e "$f"; then return; fi
  printf '%s\n' "$4" | $SUDO install -m "$3" -o "${2%%:*}" -g "${2##*:}" /dev/stdin "$f"
  made+=("$1")
}

db_password="$(rand 18)"
if $SUDO test -e "$dir/db-password"; then db_password="$($SUDO head -n 1 "$dir/db-password")"; fi
admin_password="$(rand 12)"
put cluster-secret 10001:10001 0400 "$(rand 32)"
put secret-key 10001:10001 0400 "$(rand 32)"
put metrics-token 10001:65534 0440 "$(rand 32)"
put admin-password 10001:10001 0400 "$admin_password"
put db-url 10001:10001 0400 "mysql://beluga:${db_password}@db:3306/beluga"
put db-password 999:10001 0440 "$db_password"
put db-root-password 999:999 0400 "$(rand 18)"
put grafana-admin-password 472:472 0400 "$(rand 12)"

if [ ${#made[@]} -eq 0 ]; then
  echo "compose secrets: all present in $dir (kept)"
  exit 0
fi
echo "compose secrets: wrote ${made[*]} in $dir"
for m in "${made[@]}"; do
  if [ "$m" = admin-password ]; then
    echo "the UI's admin password (also in $dir/admin-password, readable by root): $admin_password"
  fi
done
