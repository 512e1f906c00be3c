"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and ``RNNCell``, ``LSTMCell``, ``GRUCell``.

PyTorch's constructor signatures, parameter names, shapes, gate order and default
initialisation, so a converted PyTorch ``state_dict`` gives the same outputs. The time
loop is one :func:`functorch_core.scan` per layer and direction (a single traced step,
kept as a loop by the compiled backends), so ``jit``, ``grad`` and ``vmap`` go through it.
The input projection ``x @ W_ih.T + b_ih`` of a whole sequence is one matrix product
outside the loop; the step only multiplies by ``W_hh``.
"""

from __future__ import annotations

import math
import numbers
import warnings

import functorch_core.numpy as fnp

from ..lax.control_flow import scan
from ..numpy.internal import result_type
from . import functional as F
from ._init_draw import uniform_parameter
from .module import Module, shape_of

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# --- one time step, shared by the sequence layers and the cells ------------------------------
# ``gi`` is the input projection ``x @ W_ih.T + b_ih`` (for RNN and LSTM with ``b_hh``
# already added), so a step only multiplies the hidden state.

def _tanh_step(gi, h, w_hh, b_hh):
    return fnp.tanh(gi + F.linear(h, w_hh, b_hh))


def _relu_step(gi, h, w_hh, b_hh):
    return F.relu(gi + F.linear(h, w_hh, b_hh))


def _lstm_step(gi, h, c, w_hh, b_hh, w_hr):
    gates = gi + F.linear(h, w_hh, b_hh)
    n = shape_of(c)[-1]
    i, f, g, o = (gates[..., k * n:(k + 1) * n] for k in range(4))
    c = F.sigmoid(f) * c + F.sigmoid(i) * fnp.tanh(g)
    h = F.sigmoid(o) * fnp.tanh(c)
    return (h if w_hr is None else F.linear(h, w_hr)), c


def _gru_step(gi, h, w_hh, b_hh):
    gh = F.linear(h, w_hh, b_hh)
    n = shape_of(h)[-1]
    r = F.sigmoid(gi[..., :n] + gh[..., :n])
    z = F.sigmoid(gi[..., n:2 * n] + gh[..., n:2 * n])
    new = fnp.tanh(gi[..., 2 * n:] + r * gh[..., 2 * n:])
    return new + z * (h - new)


_SIMPLE_STEPS = {"RNN_TANH": _tanh_step, "RNN_RELU": _relu_step, "GRU": _gru_step}


def _check_size(name, value, positive=True):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or \
            (value <= 0 if positive else value < 0):
        kind = "positive" if positive else "non-negative"
        raise ValueError(f"{name} should be a {kind} integer value but got {value!r}")
    return int(value)


# --- sequence layers ---------------------------------------------------------------------------

def _input_shape(module, input, unbatched):
    """``input``'s shape; raises unless its rank is ``unbatched`` or one more."""
    shape = tuple(shape_of(input))
    if len(shape) not in (unbatched, unbatched + 1):
        raise ValueError(f"{module._where()}: Expected input to be {unbatched}D or "
                         f"{unbatched + 1}D, got {len(shape)}D instead (input of shape {shape})")
    return shape


def _state_pair(module, hx, names):
    """An LSTM's ``hx`` as a tuple ``(h, c)`` (each None where ``hx`` is None); a TypeError
    naming ``module`` and the pair's ``names`` where it is not a pair."""
    if hx is None:
        return (None, None)
    if not isinstance(hx, tuple | list) or len(hx) != 2:
        raise TypeError(f"{module._where()}: hx must be a pair ({names}), got "
                        f"{type(hx).__name__}")
    return tuple(hx)


class RNNBase(Module):
    """Common part of :class:`RNN`, :class:`LSTM` and :class:`GRU` (``mode`` is one of
    ``'RNN_TANH'``, ``'RNN_RELU'``, ``'LSTM'``, ``'GRU'``)."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        name = "LSTM" if mode == "LSTM" else "GRU" if mode == "GRU" else "RNN"
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Number) or \
                not 0 <= dropout <= 1:
            raise ValueError(f"{name}: dropout should be a number in range [0, 1] representing "
                             f"the probability of an element being zeroed, got {dropout!r}")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"{name}: dropout option adds dropout after all but last recurrent "
                          f"layer, so non-zero dropout expects num_layers greater than 1, but "
                          f"got dropout={dropout} and num_layers={num_layers}", stacklevel=3)
        self.mode = mode
        self.input_size = _check_size(f"{name}: input_size", input_size, positive=False)
        self.hidden_size = _check_size(f"{name}: hidden_size", hidden_size)
        self.num_layers = _check_size(f"{name}: num_layers", num_layers)
        self.proj_size = _check_size(f"{name}: proj_size", proj_size, positive=False)
        if self.proj_size and mode != "LSTM":
            raise ValueError(f"{name}: proj_size argument is only supported for LSTM, not RNN "
                             "or GRU")
        if self.proj_size >= self.hidden_size:
            raise ValueError(f"{name}: proj_size ({self.proj_size}) has to be smaller than "
                             f"hidden_size ({self.hidden_size})")
        self.bias, self.batch_first = bool(bias), bool(batch_first)
        self.dropout, self.bidirectional = float(dropout), bool(bidirectional)
        directions = 2 if self.bidirectional else 1
        gate_size = _GATES[mode] * self.hidden_size
        real_hidden = self.proj_size or self.hidden_size
        bound = 1.0 / math.sqrt(self.hidden_size)
        # registration order is PyTorch's (layer, direction, ih/hh/biases/hr): the
        # state_dict keys come out in its order and the draws follow it
        for layer in range(self.num_layers):
            layer_input = self.input_size if layer == 0 else real_hidden * directions
            for suffix in ("", "_reverse")[:directions]:
                shapes = [("weight_ih", (gate_size, layer_input)),
                          ("weight_hh", (gate_size, real_hidden))]
                if self.bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if self.proj_size:
                    shapes.append(("weight_hr", (self.proj_size, self.hidden_size)))
                for pname, shape in shapes:
                    setattr(self, f"{pname}_l{layer}{suffix}",
                            uniform_parameter(shape, bound, dtype))

    def flatten_parameters(self):
        """Does nothing, as in PyTorch without cuDNN (kept so PyTorch code runs as is)."""

    def _weights(self, layer, suffix):
        p = self._parameters
        get = lambda n: p.get(f"{n}_l{layer}{suffix}")   # noqa: E731
        return (get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"),
                get("weight_hr"))

    def _where(self):
        return f"{self._get_name()}({self.extra_repr()})"

    def _check_input(self, input):
        shape = _input_shape(self, input, 2)
        if shape[-1] != self.input_size:
            raise RuntimeError(f"{self._where()}: input.size(-1) must be equal to input_size. "
                               f"Expected {self.input_size}, got {shape[-1]} (input of shape "
                               f"{shape})")
        return len(shape) == 3

    def _check_hidden(self, h, expected, what):
        if tuple(shape_of(h)) != expected:
            raise RuntimeError(f"{self._where()}: Expected {what} size {expected}, got "
                               f"{tuple(shape_of(h))}")

    def _run(self, input, hx):
        """``input`` as given; ``hx`` a tuple of initial states (``None`` entries: zeros).
        Returns ``(output, final states)``, each state of shape ``(L * D, B, size)``."""
        batched = self._check_input(input)
        x = input
        if batched and self.batch_first:
            x = fnp.swapaxes(x, 0, 1)
        if not batched:
            x = fnp.expand_dims(x, 1)
        directions = 2 if self.bidirectional else 1
        batch = shape_of(x)[1]
        sizes = [self.proj_size or self.hidden_size, self.hidden_size][:len(hx)]
        dtype = result_type(x, self.weight_ih_l0)
        names = ["hidden[0]", "hidden[1]"] if len(hx) == 2 else ["hidden"]
        states = []
        for h, size, what in zip(hx, sizes, names, strict=True):
            expected = (self.num_layers * directions, batch, size)
            if h is None:
                states.append(fnp.zeros(expected, dtype))
                continue
            if not batched:
                self._check_hidden(h, expected[:1] + expected[2:], what)
                h = fnp.expand_dims(h, 1)
            self._check_hidden(h, expected, what)
            states.append(fnp.astype(h, dtype))
        finals = [[] for _ in states]
        for layer in range(self.num_layers):
            outs = []
            for d, suffix in enumerate(("", "_reverse")[:directions]):
                k = layer * directions + d
                out, last = self._direction(x, [s[k] for s in states], layer, suffix,
                                            reverse=d == 1)
                outs.append(out)
                for f, v in zip(finals, last, strict=True):
                    f.append(v)
            x = outs[0] if directions == 1 else fnp.concatenate(outs, axis=-1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        finals = [fnp.stack(f, axis=0) for f in finals]
        if not batched:
            x = fnp.squeeze(x, 1)
            finals = [fnp.squeeze(f, 1) for f in finals]
        elif self.batch_first:
            x = fnp.swapaxes(x, 0, 1)
        return x, finals

    def _direction(self, x, init, layer, suffix, reverse):
        """One layer in one direction over ``x`` ``(T, B, F)``: ``(ys, final carry)``."""
        w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, suffix)
        gi = F.linear(x, w_ih, b_ih)
        if self.mode == "LSTM":
            if b_hh is not None:
                gi = gi + b_hh

            def lstm_body(carry, g):
                h, c = _lstm_step(g, *carry, w_hh, None, w_hr)
                return (h, c), h
            carry, ys = scan(lstm_body, tuple(init), gi, reverse=reverse)
            return ys, list(carry)
        step = _SIMPLE_STEPS[self.mode]
        if self.mode != "GRU" and b_hh is not None:
            gi, b_hh = gi + b_hh, None

        def body(h, g):
            h = step(g, h, w_hh, b_hh)
            return h, h
        h, ys = scan(body, init[0], gi, reverse=reverse)
        return ys, [h]

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(RNNBase):
    """Elman RNN: ``h_t = act(x_t @ W_ih.T + b_ih + h_{t-1} @ W_hh.T + b_hh)`` per layer.

    Args:
        input_size (int): features of the input ``x``.
        hidden_size (int): features of the hidden state ``h``.
        num_layers (int): stacked layers, each fed the previous one's output. Default ``1``.
        nonlinearity (str): ``'tanh'`` or ``'relu'``. Default ``'tanh'``.
        bias (bool): whether to use ``b_ih`` and ``b_hh``. Default ``True``.
        batch_first (bool): batched input and output are ``(batch, seq, feature)``
            instead of ``(seq, batch, feature)``. Default ``False``.
        dropout (float): dropout on the outputs of every layer but the last, in training
            mode (drawn from the global generator). Default ``0``.
        bidirectional (bool): add a layer running backwards in time; outputs are
            concatenated on the feature axis. Default ``False``.
        device: accepted and ignored.
        dtype: parameter dtype. Default ``float32``.

    Parameters ``weight_ih_l{k}`` ``(hidden_size, in)``, ``weight_hh_l{k}``
    ``(hidden_size, hidden_size)``, ``bias_ih_l{k}``, ``bias_hh_l{k}`` (``_reverse``
    suffix for the backward direction), all drawn from ``U(-1/sqrt(hidden_size),
    1/sqrt(hidden_size))``.

    Call: ``rnn(input, h_0=None) -> (output, h_n)`` with ``input`` ``(L, N, H_in)``
    (or ``(L, H_in)`` unbatched), ``h_0`` ``(D * num_layers, N, hidden_size)`` (default
    zeros), ``output`` ``(L, N, D * hidden_size)``, ``h_n`` like ``h_0``.

    Example::

        >>> rnn = RNN(10, 20, 2)
        >>> out, h = rnn(np.ones((5, 3, 10), np.float32))
        >>> out.shape, h.shape
        ((5, 3, 20), (2, 3, 20))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' "
                             "or 'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        out, (h,) = self._run(input, (hx,))
        return out, h


class GRU(RNNBase):
    """Gated recurrent unit, PyTorch's formulation (gate order ``r, z, n``)::

        r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)
        z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
        n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
        h' = (1 - z) * n + z * h

    Arguments, call and shapes as :class:`RNN` (no ``nonlinearity``); ``weight_ih_l{k}``
    is ``(3 * hidden_size, in)``, ``weight_hh_l{k}`` ``(3 * hidden_size, hidden_size)``.

    Example::

        >>> out, h = GRU(4, 8, batch_first=True)(np.ones((2, 7, 4), np.float32))
        >>> out.shape, h.shape
        ((2, 7, 8), (1, 2, 8))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        out, (h,) = self._run(input, (hx,))
        return out, h


class LSTM(RNNBase):
    """Long short-term memory, PyTorch's formulation (gate order ``i, f, g, o``)::

        i, f, o = sigmoid(...), g = tanh(...)      # from W_ih x + b_ih + W_hh h + b_hh
        c' = f * c + i * g
        h' = o * tanh(c')                           # then h' @ W_hr.T when proj_size > 0

    Arguments as :class:`RNN` (no ``nonlinearity``), plus ``proj_size`` (int, default
    ``0``): when positive, ``h`` is projected to ``proj_size`` features by
    ``weight_hr_l{k}`` ``(proj_size, hidden_size)``. ``weight_ih_l{k}`` is
    ``(4 * hidden_size, in)``, ``weight_hh_l{k}`` ``(4 * hidden_size, proj_size or
    hidden_size)``.

    Call: ``lstm(input, (h_0, c_0)=None) -> (output, (h_n, c_n))``; ``h`` has
    ``proj_size or hidden_size`` features, ``c`` ``hidden_size``.

    Example::

        >>> lstm = LSTM(4, 8, num_layers=2, bidirectional=True)
        >>> out, (h, c) = lstm(np.ones((5, 3, 4), np.float32))
        >>> out.shape, h.shape, c.shape
        ((5, 3, 16), (4, 3, 8), (4, 3, 8))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        hx = _state_pair(self, hx, "h_0, c_0")
        out, (h, c) = self._run(input, hx)
        return out, (h, c)


# --- cells --------------------------------------------------------------------------------

class _CellBase(Module):
    def __init__(self, input_size, hidden_size, bias, gates, dtype):
        super().__init__()
        name = type(self).__name__
        self.input_size = _check_size(f"{name}: input_size", input_size, positive=False)
        self.hidden_size = _check_size(f"{name}: hidden_size", hidden_size)
        self.bias = bool(bias)
        bound = 1.0 / math.sqrt(self.hidden_size)
        g = gates * self.hidden_size
        self.weight_ih = uniform_parameter((g, self.input_size), bound, dtype)
        self.weight_hh = uniform_parameter((g, self.hidden_size), bound, dtype)
        if self.bias:
            self.bias_ih = uniform_parameter((g,), bound, dtype)
            self.bias_hh = uniform_parameter((g,), bound, dtype)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)

    def _where(self):
        return f"{self._get_name()}({self.extra_repr()})"

    def _prepare(self, input, hx, names):
        """Checks; returns ``(batched, x (B, F), states (B, H) or None)``."""
        shape = _input_shape(self, input, 1)
        if shape[-1] != self.input_size:
            raise RuntimeError(f"{self._where()}: input has inconsistent input_size: got "
                               f"{shape[-1]}, expected {self.input_size}")
        batched = len(shape) == 2
        x = input if batched else fnp.expand_dims(input, 0)
        batch = shape_of(x)[0]
        dtype = result_type(x, self.weight_ih)
        states = []
        for h, what in zip(hx, names, strict=True):
            if h is None:
                states.append(fnp.zeros((batch, self.hidden_size), dtype))
                continue
            hs = tuple(shape_of(h))
            if len(hs) != len(shape):
                raise ValueError(f"{self._where()}: Expected {what} to be "
                                 f"{len(shape)}D for {len(shape)}D input, got {len(hs)}D "
                                 f"(input {shape}, {what} {hs})")
            h = h if batched else fnp.expand_dims(h, 0)
            if shape_of(h)[0] != batch:
                raise RuntimeError(f"{self._where()}: Input batch size {batch} doesn't match "
                                   f"{what} batch size {shape_of(h)[0]}")
            if shape_of(h)[1] != self.hidden_size:
                raise RuntimeError(f"{self._where()}: {what} has inconsistent hidden_size: "
                                   f"got {shape_of(h)[1]}, expected {self.hidden_size}")
            states.append(fnp.astype(h, dtype))
        return batched, x, states

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            s += ", bias=False"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class RNNCell(_CellBase):
    """One step of :class:`RNN`: ``h' = act(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh)``.

    Args:
        input_size (int): features of ``x``.
        hidden_size (int): features of ``h``.
        bias (bool): whether to use ``bias_ih`` and ``bias_hh``. Default ``True``.
        nonlinearity (str): ``'tanh'`` or ``'relu'``. Default ``'tanh'``.
        device: accepted and ignored.
        dtype: parameter dtype. Default ``float32``.

    Call: ``cell(input, hx=None) -> h'`` with ``input`` ``(N, input_size)`` or
    ``(input_size,)``, ``hx`` ``(N, hidden_size)`` (default zeros).

    Example::

        >>> RNNCell(3, 5)(np.ones((2, 3), np.float32)).shape
        (2, 5)
    """

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        batched, x, (h,) = self._prepare(input, (hx,), ("hidden",))
        step = _tanh_step if self.nonlinearity == "tanh" else _relu_step
        h = step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh)
        return h if batched else fnp.squeeze(h, 0)


class GRUCell(_CellBase):
    """One step of :class:`GRU` (gate order ``r, z, n``).

    Arguments and call as :class:`RNNCell` (no ``nonlinearity``); ``weight_ih`` is
    ``(3 * hidden_size, input_size)``.

    Example::

        >>> GRUCell(3, 5)(np.ones(3, np.float32)).shape
        (5,)
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, dtype)

    def forward(self, input, hx=None):
        batched, x, (h,) = self._prepare(input, (hx,), ("hidden",))
        h = _gru_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                      self.bias_hh)
        return h if batched else fnp.squeeze(h, 0)


class LSTMCell(_CellBase):
    """One step of :class:`LSTM` (gate order ``i, f, g, o``).

    Arguments as :class:`RNNCell` (no ``nonlinearity``); ``weight_ih`` is
    ``(4 * hidden_size, input_size)``. Call: ``cell(input, (h, c)=None) -> (h', c')``.

    Example::

        >>> h, c = LSTMCell(3, 5)(np.ones((2, 3), np.float32))
        >>> h.shape, c.shape
        ((2, 5), (2, 5))
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, dtype)

    def forward(self, input, hx=None):
        hx = _state_pair(self, hx, "h, c")
        batched, x, (h, c) = self._prepare(input, hx, ("hx[0]", "hx[1]"))
        h, c = _lstm_step(F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh,
                          self.bias_hh, None)
        if not batched:
            h, c = fnp.squeeze(h, 0), fnp.squeeze(c, 0)
        return h, c
