#!/usr/bin/env bash
# The seed document's workflow on the bundled MNIST model, as far as the
# toolkit implements it so far: inspect the model's user-provided anchors
# (the report the seed shows), then its metadata, a Markdown model card,
# and a full checksum verification.
set -euo pipefail
cd "$(dirname "$0")/.."
popef() { node bin/popef.js "$@"; }

echo '$ popef dump --user-anchors executable.popef   (in fixtures/mnist)'
(cd fixtures/mnist && node ../../bin/popef.js dump --user-anchors executable.popef)
echo
echo '$ popef dump -m fixtures/mnist/executable.popef'
popef dump -m fixtures/mnist/executable.popef
echo
echo '$ popef dump --verify --blobs fixtures/mnist/executable.popef'
popef dump --verify --blobs fixtures/mnist/executable.popef
