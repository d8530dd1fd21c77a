"""The walkthrough's client, as a Triton user writes it: send each image of
img/ to the mnist model and print the predicted digit. Written here after
the seed document's description (tritonclient, input digit_image FP32
[1, 1, 28, 28], output output_labels, argmax); runs unchanged against
popef serve or a real Triton server.

usage: mnist_client.py URL IMG_DIR [--protocol grpc|http] [--no-binary]
"""
import argparse
import os

import numpy as np
from PIL import Image


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("img")
    parser.add_argument("--protocol", choices=["grpc", "http"], default="grpc")
    parser.add_argument("--no-binary", action="store_true", help="HTTP: JSON tensors instead of binary data")
    parser.add_argument("--model", default="mnist")
    args = parser.parse_args()

    if args.protocol == "grpc":
        import tritonclient.grpc as client_module
    else:
        import tritonclient.http as client_module
    client = client_module.InferenceServerClient(url=args.url)
    if not client.is_server_ready():
        raise SystemExit("server is not ready")

    binary = not args.no_binary
    for name in sorted(os.listdir(args.img)):
        if not name.endswith(".png"):
            continue
        # Pre-processing: grayscale, scaled to [0, 1], in the model's NCHW layout.
        image = Image.open(os.path.join(args.img, name)).convert("L")
        data = (np.asarray(image, dtype=np.float32) / 255.0).reshape(1, 1, 28, 28)

        inputs = [client_module.InferInput("digit_image", [1, 1, 28, 28], "FP32")]
        outputs = []
        if args.protocol == "grpc":
            inputs[0].set_data_from_numpy(data)
            outputs.append(client_module.InferRequestedOutput("output_labels"))
        else:
            inputs[0].set_data_from_numpy(data, binary_data=binary)
            outputs.append(client_module.InferRequestedOutput("output_labels", binary_data=binary))

        result = client.infer(args.model, inputs, outputs=outputs)
        scores = result.as_numpy("output_labels")
        print(f'Predicted digit for file "{name}": {int(np.argmax(scores))}')


if __name__ == "__main__":
    main()
