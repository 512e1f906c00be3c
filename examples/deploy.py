"""Deploy a digits classifier: train an MLP with BatchNorm, freeze it (BatchNorm folded into
the first Linear), export it, save it, load it in a fresh Python process that never sees
this file, and compile it to a shared library called from a generated C program. Each path
prints its test accuracy; they agree.

Run: python examples/deploy.py
"""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import cnn_digits
import numpy as np
from _digits import load_digits

import functorch_core as fc
from functorch_core import nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def train(x_train, y_train, epochs=6):
    fc.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 10))
    cnn_digits.train(model, x_train, y_train, epochs)
    return model.eval()


C_MAIN = """
#include <stdio.h>
#include <stdint.h>
#include "digits.h"
int main(int argc, char **argv) {{
    static float x[{n} * 64];
    static int64_t pred[{n}];
    FILE *f = fopen(argv[1], "rb");
    if (!f || fread(x, sizeof x, 1, f) != 1) return 2;
    fclose(f);
    const void *ins[] = {{x}};
    void *outs[] = {{pred}};
    int rc = digits(ins, outs);
    if (rc) return 10 + rc;
    f = fopen(argv[2], "wb");
    fwrite(pred, sizeof pred, 1, f);
    fclose(f);
    return 0;
}}
"""


def main():
    x_train, y_train, x_test, y_test = load_digits()
    model = train(x_train, y_train)

    def predict(m, x):
        return np.argmax(m(x), axis=1)
    pred_jit = fc.jit(predict)(model, x_test)
    print(f"jit (params as inputs):   test accuracy {np.mean(pred_jit == y_test):.4f}")

    frozen = fc.freeze(predict, model)
    plain, _ = frozen.graph_for(x_test, folded=False)
    folded, _ = frozen.graph_for(x_test)
    pred_frozen = frozen(x_test)
    print(f"frozen: {len(plain.eqns)} -> {len(folded.eqns)} equations (BatchNorm folded), "
          f"test accuracy {np.mean(pred_frozen == y_test):.4f}")

    exported = fc.export(frozen, x_test)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "digits.fcx")
        exported.save(path)
        np.save(os.path.join(d, "x.npy"), x_test)
        script = textwrap.dedent(f"""
            import sys
            import numpy as np
            import functorch_core as fc
            pred = fc.load_exported({path!r})(np.load({os.path.join(d, 'x.npy')!r}))
            assert "deploy" not in sys.modules     # this script is not imported there
            np.save({os.path.join(d, 'pred.npy')!r}, pred)
        """)
        env = {**os.environ, "PYTHONPATH": ROOT}
        subprocess.run([sys.executable, "-c", script], check=True, env=env, cwd=d)
        pred_loaded = np.load(os.path.join(d, "pred.npy"))
        print(f"export loaded in a fresh process: test accuracy "
              f"{np.mean(pred_loaded == y_test):.4f} ({os.path.getsize(path)} bytes)")

        try:
            if shutil.which("cc") is None:
                raise RuntimeError("no C compiler")
            exported.compile_library(os.path.join(d, "libdigits.so"), "digits",
                                     header=os.path.join(d, "digits.h"))
        except (RuntimeError, NotImplementedError) as err:     # no cc, no OpenBLAS
            print(f"shared library: skipped ({err})")
        else:
            with open(os.path.join(d, "main.c"), "w") as f:
                f.write(C_MAIN.format(n=len(x_test)))
            subprocess.run(["cc", "-O1", "-o", "main", "main.c", "-L.", "-l:libdigits.so",
                            "-Wl,-rpath,$ORIGIN"], cwd=d, check=True)
            np.ascontiguousarray(x_test).tofile(os.path.join(d, "x.bin"))
            subprocess.run(["./main", "x.bin", "pred.bin"], cwd=d, check=True)
            pred_c = np.fromfile(os.path.join(d, "pred.bin"), np.int64)
            print(f"shared library from C: test accuracy {np.mean(pred_c == y_test):.4f}")
            assert np.array_equal(pred_c, pred_frozen), "the C path predicts differently"
    assert np.array_equal(pred_loaded, pred_frozen), "the loaded export predicts differently"
    agree = np.mean(pred_frozen == pred_jit)
    print(f"frozen and jit predictions agree on {agree:.4f} of the test set")


if __name__ == "__main__":
    main()
