"""Build the C deployment example's inputs: train the digits CNN (examples/cnn_digits.py's
model, a few epochs), freeze it, compile it to ``libdigits.so`` + ``digits.h`` for the whole
test set as one batch, and write the test set to ``digits.bin`` (int64 count, then the
float32 pixels (n, 1, 8, 8), then the int64 labels). Prints the Python path's accuracy.

Run: python build.py OUTDIR   (the Makefile does: ``make run``)
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from _digits import load_digits  # noqa: E402
from cnn_digits import make_model, train  # noqa: E402

import functorch_core as fc  # noqa: E402


def main(out):
    os.makedirs(out, exist_ok=True)
    x_train, y_train, x_test, y_test = load_digits()
    x_train, x_test = x_train.reshape(-1, 1, 8, 8), x_test.reshape(-1, 1, 8, 8)
    fc.manual_seed(0)
    model = make_model()
    train(model, x_train, y_train, epochs=4)
    model.eval()
    exported = fc.export(fc.freeze(model), x_test)
    exported.compile_library(os.path.join(out, "libdigits.so"), "digits",
                             header=os.path.join(out, "digits.h"))
    with open(os.path.join(out, "digits.bin"), "wb") as f:
        f.write(np.int64(len(x_test)).tobytes())
        f.write(np.ascontiguousarray(x_test, np.float32).tobytes())
        f.write(np.ascontiguousarray(y_test, np.int64).tobytes())
    pred = np.argmax(exported(x_test), axis=1)
    print(f"Python: test accuracy {np.mean(pred == y_test):.4f} "
          f"({int(np.sum(pred == y_test))}/{len(y_test)})")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "build"))
