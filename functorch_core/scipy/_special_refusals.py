"""Why a ufunc of ``scipy.special`` has no traced version yet: the reason a user reads when
calling it on a traced array (``scipy.special.yv is not supported on traced arrays;
<reason>``). Every one of them can be traced once built: none is refused by nature.
tests/numpy/test_coverage.py checks that every ufunc of scipy.special is supported by
:mod:`functorch_core.scipy.special` or named here.
"""

from __future__ import annotations


def _family(reason, names):
    return {name: f"not implemented yet (to be built: {reason})" for name in names.split()}


NOT_YET = {
    **_family("a composition of NumPy functions", "cbrt exp2 exp10 expm1 log1p cosdg sindg "
              "tandg cotdg cosm1 radian round exprel powm1 log_expit boxcox boxcox1p "
              "inv_boxcox inv_boxcox1p huber pseudo_huber agm binom poch"),
    **_family("the exponential, sine, cosine and hyperbolic integrals", "exp1 expi expn "
              "sici shichi"),
    **_family("Bessel, Hankel, Kelvin and Struve functions beyond jv/yn/iv/kv", "yv yve jve "
              "kn k0e k1e hankel1 hankel1e hankel2 hankel2e bei beip ber berp kei keip ker "
              "kerp kelvin struve modstruve it2i0k0 it2j0y0 it2struve0 iti0k0 itj0y0 "
              "itmodstruve0 itstruve0 besselpoly airy airye itairy"),
    **_family("elliptic functions and integrals", "ellipe ellipeinc ellipj ellipk ellipkinc "
              "ellipkm1 elliprc elliprd elliprf elliprg elliprj"),
    **_family("orthogonal polynomials by their recurrences", "eval_chebyc eval_chebys "
              "eval_chebyt eval_chebyu eval_gegenbauer eval_genlaguerre eval_hermite "
              "eval_hermitenorm eval_jacobi eval_laguerre eval_legendre eval_sh_chebyt "
              "eval_sh_chebyu eval_sh_jacobi eval_sh_legendre lpmv"),
    **_family("hypergeometric functions", "hyp0f1 hyp1f1 hyp2f1 hyperu"),
    **_family("distribution functions and their inverses over the incomplete beta and "
              "gamma functions", "bdtr bdtrc bdtri bdtrik bdtrin betaincc betainccinv "
              "betaincinv btdtria btdtrib chdtr chdtrc chdtri chdtriv chndtr chndtridf "
              "chndtrinc chndtrix fdtr fdtrc fdtri fdtridfd gammainccinv gammaincinv gdtr "
              "gdtrc gdtria gdtrib gdtrix nbdtr nbdtrc nbdtri nbdtrik nbdtrin ncfdtr ncfdtri "
              "ncfdtridfd ncfdtridfn ncfdtrinc nctdtr nctdtridf nctdtrinc nctdtrit ndtri_exp "
              "nrdtrimn nrdtrisd pdtr pdtrc pdtri pdtrik stdtr stdtridf stdtrit tklmbda "
              "kolmogi kolmogorov smirnov smirnovi owens_t"),
    **_family("Mathieu and spheroidal wave functions", "mathieu_a mathieu_b mathieu_cem "
              "mathieu_modcem1 mathieu_modcem2 mathieu_modsem1 mathieu_modsem2 mathieu_sem "
              "obl_ang1 obl_ang1_cv obl_cv obl_rad1 obl_rad1_cv obl_rad2 obl_rad2_cv "
              "pro_ang1 pro_ang1_cv pro_cv pro_rad1 pro_rad1_cv pro_rad2 pro_rad2_cv"),
    **_family("parabolic cylinder functions", "pbdv pbvv pbwa"),
    **_family("Fresnel, Dawson and Faddeeva-based functions", "fresnel modfresnelm "
              "modfresnelp dawsn erfi wofz voigt_profile"),
    **_family("Wright and Lambert-type functions", "wright_bessel log_wright_bessel "
              "wrightomega"),
    **_family("the Riemann zeta function minus one", "zetac"),
}

__all__ = ["NOT_YET"]
