#!/usr/bin/env bash
# Builds the web UI (ui/) into ui/dist when it is missing or older than its sources.
# Run by scripts/install.sh (make start, make test) and by the browser tests before they start.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/upToDate.sh
up_to_date ui/dist/index.html ui/src ui/index.html ui/vite.config.mjs package-lock.json && exit 0
echo "building the web UI"
npx tsc --noEmit -p ui
# Always React's production build: under vitest NODE_ENV is "test", which would select its development build.
NODE_ENV=production npx vite build --config ui/vite.config.mjs
