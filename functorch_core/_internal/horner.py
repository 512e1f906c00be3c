"""Horner's rule on traced (or concrete) values, shared by the composed special functions."""


def horner(coeffs, x):
    """``coeffs[0] x^(n-1) + ... + coeffs[-1]``: the coefficients highest first."""
    out = coeffs[0]
    for c in coeffs[1:]:
        out = out * x + c
    return out
