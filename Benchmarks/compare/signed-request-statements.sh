#!/usr/bin/env bash
# The database work of one signed GET on PostgreSQL, before and after issue 29, with pgbench
# on a throwaway cluster (no Swift build, no HTTP): what the server sends per request besides
# the route's own query, at the server's pool size (8 connections: 4 per event loop, 2 loops).
#   before: token lookup, session lookup, nonce INSERT into a logged table (a WAL flush at
#           every commit), the user's role and stores;
#   after:  token joined with its session, nonce INSERT into an UNLOGGED table together with
#           the replay floor (one statement, no WAL, no flush), the user's role and stores;
#   now:    the token joined with its session and the session's user and stores (the role
#           and stores come with the token since the seventh session), the same nonce INSERT;
#   cached: a token whose signing key the process already holds (SessionKeyCache, eighth
#           session): one statement records the nonce and reads the token, session and access.
# Prints pgbench's transactions (= signed requests) per second and mean latency, and how many
# WAL flushes each run made. PGBENCH_SECONDS (default 6), PGBENCH_CLIENTS (default 8).
set -euo pipefail
seconds=${PGBENCH_SECONDS:-6}
clients=${PGBENCH_CLIENTS:-8}
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [[ ! -x "$pgbin/pgbench" ]]; then
  echo "PostgreSQL not installed (apt-get install postgresql): skipped"
  exit 0
fi
work=$(mktemp -d)
chmod 755 "$work"
as_pg() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
  as_pg "$pgbin/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/pg"
[[ $(id -u) -eq 0 ]] && chown postgres "$work" "$work/pg"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_pg "$pgbin/initdb" -D "$work/pg" -U shopfloor --auth=trust -E UTF8 --locale=C >/dev/null
as_pg "$pgbin/pg_ctl" -D "$work/pg" -w -l "$work/pg/log" -o "-p $port -k $work/pg -c listen_addresses=127.0.0.1" start >/dev/null
db="postgres://shopfloor@127.0.0.1:$port/shopfloor"
"$pgbin/createdb" -h 127.0.0.1 -p "$port" -U shopfloor shopfloor
# The server's tables (migrations 2, 200, 500), one session with its access token, one user.
"$pgbin/psql" "$db" -qv ON_ERROR_STOP=1 <<'SQL'
CREATE TABLE auth_sessions (id TEXT PRIMARY KEY, subject TEXT NOT NULL, key_id TEXT NOT NULL,
  key_secret TEXT NOT NULL, created_at BIGINT NOT NULL, revoked_at BIGINT);
CREATE TABLE auth_tokens (digest TEXT PRIMARY KEY, session_id TEXT NOT NULL, kind TEXT NOT NULL,
  expires_at BIGINT NOT NULL, rotated_at BIGINT);
CREATE TABLE users (username TEXT PRIMARY KEY, display_name TEXT NOT NULL, home_store_id TEXT,
  password_hash TEXT NOT NULL, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
  role TEXT NOT NULL DEFAULT 'associate');
CREATE TABLE user_stores (username TEXT NOT NULL, store_id TEXT NOT NULL, PRIMARY KEY (username, store_id));
CREATE TABLE logged_nonces (key_id TEXT NOT NULL, nonce TEXT NOT NULL, created BIGINT NOT NULL,
  expires_at BIGINT NOT NULL, PRIMARY KEY (key_id, nonce));
CREATE INDEX ON logged_nonces (expires_at);
CREATE UNLOGGED TABLE auth_nonces (key_id TEXT NOT NULL, nonce TEXT NOT NULL, created BIGINT NOT NULL,
  expires_at BIGINT NOT NULL, PRIMARY KEY (key_id, nonce));
CREATE INDEX ON auth_nonces (expires_at);
CREATE UNLOGGED TABLE auth_replay_floor (id INT PRIMARY KEY, since BIGINT NOT NULL);
INSERT INTO auth_replay_floor VALUES (1, 0);
INSERT INTO auth_sessions VALUES ('s1', 'demo', 'k1', 'c2VjcmV0', 0, NULL);
INSERT INTO auth_tokens VALUES ('d1', 's1', 'access', 9999999999999, NULL);
INSERT INTO users VALUES ('demo', 'Demo', 'st1', 'x', 0, 0, 'associate');
INSERT INTO user_stores VALUES ('demo', 'st1');
SQL
cat >"$work/before.sql" <<'SQL'
\set n random(1, 1000000000)
SELECT digest, session_id, kind, expires_at, rotated_at FROM auth_tokens WHERE digest = 'd1';
SELECT id, subject, key_id, key_secret, created_at, revoked_at FROM auth_sessions WHERE id = 's1';
INSERT INTO logged_nonces (key_id, nonce, created, expires_at) VALUES ('k1', :client_id || '-' || :n, 1000, 1300) ON CONFLICT (key_id, nonce) DO UPDATE SET created = EXCLUDED.created, expires_at = EXCLUDED.expires_at WHERE logged_nonces.expires_at < 1000 RETURNING key_id;
SELECT u.username, u.display_name, u.home_store_id, u.password_hash, u.created_at, u.role, us.store_id FROM users u LEFT JOIN user_stores us ON us.username = u.username WHERE u.username = 'demo' ORDER BY us.store_id;
SQL
cat >"$work/after.sql" <<'SQL'
\set n random(1, 1000000000)
SELECT t.digest, t.session_id, t.kind, t.expires_at, t.rotated_at, s.id, s.subject, s.key_id, s.key_secret, s.created_at, s.revoked_at FROM auth_tokens t LEFT JOIN auth_sessions s ON s.id = t.session_id WHERE t.digest = 'd1';
WITH floor AS (SELECT since FROM auth_replay_floor WHERE id = 1), recorded AS (INSERT INTO auth_nonces (key_id, nonce, created, expires_at) SELECT 'k1', :client_id || '-' || :n, 1000, 1300 FROM floor WHERE floor.since <= 1000000 ON CONFLICT (key_id, nonce) DO UPDATE SET created = EXCLUDED.created, expires_at = EXCLUDED.expires_at WHERE auth_nonces.expires_at < 1000 RETURNING 1 AS one) SELECT (SELECT since FROM floor) AS since, (SELECT COUNT(*) FROM recorded) AS recorded;
SELECT u.username, u.display_name, u.home_store_id, u.password_hash, u.created_at, u.role, us.store_id FROM users u LEFT JOIN user_stores us ON us.username = u.username WHERE u.username = 'demo' ORDER BY us.store_id;
SQL
cat >"$work/now.sql" <<'SQL'
\set n random(1, 1000000000)
SELECT t.digest, t.session_id, t.kind, t.expires_at, t.rotated_at, s.id, s.subject, s.key_id, s.key_secret, s.created_at, s.revoked_at, u.username AS u_username, u.role AS u_role, u.home_store_id AS u_home_store_id, us.store_id AS us_store_id FROM auth_tokens t LEFT JOIN auth_sessions s ON s.id = t.session_id LEFT JOIN users u ON u.username = s.subject LEFT JOIN user_stores us ON us.username = u.username WHERE t.digest = 'd1' ORDER BY us.store_id;
WITH floor AS (SELECT since FROM auth_replay_floor WHERE id = 1), recorded AS (INSERT INTO auth_nonces (key_id, nonce, created, expires_at) SELECT 'k1', :client_id || '-' || :n, 1000, 1300 FROM floor WHERE floor.since <= 1000000 ON CONFLICT (key_id, nonce) DO UPDATE SET created = EXCLUDED.created, expires_at = EXCLUDED.expires_at WHERE auth_nonces.expires_at < 1000 RETURNING 1 AS one) SELECT (SELECT since FROM floor) AS since, (SELECT COUNT(*) FROM recorded) AS recorded;
SQL
cat >"$work/cached.sql" <<'SQL'
\set n random(1, 1000000000)
WITH floor AS (SELECT since FROM auth_replay_floor WHERE id = 1), recorded AS (INSERT INTO auth_nonces (key_id, nonce, created, expires_at) SELECT 'k1', :client_id || '-' || :n, 1000, 1300 FROM floor WHERE floor.since <= 1000000 ON CONFLICT (key_id, nonce) DO UPDATE SET created = EXCLUDED.created, expires_at = EXCLUDED.expires_at WHERE auth_nonces.expires_at < 1000 RETURNING 1 AS one) SELECT (SELECT since FROM floor) AS since, (SELECT COUNT(*) FROM recorded) AS recorded, t.digest, t.session_id, t.kind, t.expires_at, t.rotated_at, s.id, s.subject, s.key_id, s.key_secret, s.created_at, s.revoked_at, u.username AS u_username, u.role AS u_role, u.home_store_id AS u_home_store_id, us.store_id AS us_store_id FROM (SELECT 1 AS one) o LEFT JOIN auth_tokens t ON t.digest = 'd1' LEFT JOIN auth_sessions s ON s.id = t.session_id LEFT JOIN users u ON u.username = s.subject LEFT JOIN user_stores us ON us.username = u.username ORDER BY us.store_id;
SQL
echo "==> one signed GET's database work on PostgreSQL $("$pgbin/postgres" --version | awk '{print $3}'), pgbench, $clients connections, ${seconds}s each, extended protocol; $(uptime | sed 's/.*load/load/')"
# Alternating, twice, so a neighbour's burst on a shared machine shows as a spread; the last
# rows are named prepared statements (parsed once per connection), as the server sends them:
# the third session's set, the seventh's, and a request whose token's key is cached.
for run in before:extended after:extended before:extended after:extended after:prepared now:prepared cached:prepared after:prepared now:prepared cached:prepared; do
  script=${run%%:*} protocol=${run##*:}
  "$pgbin/psql" "$db" -qAtc "SELECT pg_stat_reset_shared('wal')" >/dev/null
  out=$("$pgbin/pgbench" -n -M "$protocol" -c "$clients" -j 2 -T "$seconds" -f "$work/$script.sql" "$db" 2>&1)
  tps=$(sed -n 's/^tps = \([0-9]*\).*/\1/p' <<<"$out")
  latency=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out")
  flushes=$("$pgbin/psql" "$db" -qAtc "SELECT wal_sync FROM pg_stat_wal")
  printf '%-7s %-9s %6s signed requests/s   mean %7s ms   WAL flushes %s\n' "$script" "$protocol" "$tps" "$latency" "$flushes"
done
