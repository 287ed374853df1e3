#!/usr/bin/env bash
# Issue 32's figures on a bare machine with no PostgreSQL, Redis or HAProxy, such as the 16-core
# device machine: Debian's binaries carried in, each run with the libraries it links
# (LD_LIBRARY_PATH set for them alone). Run as root from the repository's root; results go to
# $OUT/shared.txt, the gateways' logs (at GATEWAY_LOG, `warn` by default) and PostgreSQL's
# samples to $OUT/logs-*. It runs, in turn:
#   1. the ledger's append rate onto PostgreSQL (the `postgres` criterion-less bench of
#      switchboard-ledger, carried as `ledger-postgres`), one gateway and two onto one chain;
#   2. scripts/bench-shared.sh ROUNDS CALLS (one replica on PostgreSQL + Redis against the
#      embedded default);
#   3. scripts/bench-replicas.sh 3 REPLICA_ROUNDS REPLICA_CALLS 16 64 (three replicas behind
#      HAProxy).
#
# Pack here (Debian 12, postgresql-15, redis-server and haproxy installed):
#   mkdir -p /tmp/pgpack/root/usr/lib/postgresql /tmp/pgpack/root/usr/share/postgresql /tmp/pgpack/libs /tmp/pgpack/redis /tmp/pgpack/haproxy /tmp/pgpack/tz
#   cp -a /usr/lib/postgresql/15 /tmp/pgpack/root/usr/lib/postgresql/ && rm -rf /tmp/pgpack/root/usr/lib/postgresql/15/lib/bitcode
#   cp -a /usr/share/postgresql/15 /tmp/pgpack/root/usr/share/postgresql/
#   cp -a /usr/share/zoneinfo/UTC /usr/share/zoneinfo/GMT /tmp/pgpack/tz/
#   cp -L "$(command -v redis-server)" "$(command -v redis-cli)" /tmp/pgpack/redis/
#   cp -L /usr/sbin/haproxy /tmp/pgpack/haproxy/
#   for b in /usr/lib/postgresql/15/bin/{postgres,initdb,psql,pg_ctl} /tmp/pgpack/redis/* /tmp/pgpack/haproxy/*; do ldd "$b" | awk '$3 ~ /^\// {print $3}'; done \
#     | sort -u | grep -v '/libc.so.6\|/libm.so.6\|/libresolv.so.2\|ld-linux' | xargs -I{} cp -L {} /tmp/pgpack/libs/
#   tar -cJf .bench-carry/pgredis.tar.xz -C /tmp/pgpack .
#   (strip switchboard, bench and switchboard-fixture from target/release into one folder, and
#    target/release/deps/postgres-* from `cargo bench -p switchboard-ledger --bench postgres
#    --no-run` as ledger-postgres)
#   tar -cJf .bench-carry/bins-shared.tar.xz -C THAT_FOLDER .
# and carry .bench-carry/{pgredis,bins-shared}.tar.xz.
set -u
out=${OUT:?set OUT to where the results go}
W=/tmp/shared; mkdir -p $W/bin $W/pgbin; chmod 755 $W
tar -xJf .bench-carry/bins-shared.tar.xz -C $W/bin && tar -xJf .bench-carry/pgredis.tar.xz -C $W || exit 1
[ -x /usr/lib/postgresql/15/bin/postgres ] || { mkdir -p /usr/lib/postgresql /usr/share/postgresql; cp -a $W/root/usr/lib/postgresql/15 /usr/lib/postgresql/; cp -a $W/root/usr/share/postgresql/15 /usr/share/postgresql/; }
[ -e /usr/share/zoneinfo/UTC ] || { mkdir -p /usr/share/zoneinfo; cp -a $W/tz/* /usr/share/zoneinfo/; }
id postgres >/dev/null 2>&1 || useradd -r -M postgres || exit 1
for p in initdb pg_ctl psql; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/libs exec /usr/lib/postgresql/15/bin/%s "$@"\n' $W $p > $W/pgbin/$p
done
for p in redis/redis-server redis/redis-cli haproxy/haproxy; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/libs exec %s/%s "$@"\n' $W $W $p > "$W/pgbin/${p#*/}"
done
chmod 755 $W/pgbin/* $W/libs $W/redis $W/haproxy; chmod -R a+rX $W
export TZ=UTC SWITCHBOARD_BIN=$W/bin PG_BIN=$W/pgbin REDIS_SERVER=$W/pgbin/redis-server \
  REDIS_CLI=$W/pgbin/redis-cli HAPROXY=$W/pgbin/haproxy SWITCHBOARD_PG_BIN=$W/pgbin
exec > >(tee -a "$out/shared.txt") 2>&1
echo "== $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); build $(cat $W/bin/COMMIT 2>/dev/null)"
export GATEWAY_LOG=${GATEWAY_LOG:-warn}
if [[ -x $W/bin/ledger-postgres && -z ${SKIP_LEDGER:-} ]]; then
  echo "== 1. the ledger's append rate onto PostgreSQL"
  timeout 120 $W/bin/ledger-postgres --bench
fi
echo "== 2. one replica on PostgreSQL + Redis against the embedded default"
KEEP_LOGS=$out/logs-shared timeout 200 bash scripts/bench-shared.sh "${ROUNDS:-1}" "${CALLS:-20000}"
echo "== 3. three replicas behind HAProxy"
KEEP_LOGS=$out/logs-replicas timeout 240 bash scripts/bench-replicas.sh 3 "${REPLICA_ROUNDS:-2}" \
  "${REPLICA_CALLS:-100000}" ${REPLICA_CONCURRENCY:-16 64}
