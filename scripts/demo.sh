#!/usr/bin/env bash
# The seed document's workflow on the bundled MNIST model, as far as the
# toolkit implements it so far: inspect the model's user-provided anchors
# (the report the seed shows), scaffold the Triton model repository with
# the seed's names, show what was written, and validate it offline.
set -euo pipefail
cd "$(dirname "$0")/.."
popef() { node bin/popef.js "$@"; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

echo '$ popef dump --user-anchors executable.popef   (in fixtures/mnist)'
(cd fixtures/mnist && node ../../bin/popef.js dump --user-anchors executable.popef)
echo
echo '$ popef scaffold fixtures/mnist/executable.popef --repository models --model mnist --name input=digit_image --name softmax/Softmax:0=output_labels'
(cd "$out" && node "$OLDPWD/bin/popef.js" scaffold "$OLDPWD/fixtures/mnist/executable.popef" --repository models --model mnist \
  --name input=digit_image --name softmax/Softmax:0=output_labels)
echo
echo '$ cat models/mnist/1/name_map.json'
cat "$out/models/mnist/1/name_map.json"
echo '$ cat models/mnist/config.pbtxt'
cat "$out/models/mnist/config.pbtxt"
echo
echo '$ popef validate models'
(cd "$out" && node "$OLDPWD/bin/popef.js" validate models)
