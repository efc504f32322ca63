#!/usr/bin/env bash
# Install MathJax 3 from the npm registry into .mathjax/ (not committed),
# so the built book renders formulas offline instead of fetching MathJax
# from a CDN. _config.yml serves .mathjax/static as extra static files.
set -euo pipefail
version=3.2.2
dest=.mathjax/static/mathjax
if [ -f "$dest/tex-chtml.js" ] && grep -q "$version" .mathjax/version 2>/dev/null; then
    exit 0
fi
command -v npm >/dev/null 2>&1 || {
    echo "mathjax: npm is needed to install MathJax ($(basename "$0")); install Node.js (apt-get install -y npm)" >&2
    exit 1
}
rm -rf .mathjax
npm install --silent --no-audit --no-fund --prefix .mathjax "mathjax@$version"
mkdir -p "$(dirname "$dest")"
cp -r .mathjax/node_modules/mathjax/es5 "$dest"
echo "$version" > .mathjax/version
echo "mathjax: MathJax $version installed in $dest"
