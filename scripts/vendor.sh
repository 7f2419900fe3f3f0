#!/bin/sh
# Copy the browser packages the page uses from node_modules/ (pinned in package-lock.json)
# into static/vendor/, where the app serves them. Nothing is ever loaded from a CDN.
set -eu
cd "$(dirname "$0")/.."
[ -d node_modules/three ] || npm ci --no-audit --no-fund
rm -rf static/vendor
mkdir -p static/vendor/three/addons static/vendor/swagger-ui
cp node_modules/three/build/three.module.js node_modules/three/build/three.core.js node_modules/three/LICENSE static/vendor/three/
for d in controls renderers lines; do cp -r "node_modules/three/examples/jsm/$d" static/vendor/three/addons/; done
cp node_modules/swagger-ui-dist/swagger-ui-bundle.js node_modules/swagger-ui-dist/swagger-ui.css node_modules/swagger-ui-dist/LICENSE static/vendor/swagger-ui/
touch static/vendor/.copied
