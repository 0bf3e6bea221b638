#!/usr/bin/env bash
# Vendor the Swagger UI and ReDoc browser assets into web/assets/ so the Go
# binary can embed them and serve the API docs pages fully offline.
#
# Usage: web/vendor.sh        (from any working directory)
#
# Packages are fetched with `npm pack` from whatever registry npm is
# configured to use; no registry host is hard-coded here. npm verifies each
# tarball against the integrity hash in the registry metadata. Only the files
# listed below are copied. The hand-written pages (docs.html, redoc.html,
# swagger-ui/init.js) are left alone. Running the script again with the same
# pinned versions gives byte-identical output.
set -euo pipefail

SWAGGER_UI_VERSION="5.35.0"
REDOC_VERSION="3.0.1"

SWAGGER_UI_PKG="swagger-ui-dist"
REDOC_PKG="redoc"

# Files taken from swagger-ui-dist (relative to the package root).
# Required ones must exist; optional ones are copied only if present.
# NOTICE is required by Apache-2.0 section 4(d), and
# swagger-ui-bundle.js.LICENSE.txt holds the third-party licence headers
# that were stripped from the minified bundle.
SWAGGER_UI_REQUIRED=(swagger-ui.css swagger-ui-bundle.js LICENSE)
SWAGGER_UI_OPTIONAL=(NOTICE swagger-ui-bundle.js.LICENSE.txt favicon-16x16.png favicon-32x32.png)
# swagger-ui-standalone-preset.js is not vendored: docs.html uses the
# default BaseLayout, which doesn't need the standalone preset or topbar.

# Files taken from redoc (relative to the package root).
REDOC_REQUIRED=(bundles/redoc.standalone.js LICENSE)

# ---------------------------------------------------------------------------

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
assets_dir="${script_dir}/assets"
swagger_dir="${assets_dir}/swagger-ui"
redoc_dir="${assets_dir}/redoc"
versions_file="${assets_dir}/VERSIONS.txt"

die() { printf 'vendor.sh: %s\n' "$*" >&2; exit 1; }

for tool in npm node tar; do
  command -v "$tool" >/dev/null 2>&1 || die "required tool not found: $tool"
done

if command -v sha256sum >/dev/null 2>&1; then
  sha256() { sha256sum -- "$1" | awk '{print $1}'; }
elif command -v shasum >/dev/null 2>&1; then
  sha256() { shasum -a 256 -- "$1" | awk '{print $1}'; }
else
  die "need sha256sum or shasum"
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/copydesk-vendor.XXXXXX")"
trap 'rm -rf -- "$tmp"' EXIT

# fetch <pkg> <version>: npm pack the package into $tmp, extract it to
# $tmp/<pkg>/package, and print the tarball's integrity string.
fetch() {
  local pkg="$1" ver="$2" json tarball integrity name version
  json="$(cd -- "$tmp" && npm pack --json --ignore-scripts "${pkg}@${ver}" 2>/dev/null)" \
    || die "npm pack ${pkg}@${ver} failed"
  tarball="$(node -e 'const j=JSON.parse(process.argv[1]);process.stdout.write(j[0].filename)' "$json")"
  integrity="$(node -e 'const j=JSON.parse(process.argv[1]);process.stdout.write(j[0].integrity||"")' "$json")"
  [[ -f "$tmp/$tarball" ]] || die "npm pack did not produce $tarball"

  mkdir -p -- "$tmp/$pkg"
  tar -xzf "$tmp/$tarball" -C "$tmp/$pkg" --no-same-owner --no-same-permissions
  [[ -f "$tmp/$pkg/package/package.json" ]] || die "$pkg: unexpected tarball layout"

  # Make sure we got what we asked for.
  name="$(node -e 'process.stdout.write(require(process.argv[1]).name)' "$tmp/$pkg/package/package.json")"
  version="$(node -e 'process.stdout.write(require(process.argv[1]).version)' "$tmp/$pkg/package/package.json")"
  [[ "$name" == "$pkg" && "$version" == "$ver" ]] \
    || die "expected ${pkg}@${ver}, tarball contains ${name}@${version}"

  printf '%s' "$integrity"
}

# copy_file <src> <dest>: copy one regular file with mode 0644.
copy_file() {
  local src="$1" dest="$2"
  [[ -f "$src" && ! -L "$src" ]] || die "not a regular file: $src"
  install -m 0644 -- "$src" "$dest"
}

echo "vendor.sh: fetching ${SWAGGER_UI_PKG}@${SWAGGER_UI_VERSION}" >&2
swagger_integrity="$(fetch "$SWAGGER_UI_PKG" "$SWAGGER_UI_VERSION")"
echo "vendor.sh: fetching ${REDOC_PKG}@${REDOC_VERSION}" >&2
redoc_integrity="$(fetch "$REDOC_PKG" "$REDOC_VERSION")"

swagger_src="$tmp/$SWAGGER_UI_PKG/package"
redoc_src="$tmp/$REDOC_PKG/package"

# Check that everything required is there before touching web/assets.
for f in "${SWAGGER_UI_REQUIRED[@]}"; do
  [[ -f "$swagger_src/$f" ]] || die "${SWAGGER_UI_PKG}@${SWAGGER_UI_VERSION} lacks $f"
done
for f in "${REDOC_REQUIRED[@]}"; do
  [[ -f "$redoc_src/$f" ]] || die "${REDOC_PKG}@${REDOC_VERSION} lacks $f"
done

mkdir -p -- "$swagger_dir" "$redoc_dir"

# Remove files a previous run vendored (so an optional file that has
# disappeared upstream doesn't linger), but never the hand-written ones.
for f in "${SWAGGER_UI_REQUIRED[@]}" "${SWAGGER_UI_OPTIONAL[@]}" swagger-ui-standalone-preset.js; do
  rm -f -- "$swagger_dir/$(basename -- "$f")"
done
for f in "${REDOC_REQUIRED[@]}"; do
  rm -f -- "$redoc_dir/$(basename -- "$f")"
done

swagger_copied=()
for f in "${SWAGGER_UI_REQUIRED[@]}"; do
  copy_file "$swagger_src/$f" "$swagger_dir/$(basename -- "$f")"
  swagger_copied+=("swagger-ui/$(basename -- "$f")")
done
for f in "${SWAGGER_UI_OPTIONAL[@]}"; do
  if [[ -f "$swagger_src/$f" ]]; then
    copy_file "$swagger_src/$f" "$swagger_dir/$(basename -- "$f")"
    swagger_copied+=("swagger-ui/$(basename -- "$f")")
  fi
done

redoc_copied=()
for f in "${REDOC_REQUIRED[@]}"; do
  copy_file "$redoc_src/$f" "$redoc_dir/$(basename -- "$f")"
  redoc_copied+=("redoc/$(basename -- "$f")")
done

# VERSIONS.txt has no timestamps, so reruns give identical output.
{
  echo "# Generated by web/vendor.sh -- do not edit by hand."
  echo "# sha256 values are of the files as copied into web/assets/."
  echo
  echo "package: ${SWAGGER_UI_PKG}"
  echo "version: ${SWAGGER_UI_VERSION}"
  echo "integrity: ${swagger_integrity}"
  echo "files:"
  for rel in "${swagger_copied[@]}"; do
    printf '  %s  %s\n' "$(sha256 "$assets_dir/$rel")" "$rel"
  done
  echo
  echo "package: ${REDOC_PKG}"
  echo "version: ${REDOC_VERSION}"
  echo "integrity: ${redoc_integrity}"
  echo "files:"
  for rel in "${redoc_copied[@]}"; do
    printf '  %s  %s\n' "$(sha256 "$assets_dir/$rel")" "$rel"
  done
} > "$versions_file.tmp"
mv -f -- "$versions_file.tmp" "$versions_file"

echo "vendor.sh: wrote ${#swagger_copied[@]} swagger-ui file(s), ${#redoc_copied[@]} redoc file(s), and VERSIONS.txt under ${assets_dir}" >&2
