"""Sequence regression with an LSTM: predict the next value of a noisy sine wave of random
frequency and phase. ``nn.LSTM`` runs its time loop as one ``scan``, so the training step
(``value_and_grad`` of a ``functional_call`` loss + Adam) is a single ``jit``-compiled graph
with the loop and its reverse kept as loops.

Run: python examples/rnn_sequence.py
"""

import time

import numpy as np

import functorch_core as fc
from functorch_core import nn, optim
from functorch_core.nn import functional as F

SEQ, BATCH, HIDDEN, NOISE = 40, 32, 32, 0.05


class NextValue(nn.Module):
    """LSTM over the sequence, then a linear read-out of every hidden state."""

    def __init__(self, hidden):
        super().__init__()
        self.lstm = nn.LSTM(1, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out)


def batch(rng, n):
    """``n`` noisy sine waves ``(n, SEQ + 1, 1)``; inputs are steps ``0..SEQ-1``, targets
    ``1..SEQ``."""
    freq = rng.uniform(0.1, 0.4, (n, 1))
    phase = rng.uniform(0, 2 * np.pi, (n, 1))
    t = np.arange(SEQ + 1)
    wave = np.sin(freq * t + phase) + NOISE * rng.standard_normal((n, SEQ + 1))
    wave = wave[..., None].astype(np.float32)
    return wave[:, :-1], wave[:, 1:]


def main(steps=400):
    fc.manual_seed(0)
    model = NextValue(HIDDEN)
    params = {k: np.array(v) for k, v in model.named_parameters()}

    def loss(params, x, y):
        return F.mse_loss(fc.functional_call(model, params, (x,)), y)

    opt = optim.adam(lr=1e-2)

    @fc.jit
    def train_step(params, opt_state, x, y):
        value, grads = fc.value_and_grad(loss)(params, x, y)
        params, opt_state = opt.update(grads, opt_state, params)
        return params, opt_state, value

    evaluate = fc.jit(loss)
    x_test, y_test = batch(np.random.default_rng(1), 256)
    persistence = float(np.mean((x_test - y_test) ** 2))
    print(f"held-out MSE of repeating the last value: {persistence:.4f} "
          f"(noise floor {2 * NOISE ** 2:.4f} for it, {NOISE ** 2:.4f} for a perfect model)")
    print(f"held-out MSE before training: {float(evaluate(params, x_test, y_test)):.4f}")

    rng = np.random.default_rng(0)
    opt_state = opt.init(params)
    t0 = time.perf_counter()
    history = []
    for step in range(steps):
        params, opt_state, value = train_step(params, opt_state, *batch(rng, BATCH))
        history.append(float(value))
        if step % 50 == 0 or step == steps - 1:
            print(f"step {step}: mean loss {np.mean(history[-50:]):.4f}")
    print(f"{steps} steps in {time.perf_counter() - t0:.2f} s "
          f"(LSTM hidden {HIDDEN}, sequence {SEQ}, batch {BATCH})")
    final = float(evaluate(params, x_test, y_test))
    print(f"held-out MSE after training: {final:.4f} (repeating the last value: "
          f"{persistence:.4f})")


if __name__ == "__main__":
    main()
