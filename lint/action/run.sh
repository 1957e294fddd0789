#!/usr/bin/env bash
# The Action's lint step (lint/action.yml): runs fenced-lint and maps its exit code.
#
# GitHub runs a step's `shell: bash` as `bash --noprofile --norc -eo pipefail`, so the
# exit code is taken where a failure cannot end the script first. Error-level findings
# (exit code 1) fail the step unless FAIL_ON_FINDINGS is `false`; a usage or
# configuration error (2) always does.
#
# Environment: PATHS and ARGS (lists, split on white space), FORMAT, FAIL_ON_FINDINGS
# (`true` or `false`).
set -euo pipefail

case "${FAIL_ON_FINDINGS}" in
    true | false) ;;
    *)
        echo "::error title=fenced-lint::fail-on-findings is '${FAIL_ON_FINDINGS}'; it takes true or false" >&2
        exit 2
        ;;
esac

# The default, `.`, is no path: findings are then reported relative to the workspace
# (`sql/a.sql`, not `./sql/a.sql`), as the pull request's files are named.
if [ "${PATHS}" = . ]; then
    PATHS=""
fi

code=0
# PATHS and ARGS are lists: splitting them is intended.
# shellcheck disable=SC2086
fenced-lint --format "${FORMAT}" ${ARGS} ${PATHS} || code=$?

if [ "${code}" -eq 1 ] && [ "${FAIL_ON_FINDINGS}" = false ]; then
    echo "fenced-lint found errors; the step passes because fail-on-findings is false" >&2
    exit 0
fi
exit "${code}"
