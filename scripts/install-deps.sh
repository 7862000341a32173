#!/usr/bin/env bash
# install-deps.sh — install the Debian 12 packages tide builds with and tests against.
# Idempotent: asks apt only for what is missing. Needs root (or sudo) when something is.
set -euo pipefail

# Build: compilers, CMake, the libraries of DESIGN §11 that tide links today.
build_pkgs=(build-essential cmake pkg-config libcfitsio-dev libdeflate-dev wcslib-dev libfftw3-dev
            libjansson-dev libpng-dev zlib1g-dev liberfa-dev libsqlite3-dev libpq-dev libastrometry-dev
            librabbitmq-dev libmicrohttpd-dev libhdf5-dev libopenmpi-dev
            libxgboost-dev)  # real/bogus models (issue 18), opened at run time (rb_model.c)
# The sanitizer build and the fuzz harnesses (scripts/test-sanitize.sh, scripts/fuzz.sh):
# clang with its sanitizer and libFuzzer runtimes, LLVM's OpenMP, llvm-symbolizer for stacks.
san_pkgs=(clang-14 libclang-rt-14-dev libomp-14-dev llvm-14)
# The layout check (scripts/check-format.sh, against .clang-format).
check_pkgs=(clang-format)
# Peers the tests compare against (DESIGN §8).
peer_pkgs=(libcfitsio-bin python3 python3-numpy python3-astropy python3-sep libsep-dev
           python3-photutils python3-astroscrappy python3-reproject source-extractor
           astrometry.net astrometry-data-tycho2-07-littleendian astrometry-data-tycho2-08-littleendian
           astrometry-data-tycho2-09-littleendian astrometry-data-tycho2-10-19-littleendian
           sqlite3 postgresql postgresql-15-q3c
           netpbm  # netpbm: the gauntlet turns astrometry.net's demo JPEGs into FITS
           rabbitmq-server amqp-tools prometheus openmpi-bin curl systemd)  # the worker's servers, promtool,
           # mpirun, a scraper, systemd-analyze (issue 17)
peer_pkgs+=(chromium chromium-driver python3-selenium)  # the review page in a real browser
# (tests/browser/test_review_page.py, issue 18)
peer_pkgs+=(python3-yaml)  # tests/cli/test_deploy.sh parses deploy/compose.yaml (issue 17)
# The relocatable PostgreSQL for the GPU machine (scripts/gpu/pg-bundle.sh, issue 17): patchelf
# sets its RPATHs; strace is tests/cli/test_pg_bundle.sh's check where unshare cannot hide the
# system's PostgreSQL.
peer_pkgs+=(patchelf strace)
# tide xray's tests (issue 20): scipy's savgol_filter, h5py's corrupt and legate-cube files.
peer_pkgs+=(python3-scipy python3-h5py)

missing=()
for p in "${build_pkgs[@]}" "${san_pkgs[@]}" "${check_pkgs[@]}" "${peer_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
