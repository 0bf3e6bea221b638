#!/bin/sh
# wordpress-up.sh: a throwaway WordPress on loopback, for the opt-in test
# against a real site (server/publish/wordpress TestRealWordPress, and the
# console's web/console/test/wordpress-real.test.mjs) and for
# trying publishing by hand. Debian packages only: wordpress, mariadb-server,
# php-cli, php-mysql (installed when missing; needs root for that).
#
#   scripts/wordpress-up.sh            # http://127.0.0.1:8081, pretty permalinks
#   PLAIN=1 scripts/wordpress-up.sh    # plain permalinks (?rest_route= only)
#   scripts/wordpress-up.sh down       # stop it and remove its files
#
# It runs its own MariaDB (socket only, no TCP) and PHP's built-in server
# from a copy of /usr/share/wordpress in $WP_DIR, makes the admin user and
# an application password with PHP, and prints the environment variables
# the test reads. WP_ENVIRONMENT_TYPE is local: WordPress accepts
# application passwords over plain http only then.
set -eu

PORT=${PORT:-8081}
WP_DIR=${WP_DIR:-/tmp/copydesk-wp}
URL="http://127.0.0.1:$PORT"
SOCK="$WP_DIR/mysqld.sock"

down() {
	for p in "$WP_DIR/php.pid" "$WP_DIR/mysqld.pid"; do
		if [ -f "$p" ]; then kill "$(cat "$p")" 2>/dev/null || true; fi
	done
	sleep 1
	rm -rf "$WP_DIR"
}

if [ "${1:-}" = down ]; then
	down
	exit 0
fi

need=""
for pkg in wordpress mariadb-server php-cli php-mysql; do
	dpkg -s "$pkg" >/dev/null 2>&1 || need="$need $pkg"
done
if [ -n "$need" ]; then
	echo "installing:$need" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need >&2
fi

down
mkdir -p "$WP_DIR/db"
DBUSER=root
[ "$(id -u)" -eq 0 ] || DBUSER=$(id -un)

# Our own MariaDB, on a socket in WP_DIR.
mariadb-install-db --user="$DBUSER" --datadir="$WP_DIR/db" --auth-root-authentication-method=normal >"$WP_DIR/install-db.log" 2>&1
mariadbd --user="$DBUSER" --datadir="$WP_DIR/db" --socket="$SOCK" --pid-file="$WP_DIR/mysqld.pid" \
	--skip-networking >"$WP_DIR/mysqld.log" 2>&1 &
i=0
until mariadb --socket="$SOCK" -uroot -e 'SELECT 1' >/dev/null 2>&1; do
	i=$((i + 1))
	[ "$i" -lt 100 ] || { echo "MariaDB did not start; see $WP_DIR/mysqld.log" >&2; exit 1; }
	sleep 0.1
done
mariadb --socket="$SOCK" -uroot -e "CREATE DATABASE wordpress; CREATE USER 'wp'@'localhost' IDENTIFIED BY 'wp';
	GRANT ALL ON wordpress.* TO 'wp'@'localhost';"

# A copy of the packaged WordPress with a config of its own (the package's
# reads /etc/wordpress/config-HOST.php, which this script leaves alone).
cp -rL /usr/share/wordpress "$WP_DIR/www"
rm -f "$WP_DIR/www/wp-config.php"
mkdir -p "$WP_DIR/www/wp-content/uploads"
cat >"$WP_DIR/www/wp-config.php" <<PHP
<?php
define('DB_NAME', 'wordpress');
define('DB_USER', 'wp');
define('DB_PASSWORD', 'wp');
define('DB_HOST', 'localhost:$SOCK');
define('DB_CHARSET', 'utf8mb4');
define('WP_HOME', '$URL');
define('WP_SITEURL', '$URL');
define('WP_ENVIRONMENT_TYPE', 'local');
define('WP_CONTENT_DIR', __DIR__ . '/wp-content');
define('AUTOMATIC_UPDATER_DISABLED', true);
\$table_prefix = 'wp_';
if (!defined('ABSPATH')) define('ABSPATH', __DIR__ . '/');
require_once ABSPATH . 'wp-settings.php';
PHP

# Install, the admin user, permalinks and an application password, in PHP.
cat >"$WP_DIR/setup.php" <<'PHP'
<?php
define('WP_INSTALLING', true);
$_SERVER['HTTP_HOST'] = '127.0.0.1';
require __DIR__ . '/www/wp-load.php';
require_once ABSPATH . 'wp-admin/includes/upgrade.php';
$r = wp_install('copydesk test site', 'admin', 'admin@example.com', true, '', 'admin-password-' . wp_generate_password(8, false));
$uid = $r['user_id'];
update_option('permalink_structure', getenv('PLAIN') ? '' : '/%postname%/');
list($password) = WP_Application_Passwords::create_new_application_password($uid, array('name' => 'copydesk'));
echo $password, "\n";
PHP
APP_PASSWORD=$(PLAIN=${PLAIN:-} php "$WP_DIR/setup.php" | tail -n 1)

# PHP's built-in server sends what is not a file to index.php, which is all
# pretty permalinks need.
php -S "127.0.0.1:$PORT" -t "$WP_DIR/www" >"$WP_DIR/php.log" 2>&1 &
echo $! >"$WP_DIR/php.pid"
i=0
until curl -fsS -o /dev/null "$URL/?rest_route=/"; do
	i=$((i + 1))
	[ "$i" -lt 100 ] || { echo "WordPress did not answer; see $WP_DIR/php.log" >&2; exit 1; }
	sleep 0.1
done

cat <<ENV
export COPYDESK_WP_URL=$URL
export COPYDESK_WP_USER=admin
export COPYDESK_WP_APP_PASSWORD='$APP_PASSWORD'
# go test -run TestRealWordPress -v ./server/publish/wordpress/
# (cd web/console && npm test -- test/wordpress-real.test.mjs)   # the console, in Chromium
# scripts/wordpress-up.sh down   # when done
ENV
