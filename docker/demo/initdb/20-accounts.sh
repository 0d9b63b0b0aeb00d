#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Runs once, on the first start of the compose demo's MariaDB: the app may use
# the demo schema; the proxy's own account gets the privileges
# doc/proxy-account.md lists, its password from the same secret the proxy
# reads (docker/compose.yml).
pw=$(<"$MYREWRITE_PROXY_PASSWORD_FILE")
pw=${pw//\'/\'\'}
mariadb -uroot -p"$MARIADB_ROOT_PASSWORD" <<SQL
GRANT ALL ON demo.* TO 'app'@'%';
CREATE USER '$MYREWRITE_PROXY_USER'@'%' IDENTIFIED BY '$pw';
GRANT SELECT, INSERT, UPDATE, DELETE, CREATE ON demo.* TO '$MYREWRITE_PROXY_USER'@'%';
GRANT PROCESS, CONNECTION ADMIN ON *.* TO '$MYREWRITE_PROXY_USER'@'%';
SQL
