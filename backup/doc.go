// Package backup will take and restore consistent snapshots of the copydesk
// database (see the backup issue). Until then, back up by stopping the
// server and copying DATA_DIR, secret.key included.
package backup
