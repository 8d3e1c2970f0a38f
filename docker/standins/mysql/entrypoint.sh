#!/bin/bash
# A stand-in for the official MySQL image's entry point: on an empty data dir
# it makes the database, the user and the root password from the *_FILE
# variables, then serves on 3306 as mysql.
set -eu
file_env() { local f="${1}_FILE"; if [ -n "${!f:-}" ]; then head -n 1 "${!f}"; else printf '%s' "${!1:-}"; fi; }
chown -R mysql:mysql /var/lib/mysql /run/mysqld
if [ ! -d /var/lib/mysql/mysql ]; then
  root_pw="$(file_env MYSQL_ROOT_PASSWORD)"
  user_pw="$(file_env MYSQL_PASSWORD)"
  mariadb-install-db --user=mysql --datadir=/var/lib/mysql --skip-test-db >/dev/null
  mariadbd --user=mysql --skip-networking --socket=/run/mysqld/init.sock &
  pid=$!
  for _ in $(seq 60); do mariadb-admin --socket=/run/mysqld/init.sock ping --silent 2>/dev/null && break; sleep 0.5; done
  sq() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/''/g")"; }
  mariadb --socket=/run/mysqld/init.sock <<SQL
CREATE DATABASE IF NOT EXISTS \`${MYSQL_DATABASE}\`;
CREATE USER '${MYSQL_USER}'@'%' IDENTIFIED BY $(sq "$user_pw");
GRANT ALL ON \`${MYSQL_DATABASE}\`.* TO '${MYSQL_USER}'@'%';
ALTER USER 'root'@'localhost' IDENTIFIED BY $(sq "$root_pw");
FLUSH PRIVILEGES;
SQL
  kill "$pid"; wait "$pid" || true
fi
exec mariadbd --user=mysql --bind-address=0.0.0.0 --port=3306
