#!/usr/bin/env bash
# Issue 32's figure on a bare machine with no PostgreSQL or Redis, such as the 16-core device
# machine: scripts/bench-shared.sh with Debian's PostgreSQL 15 and Redis carried in, each run
# with the libraries it links (LD_LIBRARY_PATH set for them alone). Run as root from the
# repository's root; results go to $OUT/shared.txt.
#
# Pack here (Debian 12, postgresql-15 and redis-server installed):
#   mkdir -p /tmp/pgpack/root/usr/lib/postgresql /tmp/pgpack/root/usr/share/postgresql /tmp/pgpack/libs /tmp/pgpack/redis /tmp/pgpack/tz
#   cp -a /usr/lib/postgresql/15 /tmp/pgpack/root/usr/lib/postgresql/ && rm -rf /tmp/pgpack/root/usr/lib/postgresql/15/lib/bitcode
#   cp -a /usr/share/postgresql/15 /tmp/pgpack/root/usr/share/postgresql/
#   cp -a /usr/share/zoneinfo/UTC /usr/share/zoneinfo/GMT /tmp/pgpack/tz/
#   cp -L "$(command -v redis-server)" "$(command -v redis-cli)" /tmp/pgpack/redis/
#   for b in /usr/lib/postgresql/15/bin/{postgres,initdb,psql,pg_ctl} /tmp/pgpack/redis/*; do ldd "$b" | awk '$3 ~ /^\// {print $3}'; done \
#     | sort -u | grep -v '/libc.so.6\|/libm.so.6\|/libresolv.so.2\|ld-linux' | xargs -I{} cp -L {} /tmp/pgpack/libs/
#   tar -cJf .bench-carry/pgredis.tar.xz -C /tmp/pgpack .
#   (strip switchboard, bench and switchboard-fixture from target/release into one folder)
#   tar -cJf .bench-carry/bins-shared.tar.xz -C THAT_FOLDER .
# and carry .bench-carry/{pgredis,bins-shared}.tar.xz. ROUNDS and CALLS as bench-shared.sh's.
set -u
W=/tmp/shared; mkdir -p $W/bin $W/pgbin; chmod 755 $W
tar -xJf .bench-carry/bins-shared.tar.xz -C $W/bin && tar -xJf .bench-carry/pgredis.tar.xz -C $W || exit 1
[ -x /usr/lib/postgresql/15/bin/postgres ] || { mkdir -p /usr/lib/postgresql /usr/share/postgresql; cp -a $W/root/usr/lib/postgresql/15 /usr/lib/postgresql/; cp -a $W/root/usr/share/postgresql/15 /usr/share/postgresql/; }
[ -e /usr/share/zoneinfo/UTC ] || { mkdir -p /usr/share/zoneinfo; cp -a $W/tz/* /usr/share/zoneinfo/; }
id postgres >/dev/null 2>&1 || useradd -r -M postgres || exit 1
for p in initdb pg_ctl psql; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/libs exec /usr/lib/postgresql/15/bin/%s "$@"\n' $W $p > $W/pgbin/$p
done
for p in redis-server redis-cli; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/libs exec %s/redis/%s "$@"\n' $W $W $p > $W/pgbin/$p
done
chmod 755 $W/pgbin/* $W/libs $W/redis; chmod -R a+rX $W
export TZ=UTC
echo "== $(nproc) cores; build $(cd $W/bin && ./switchboard --version 2>/dev/null | head -1)"
SWITCHBOARD_BIN=$W/bin PG_BIN=$W/pgbin REDIS_SERVER=$W/pgbin/redis-server REDIS_CLI=$W/pgbin/redis-cli \
  timeout 240 bash scripts/bench-shared.sh ${ROUNDS:-3} ${CALLS:-20000} 2>&1 | tee $OUT/shared.txt
