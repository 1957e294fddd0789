#!/usr/bin/env bash
# Packs a built fenced-lint as a release asset, named and laid out as install.sh beside
# this file downloads it (.github/workflows/release.yml runs it for each target):
#
#   fenced-lint-<version>-<target>.tar.gz   (.zip for a Windows target), holding
#   fenced-lint-<version>-<target>/fenced-lint[.exe], README.md, LICENSE-MIT, LICENSE-APACHE
#
# Usage: package.sh VERSION TARGET BINARY OUT_DIR; prints the archive's path.
set -euo pipefail

if [ "$#" -ne 4 ]; then
    echo "usage: package.sh VERSION TARGET BINARY OUT_DIR" >&2
    exit 2
fi
version="$1" target="$2" binary="$3" out_dir="$4"
repo="$(cd "$(dirname "$0")/../.." && pwd)"

name="fenced-lint-${version}-${target}"
exe=fenced-lint
case "${target}" in
    *-windows-*) exe=fenced-lint.exe ext=zip ;;
    *) ext=tar.gz ;;
esac

stage="$(mktemp -d)"
trap 'rm -rf "${stage}"' EXIT
mkdir "${stage}/${name}"
cp "${binary}" "${stage}/${name}/${exe}"
chmod 755 "${stage}/${name}/${exe}"
cp "${repo}/lint/README.md" "${repo}/LICENSE-MIT" "${repo}/LICENSE-APACHE" "${stage}/${name}/"

mkdir -p "${out_dir}"
out_dir="$(cd "${out_dir}" && pwd)"
if [ "${ext}" = zip ]; then
    # 7-Zip is on GitHub's Windows runners; zip elsewhere.
    if command -v 7z >/dev/null 2>&1; then
        (cd "${stage}" && 7z a -tzip -bd -bso0 "${out_dir}/${name}.zip" "${name}")
    else
        (cd "${stage}" && zip -q -r "${out_dir}/${name}.zip" "${name}")
    fi
else
    tar -czf "${out_dir}/${name}.tar.gz" -C "${stage}" "${name}"
fi
echo "${out_dir}/${name}.${ext}"
