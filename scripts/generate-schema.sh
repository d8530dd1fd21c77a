#!/usr/bin/env bash
# Regenerates src/schema/generated/ from schemas/popef.fbs with pinned flags.
# The output is committed; test/schema/schema-drift.test.ts fails when it
# no longer matches what this script produces. Never edit the output by hand.
#
# Pinned: flatc 2.0.8 (Debian bookworm's flatbuffers-compiler), flags
# "--ts". flatc 2.0.8 writes extensionless
# relative imports, which Node's ESM loader cannot resolve, so the one
# post-processing step appends ".js" to every relative import specifier.
set -euo pipefail
want="2.0.8"
out="${1:-src/schema/generated}"
root="$(cd "$(dirname "$0")/.." && pwd)"
have="$(flatc --version 2>/dev/null | awk '{print $3}')" || true
if [ "$have" != "$want" ]; then
  echo "generate-schema: flatc $want is required (found: ${have:-none}); install Debian's flatbuffers-compiler" >&2
  exit 2
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
flatc --ts -o "$tmp" "$root/schemas/popef.fbs"
# Relative imports: add the .js extension that ESM needs.
find "$tmp" -name '*.ts' -print0 | xargs -0 sed -i -E "s#(from '\\.{1,2}/[^']*)';#\\1.js';#"
rm -rf "$out"
mkdir -p "$out"
cp -R "$tmp"/. "$out"/
