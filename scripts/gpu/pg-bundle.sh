#!/usr/bin/env bash
# pg-bundle.sh OUTDIR — a relocatable PostgreSQL 15 server with Q3C, from Debian's packages
# here (postgresql-15, postgresql-15-q3c), for a machine that has no PostgreSQL (the GPU
# machine: scripts/gpu/prepare.sh with TIDE_GPU_PG=1, scripts/gpu/run.sh worker).
#
# Layout, so that the binaries find their share and lib directories wherever OUTDIR goes:
# Debian builds PostgreSQL with bindir /usr/lib/postgresql/15/bin, sharedir
# /usr/share/postgresql/15 and pkglibdir /usr/lib/postgresql/15/lib, and PostgreSQL finds the
# latter two relative to the real path of the running binary when that path ends in the same
# "lib/postgresql/15/bin" (src/port/path.c, make_relative_path). So the tree keeps that layout:
#
#   OUTDIR/lib/postgresql/15/bin/   initdb pg_ctl postgres psql pg_isready
#   OUTDIR/lib/postgresql/15/lib/   q3c.so, plpgsql.so, dict_snowball.so, the encoding converters
#   OUTDIR/share/postgresql/15/     postgres.bki, timezonesets, tsearch_data, extension/ (q3c)
#   OUTDIR/lib/                     the shared libraries they need (ICU, OpenSSL, LDAP, libpq...)
#   OUTDIR/bin -> lib/postgresql/15/bin   (PG_BIN=OUTDIR/bin for tests/pg_cluster.sh)
#
# Every ELF file gets an RPATH ($ORIGIN/...) to OUTDIR/lib, so no LD_LIBRARY_PATH is needed.
# glibc, libstdc++ and libgcc_s stay behind: the GPU machine's (Ubuntu 24.04) are newer. Left
# out: the JIT (llvmjit.so needs libLLVM, ~100 MB; without it PostgreSQL silently runs without
# JIT), contrib modules, manuals and message catalogs. Timezones: Debian's PostgreSQL reads the
# system's /usr/share/zoneinfo (--with-system-tzdata); where that is missing, initdb falls back
# to GMT, which PostgreSQL knows without any file.
set -euo pipefail
out=${1:?usage: pg-bundle.sh OUTDIR}
ver=15
src_lib=/usr/lib/postgresql/$ver
src_share=/usr/share/postgresql/$ver
need() { # need TEST PATH PACKAGE: exit 77 (skipped) when a build input is missing
  test "$1" "$2" || { echo "pg-bundle: $2 missing (apt-get install $3)" >&2; exit 77; }
}
need -x "$src_lib/bin/postgres" postgresql-$ver
need -f "$src_lib/lib/q3c.so" postgresql-$ver-q3c
need -x "$(command -v patchelf || echo /nonexistent/patchelf)" patchelf
if [ -e "$out" ] && [ -n "$(ls -A "$out")" ]; then
  echo "pg-bundle: $out exists and is not empty" >&2; exit 2
fi

bin=$out/lib/postgresql/$ver/bin pkglib=$out/lib/postgresql/$ver/lib
share=$out/share/postgresql/$ver
mkdir -p "$bin" "$pkglib" "$share/extension"
cp -L "$src_lib"/bin/{initdb,pg_ctl,postgres,psql,pg_isready} "$bin/"
# initdb loads dict_snowball (text search) and plpgsql; the *_and_* converters are loaded on
# demand for client encodings other than the database's; q3c is the sky index.
cp -L "$src_lib"/lib/{q3c,plpgsql,dict_snowball,*_and_*}.so "$pkglib/"
cp -L "$src_share"/{postgres.bki,*.sql,*.sample,sql_features.txt,errcodes.txt} "$share/"
[ -f "$src_share/catalog_version" ] && cp "$src_share/catalog_version" "$share/"
cp -rL "$src_share"/{timezonesets,tsearch_data} "$share/"
cp -L "$src_share"/extension/{plpgsql,q3c}[-.]* "$share/extension/"
ln -s lib/postgresql/$ver/bin "$out/bin"

# The libraries every copied ELF file needs, but the C and C++ runtimes; ldd resolves the
# whole tree, so one pass over the programs and modules finds the indirect ones too.
skip='^(linux-vdso|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libresolv\.|libutil\.|libnss'
skip+='|ld-linux|libstdc\+\+|libgcc_s)'
for f in "$bin"/* "$pkglib"/*.so; do
  ldd "$f" | awk '/=> \//{print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $skip ]] && continue
  [ -e "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
done

strip --strip-unneeded "$bin"/* "$pkglib"/*.so "$out"/lib/*.so* 2>/dev/null || true
# DT_RPATH (not RUNPATH): it also covers the dependencies of dependencies and comes before
# LD_LIBRARY_PATH, so the bundle never mixes in another copy of a library.
for f in "$bin"/*; do patchelf --force-rpath --set-rpath '$ORIGIN/../../..' "$f"; done
for f in "$pkglib"/*.so; do patchelf --force-rpath --set-rpath '$ORIGIN/../..' "$f"; done
for f in "$out"/lib/*.so*; do patchelf --force-rpath --set-rpath '$ORIGIN' "$f"; done
# The server runs as an unprivileged user (tests/pg_cluster.sh under root): all readable.
chmod -R a+rX "$out"
du -sh "$out" | awk '{print "pg-bundle: " $2 " " $1}'
