#!/usr/bin/env bash
# Makes the pgvector extension available to the local PostgreSQL 15 and creates it in
# the target database. Idempotent: when the extension is already available it only runs
# CREATE EXTENSION IF NOT EXISTS.
#
# Debian bookworm ships no postgresql-15-pgvector package, so when the packaged install
# is not possible the script builds pgvector from Debian's own source package.
#
# Usage: scripts/install_pgvector.sh [DATABASE_URL]   (default postgresql://postgres@127.0.0.1:5432/test)
set -euo pipefail

url="${1:-${LANGMEM_TIERS_TEST_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}}"
pg_major="${PG_MAJOR:-15}"
pg_config="/usr/lib/postgresql/${pg_major}/bin/pg_config"

have_extension() {
  [ -f "$("$pg_config" --sharedir)/extension/vector.control" ]
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

if ! have_extension; then
  echo "pgvector: not available for PostgreSQL ${pg_major}; installing" >&2
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  if ! as_root apt-get install -y -qq "postgresql-${pg_major}-pgvector" >/dev/null 2>&1; then
    echo "pgvector: no binary package; building from Debian's source package" >&2
    as_root apt-get install -y -qq "postgresql-server-dev-${pg_major}" dpkg-dev make gcc >/dev/null
    src_list=/etc/apt/sources.list.d/langmem-tiers-pgvector-src.sources
    cleanup() { as_root rm -f "$src_list"; }
    trap cleanup EXIT
    as_root tee "$src_list" >/dev/null <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    as_root apt-get update -qq
    build_dir="$(mktemp -d)"
    (
      cd "$build_dir"
      apt-get source --download-only pgvector >/dev/null
      dpkg-source -x ./pgvector_*.dsc pgvector-src >/dev/null
      cd pgvector-src
      make -s PG_CONFIG="$pg_config" >/dev/null
      as_root make -s PG_CONFIG="$pg_config" install >/dev/null
    )
    rm -rf "$build_dir"
    cleanup
    trap - EXIT
    as_root apt-get update -qq || true
  fi
fi

have_extension || { echo "pgvector: installation failed" >&2; exit 1; }
psql "$url" -v ON_ERROR_STOP=1 -qc "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null
echo "pgvector: $(psql "$url" -Atc "SELECT extversion FROM pg_extension WHERE extname = 'vector'") ready in $url"
