#!/usr/bin/env bash
# Installs what the service and its tests need, when missing: ClickHouse and kcat from
# Debian's packages, the npm packages from the lockfile. Safe to run every time.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
[ -x /usr/sbin/clickhouse-server ] || need_apt+=(clickhouse-server)
command -v clickhouse-client >/dev/null 2>&1 || need_apt+=(clickhouse-client)
command -v kcat >/dev/null 2>&1 || need_apt+=(kcat)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing ${need_apt[*]} from Debian's packages"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "installing npm packages"
  # `npm install` follows the lockfile; `npm ci` (npm 11) refuses it because the lockfile
  # written on this platform omits other platforms' optional packages (rollup's builds).
  npm install --no-fund --no-audit --loglevel=error
fi

# The built-in base language model: trained once from the shipped corpus (a few minutes), then cached.
npx tsx scripts/build-base-model.ts
