#!/usr/bin/env bash
# Makes the pgvector extension available to the local PostgreSQL 15 and creates it in
# the target database. Idempotent: when the extension is already available it only runs
# CREATE EXTENSION IF NOT EXISTS.
#
# Debian bookworm ships no postgresql-15-pgvector package, so when the packaged install
# is not possible the script builds pgvector from Debian's own source package of a newer
# release. The source is fetched from the mirror this machine's apt already uses: its URI
# (and keyring) are read from the apt sources, so no mirror is written here.
#
# Usage: scripts/install_pgvector.sh [DATABASE_URL]   (default postgresql://postgres@127.0.0.1:5432/test)
#        scripts/install_pgvector.sh --print-source   (print the temporary apt source; change nothing)
#
# Environment: PG_MAJOR (15); PGVECTOR_SOURCE_SUITE, the release whose source package is
# built (trixie); PGVECTOR_SOURCE_URI, a mirror to use instead of the configured one;
# APT_SOURCES_DIR (/etc/apt) and OS_RELEASE (/etc/os-release), where the configuration is read.
set -euo pipefail

pg_major="${PG_MAJOR:-15}"
pg_config="/usr/lib/postgresql/${pg_major}/bin/pg_config"
source_suite="${PGVECTOR_SOURCE_SUITE:-trixie}"
apt_dir="${APT_SOURCES_DIR:-/etc/apt}"
os_release="${OS_RELEASE:-/etc/os-release}"

# The apt sources of this machine, in the order apt reads them.
apt_source_files() {
  [ -f "$apt_dir/sources.list" ] && echo "$apt_dir/sources.list"
  if [ -d "$apt_dir/sources.list.d" ]; then
    find "$apt_dir/sources.list.d" -maxdepth 1 -type f \( -name '*.list' -o -name '*.sources' \) | LC_ALL=C sort
  fi
}

# Prints the Signed-By field (possibly several lines) and the URI of the first enabled
# binary source of release $1, as "signed-by lines..." then "URI <uri>". Reads one-line
# (*.list) and deb822 (*.sources) files.
configured_source() {
  local codename="$1" file entry
  while IFS= read -r file; do
    case "$file" in
      *.sources) entry="$(awk -v want="$codename" '
          function flush() {
            if (types ~ /(^| )deb( |$)/ && enabled !~ /^[Nn][Oo]$/ && uris != "") {
              n = split(suites, s, " ")
              for (i = 1; i <= n; i++) if (s[i] == want) {
                split(uris, u, " ")
                if (signed != "") printf "%s\n", signed
                printf "URI %s\n", u[1]
                found = 1; exit
              }
            }
            types = uris = suites = enabled = signed = ""; field = ""
          }
          /^#/ { next }
          /^[ \t]*$/ { flush(); next }
          /^[ \t]/ { if (field == "signed-by") signed = signed "\n" $0; next }
          {
            split($0, kv, ":"); field = tolower(kv[1]); value = substr($0, index($0, ":") + 1)
            gsub(/^[ \t]+|[ \t]+$/, "", value)
            if (field == "types") types = value
            else if (field == "uris") uris = value
            else if (field == "suites") suites = value
            else if (field == "enabled") enabled = value
            else if (field == "signed-by") signed = "Signed-By: " value
          }
          END { if (!found) flush() }
        ' "$file")" ;;
      *) entry="$(awk -v want="$codename" '
          $1 != "deb" { next }
          {
            i = 2; signed = ""
            if ($2 ~ /^\[/) {
              # options: [key=value ...], possibly over several fields
              while (i <= NF) {
                opt = $i; gsub(/[][]/, "", opt)
                if (opt ~ /^signed-by=/) signed = "Signed-By: " substr(opt, 11)
                if ($i ~ /\]$/) { i++; break }
                i++
              }
            }
            if ($(i + 1) == want) {
              if (signed != "") print signed
              printf "URI %s\n", $i
              exit
            }
          }
        ' "$file")" ;;
    esac
    if [ -n "$entry" ]; then
      printf '%s\n' "$entry"
      return 0
    fi
  done < <(apt_source_files)
}

# The deb822 stanza of the temporary source: Debian's source packages of $source_suite
# from the mirror (and with the keyring) this machine already uses.
pgvector_source() {
  local codename="" found uri signed
  if [ -n "${PGVECTOR_SOURCE_URI:-}" ]; then
    uri="$PGVECTOR_SOURCE_URI"
    signed=""
  else
    [ -f "$os_release" ] && codename="$(. "$os_release" && echo "${VERSION_CODENAME:-}")"
    if [ -z "$codename" ]; then
      echo "pgvector: no VERSION_CODENAME in $os_release; set PGVECTOR_SOURCE_URI to a Debian mirror" >&2
      return 1
    fi
    found="$(configured_source "$codename")"
    uri="$(printf '%s\n' "$found" | sed -n 's/^URI //p')"
    signed="$(printf '%s\n' "$found" | sed '/^URI /d')"
    if [ -z "$uri" ]; then
      echo "pgvector: no enabled apt source for '$codename' in $apt_dir/sources.list or" \
        "$apt_dir/sources.list.d; set PGVECTOR_SOURCE_URI to a Debian mirror" >&2
      return 1
    fi
  fi
  printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\n' "$uri" "$source_suite"
  [ -z "$signed" ] || printf '%s\n' "$signed"
}

if [ "${1:-}" = "--print-source" ]; then
  pgvector_source
  exit
fi

url="${1:-${LANGMEM_TIERS_TEST_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}}"

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
    stanza="$(pgvector_source)"
    as_root apt-get install -y -qq "postgresql-server-dev-${pg_major}" dpkg-dev make gcc >/dev/null
    src_list=/etc/apt/sources.list.d/langmem-tiers-pgvector-src.sources
    cleanup() { as_root rm -f "$src_list"; }
    trap cleanup EXIT
    printf '%s\n' "$stanza" | as_root tee "$src_list" >/dev/null
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
psql "$url" -v ON_ERROR_STOP=1 -q -c "SET client_min_messages = warning" \
  -c "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null
echo "pgvector: $(psql "$url" -Atc "SELECT extversion FROM pg_extension WHERE extname = 'vector'") ready in $url"
