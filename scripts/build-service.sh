#!/usr/bin/env bash
# Compiles the service (services/) to JavaScript under build/services when it is missing or
# older than its sources, with the files the code reads beside its modules (JSON, the log
# thread's boot module). build/ then mirrors the repository: proto/, ui/ and .cache/ are
# links to the repository's own, which the compiled modules find where the sources do.
# Run by `make start`, the benches (bench/support.ts) and the image's build stage.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/upToDate.sh
stamp=build/services/main.js
up_to_date "$stamp" services deploy/tsconfig.build.json tsconfig.json package-lock.json && exit 0
echo "compiling the service into build/"
rm -rf build/services
npx tsc -p deploy/tsconfig.build.json
(cd services && find . -type f ! -name '*.ts' -exec cp --parents {} ../build/services/ \;)
for dir in proto ui .cache; do ln -sfn "../$dir" "build/$dir"; done
touch "$stamp"
