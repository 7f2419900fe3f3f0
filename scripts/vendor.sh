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
# the page's message formatter (static/js/i18n.js) as one ES module, for the page served from its sources
mkdir -p static/vendor/intl-messageformat
node_modules/.bin/esbuild node_modules/intl-messageformat/index.js --bundle --format=esm --minify --legal-comments=none \
  --log-level=warning --outfile=static/vendor/intl-messageformat/intl-messageformat.js
cp node_modules/intl-messageformat/LICENSE.md static/vendor/intl-messageformat/
cp node_modules/swagger-ui-dist/swagger-ui-bundle.js node_modules/swagger-ui-dist/swagger-ui.css node_modules/swagger-ui-dist/LICENSE static/vendor/swagger-ui/
touch static/vendor/.copied
