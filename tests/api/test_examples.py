"""Run the nn examples as scripts (each in seconds on the shipped digits data) and check the
figures they print."""

import os
import re
import shutil
import subprocess
import sys

import paths
import pytest

ROOT = paths.ROOT


def run_example(name, timeout=240):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", name)],
                          capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=ROOT)
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def figure(out, pattern):
    m = re.search(pattern, out)
    assert m, f"no line matching {pattern!r} in:\n{out}"
    return [float(g) for g in m.groups()]


def test_cnn_digits_trains_and_round_trips():
    out = run_example("cnn_digits.py")
    assert "checkpoint round trip: state dict and predictions identical" in out
    losses = [float(v) for v in re.findall(r"mean loss ([0-9.]+)", out)]
    assert len(losses) >= 2 and losses[-1] < 0.5 * losses[0], losses
    (acc,) = figure(out, r"test accuracy: ([0-9.]+)")
    assert acc > 0.9, out


def test_ensembling_matches_loop_shared_and_per_model_minibatch():
    out = run_example("ensembling.py")
    (shared,) = figure(out, r"shared minibatch: output \(10, 64, 10\), largest difference "
                            r"from a loop ([0-9.e+-]+)")
    (split,) = figure(out, r"minibatch per model: output \(10, 64, 10\), largest difference "
                           r"from a loop ([0-9.e+-]+)")
    assert max(shared, split) < 1e-5, out


def test_maml_meta_gradient_and_loss_going_down():
    out = run_example("maml.py")
    ad, fd = figure(out, r"autodiff ([0-9.e+-]+), finite differences ([0-9.e+-]+)")
    assert abs(ad - fd) <= 1e-4 * max(1.0, abs(fd)), out
    before, after = figure(out, r"maml: post-adaptation loss ([0-9.]+) -> ([0-9.]+)")
    assert after < 0.75 * before, out


def test_rnn_sequence_lstm_learns_the_sine():
    out = run_example("rnn_sequence.py")
    losses = [float(v) for v in re.findall(r"mean loss ([0-9.]+)", out)]
    assert len(losses) >= 5 and losses[-1] < 0.05 * losses[0], losses
    after, persistence = figure(out, r"after training: ([0-9.]+) \(repeating the last value: "
                                     r"([0-9.]+)\)")
    assert after < 0.5 * persistence, out


def test_data_pipeline_trains_from_tar_shards_and_resumes():
    out = run_example("data_pipeline.py")
    assert "each sample exactly once" in out
    assert re.search(r"the \d+ remaining batches are identical to the uninterrupted run", out)
    losses = [float(v) for v in re.findall(r"epoch \d.*mean loss ([0-9.]+)", out)]
    assert len(losses) == 4 and losses[-1] < 0.5 * losses[0], losses
    (acc,) = figure(out, r"test accuracy: ([0-9.]+)")
    assert acc > 0.9, out


def test_deploy_paths_agree():
    out = run_example("deploy.py")
    (jit_acc,) = figure(out, r"jit \(params as inputs\):\s+test accuracy ([0-9.]+)")
    before, after, frozen_acc = figure(out, r"frozen: (\d+) -> (\d+) equations.*accuracy ([0-9.]+)")
    (loaded_acc,) = figure(out, r"fresh process: test accuracy ([0-9.]+)")
    assert jit_acc > 0.9 and after < before, out
    assert loaded_acc == frozen_acc and abs(frozen_acc - jit_acc) <= 0.01, out
    if "shared library: skipped" not in out:
        (c_acc,) = figure(out, r"shared library from C: test accuracy ([0-9.]+)")
        assert c_acc == frozen_acc, out


def test_neural_tangent_kernel_two_ways_agree():
    out = run_example("neural_tangent_kernel.py")
    assert "ntk (6, 5, 10, 10)" in out, out
    diff, scale = figure(out, r"largest difference between the two: ([0-9.e+-]+) \(kernel "
                              r"scale ([0-9.e+-]+)\)")
    assert scale > 0.1 and diff < 1e-10 * scale, out
    asym, eig = figure(out, r"asymmetry ([0-9.e+-]+), smallest eigenvalue ([0-9.e+-]+)")
    assert asym < 1e-12 and eig > -1e-10, out


def test_per_sample_grads_function_and_module_forms_match_loops():
    out = run_example("per_sample_grads.py")
    (fn_diff,) = figure(out, r"(?m)^largest difference from a per-example loop: ([0-9.e+-]+)")
    (mod_diff,) = figure(out, r"module form: largest difference from a per-example loop: "
                              r"([0-9.e+-]+)")
    assert max(fn_diff, mod_diff) < 1e-5, out
    assert "'0.weight': (64, 32, 64)" in out, out


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None,
                    reason="needs cc and make")
def test_deploy_c_classifies_from_c_as_python_does(tmp_path):
    """examples/deploy_c: the digits CNN compiled to a .so and called from a C program."""
    proc = subprocess.run(["make", "-s", "-C", os.path.join(ROOT, "examples", "deploy_c"),
                           "run", f"PYTHON={sys.executable}", f"BUILD={tmp_path}"],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (py,) = figure(proc.stdout, r"Python: test accuracy ([0-9.]+)")
    (c,) = figure(proc.stdout, r"C: test accuracy ([0-9.]+)")
    assert c == py and c > 0.9, proc.stdout
