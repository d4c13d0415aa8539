#!/bin/bash
# Build-time only (as postgres): create the cluster, load schema and data, shut down clean.
set -euo pipefail
PGDATA=/var/lib/boxgym/pgdata
DB=/opt/boxgym/db
initdb -D "$PGDATA" -E UTF8 --locale=C.UTF-8 --auth-local=peer --auth-host=reject \
    --wal-segsize=1 --username=postgres --no-instructions >/dev/null
cp "$DB/postgresql.conf" "$DB/pg_hba.conf" "$DB/pg_ident.conf" "$PGDATA/"
pg_ctl -D "$PGDATA" -l /tmp/build-postgres.log -w start >/dev/null
psql="psql -X -q -v ON_ERROR_STOP=1 -h /run/postgresql"
$psql -d postgres -f "$DB/roles.sql"
$psql -d shop -f "$DB/schema.sql"
python3 "$DB/gen_data.py" | $psql -d shop
$psql -d shop -f "$DB/grants.sql"
$psql -d shop -c 'VACUUM (FREEZE, ANALYZE)'
$psql -d postgres -f "$DB/grading.sql"
$psql -d postgres -c 'VACUUM (FREEZE)' -c 'CHECKPOINT'
pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
rm -f /tmp/build-postgres.log "$PGDATA/postmaster.opts"
du -sh "$PGDATA"
