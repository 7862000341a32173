#!/usr/bin/env bash
# test_install.sh — `cmake --install` lays out tide, libtide, headers and tide.pc, and a
# program outside the tree builds against the installed library through pkg-config.
set -euo pipefail
build=$(dirname "$TIDE_BIN")
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/tide include/tide/tide.h lib/pkgconfig/tide.pc share/tide/config/default.json; do
  [ -e "$prefix/$f" ] || { echo "missing after install: $f"; exit 1; }
done
ls "$prefix"/lib/libtide.so* "$prefix"/lib/libtide.a >/dev/null
cat > "$prefix/use.c" <<'C'
#include <stdio.h>
#include <tide/tide.h>
int main(void) {
    tide_ctx *ctx = NULL;
    tide_ctx_options o = {0};
    o.backend = TIDE_BACKEND_CPU;
    if (tide_ctx_create(&ctx, &o)) return 1;
    printf("%s\n", tide_strerror(TIDE_E_FORMAT));
    tide_ctx_destroy(ctx);
    return 0;
}
C
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# The .pc names the configured prefix; point it at this temporary one.
pc="pkg-config --define-variable=prefix=$prefix"
cc -std=c11 -o "$prefix/use" "$prefix/use.c" $($pc --cflags --libs tide)
out=$(LD_LIBRARY_PATH=$prefix/lib "$prefix/use")
[ "$out" = "malformed input" ] || { echo "unexpected output: $out"; exit 1; }
"$prefix/bin/tide" --version | grep -q '^tide '
echo ok
