#!/usr/bin/env bash
# The Action's install step (lint/action.yml): puts fenced-lint VERSION on the job's PATH.
#
# It downloads the release asset that .github/workflows/release.yml publishes for this
# runner, `fenced-lint-<version>-<target>.tar.gz` (`.zip` on Windows) from the release of
# the tag `v<version>`, made by lint/action/package.sh. Where the release has no asset for
# the runner, or no release exists, it builds that tag with `cargo install --git`.
#
# Environment: VERSION (0.1.0; a leading `v` is allowed), REPOSITORY (owner/name), and
# what the runner sets: RUNNER_OS, RUNNER_ARCH, RUNNER_TEMP, GITHUB_PATH, and
# GITHUB_SERVER_URL (optional, default https://github.com).
set -euo pipefail

release="${VERSION#v}"
if ! [[ "${release}" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
    echo "::error title=fenced-lint::version '${VERSION}' is not a release, such as 0.1.0" >&2
    exit 2
fi
tag="v${release}"
repository_url="${GITHUB_SERVER_URL:-https://github.com}/${REPOSITORY}"

# The targets release.yml builds; lint/tests/action.rs checks that both lists agree.
case "${RUNNER_OS}-${RUNNER_ARCH}" in
    Linux-X64) target=x86_64-unknown-linux-musl ext=tar.gz ;;
    Linux-ARM64) target=aarch64-unknown-linux-musl ext=tar.gz ;;
    macOS-X64) target=x86_64-apple-darwin ext=tar.gz ;;
    macOS-ARM64) target=aarch64-apple-darwin ext=tar.gz ;;
    Windows-X64) target=x86_64-pc-windows-msvc ext=zip ;;
    *) target="" ext="" ;;
esac
exe=fenced-lint
if [ "${RUNNER_OS}" = Windows ]; then
    exe=fenced-lint.exe
fi

# `cargo install --root` puts the binary in bin/ below it; the download goes there too.
root="${RUNNER_TEMP}/fenced-lint-${release}"
bin_dir="${root}/bin"
mkdir -p "${bin_dir}"

installed=false
if [ -n "${target}" ]; then
    name="fenced-lint-${release}-${target}"
    archive="${RUNNER_TEMP}/${name}.${ext}"
    url="${repository_url}/releases/download/${tag}/${name}.${ext}"
    echo "downloading ${url}"
    if curl --fail --silent --show-error --location --retry 3 --output "${archive}" "${url}"; then
        if [ "${ext}" = zip ]; then
            unzip -o -j -q "${archive}" "${name}/${exe}" -d "${bin_dir}"
        else
            tar -xzf "${archive}" -C "${bin_dir}" --strip-components=1 "${name}/${exe}"
        fi
        installed=true
    else
        echo "no release asset ${name}.${ext} for ${RUNNER_OS} ${RUNNER_ARCH}"
    fi
else
    echo "no release asset is built for ${RUNNER_OS} ${RUNNER_ARCH}"
fi

if [ "${installed}" = false ]; then
    if ! command -v cargo >/dev/null 2>&1; then
        echo "::error title=fenced-lint::no release asset for this runner and no cargo to build ${tag}: install Rust first (rustup)" >&2
        exit 1
    fi
    echo "building fenced-lint from ${repository_url} at ${tag}"
    cargo install fenced-lint --git "${repository_url}" --tag "${tag}" --locked --root "${root}"
fi

"${bin_dir}/${exe}" --version
echo "${bin_dir}" >>"${GITHUB_PATH}"
