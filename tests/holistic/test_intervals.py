"""holistic.stats.intervals: Wilson, normal and propagated intervals against hand-worked values.

z = Z95 = 1.959963984540054, z^2 = 3.8414588206941254.
Wilson: centre = (p + z^2/2n) / (1 + z^2/n), half = z sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from holistic.stats.intervals import Z95, mean_of_means, mean_of_parts, mean_var, normal, wilson

Z2 = Z95 * Z95


def test_z95_is_the_two_sided_95_percent_normal_quantile():
    # Phi(1.959963984540054) = 0.975: erf(z / sqrt 2) = 0.95.
    assert math.erf(Z95 / math.sqrt(2)) == pytest.approx(0.95, abs=1e-15)


def test_wilson_none_correct():
    # p = 0: centre = (z^2/2n)/(1 + z^2/n), half = z (z/2n)/(1 + z^2/n) = centre, so
    # lower = 0 and upper = 2 centre = (z^2/n)/(1 + z^2/n) = z^2/(n + z^2) = 3.84146/13.84146 = 0.2775328.
    lo, hi = wilson(0, 10)
    assert lo == 0.0  # exactly: computed as centre - half it is rounding noise (2.776e-17)
    assert hi == pytest.approx(Z2 / (10 + Z2), abs=1e-9)
    assert hi == pytest.approx(0.2775327999, abs=1e-9)


def test_wilson_all_correct():
    # p = 1, mirror image: lower = n/(n + z^2) = 10/13.84146 = 0.7224672, upper = 1.
    lo, hi = wilson(10, 10)
    assert lo == pytest.approx(10 / (10 + Z2), abs=1e-9)
    assert lo == pytest.approx(0.7224672001, abs=1e-9)
    assert hi == 1.0


def test_wilson_half():
    # p = 0.5, n = 10: centre = 0.5 (symmetric); denom = 1 + z^2/10 = 1.38414588;
    # half = z sqrt(0.025 + z^2/400) / denom = 1.95996 * sqrt(0.0346036) / 1.38414588 = 0.2634069
    # -> [0.2365931, 0.7634069].
    half = Z95 * math.sqrt(0.25 / 10 + Z2 / 400) / (1 + Z2 / 10)
    lo, hi = wilson(5, 10)
    assert (lo, hi) == pytest.approx((0.5 - half, 0.5 + half), abs=1e-9)
    assert (lo, hi) == pytest.approx((0.2365930905, 0.7634069095), abs=1e-9)


def test_wilson_asymmetric_and_inside_unit_interval():
    # k = 1, n = 4: p = 0.25, denom = 1 + z^2/4 = 1.96036471; centre = (0.25 + z^2/8)/denom = 0.3724727;
    # half = z sqrt(0.1875/4 + z^2/64)/denom = 1.95996 sqrt(0.1068978)/1.96036 = 0.3268854.
    denom = 1 + Z2 / 4
    centre = (0.25 + Z2 / 8) / denom
    half = Z95 * math.sqrt(0.25 * 0.75 / 4 + Z2 / 64) / denom
    lo, hi = wilson(1, 4)
    assert (lo, hi) == pytest.approx((centre - half, centre + half), abs=1e-12)
    assert (lo, hi) == pytest.approx((0.0455873, 0.6993581), abs=1e-6)
    assert 0.0 < lo < 0.25 < hi < 1.0
    # the Wilson centre is pulled toward 1/2, unlike the Wald interval.
    assert (lo + hi) / 2 > 0.25


def test_wilson_without_samples_is_the_whole_unit_interval():
    assert wilson(0, 0) == (0.0, 1.0)
    assert wilson(0, -1) == (0.0, 1.0)


def test_wilson_narrows_with_n():
    widths = [wilson(n / 2, n)[1] - wilson(n / 2, n)[0] for n in (10, 100, 1000)]
    assert widths[0] > widths[1] > widths[2]


def test_mean_var_matches_numpy():
    data = [1.0, 2.0, 3.0, 4.0]
    # n 4, sum 10, sumsq 30: mean 2.5, sample var (30 - 4 * 6.25)/3 = 5/3, variance of the mean 5/12.
    m, v = mean_var(4, 10.0, 30.0)
    assert m == 2.5
    assert v == pytest.approx(5 / 12, abs=1e-15)
    assert v == pytest.approx(float(np.var(data, ddof=1)) / 4, abs=1e-15)


def test_mean_var_below_two_samples_is_infinite():
    assert mean_var(1, 3.0, 9.0) == (3.0, math.inf)


def test_mean_var_never_negative():
    # three equal values 0.1: sumsq - n mean^2 may come out a hair below 0 in floating point; clipped to 0.
    m, v = mean_var(3, 0.1 * 3, 0.1 * 0.1 * 3)
    assert m == pytest.approx(0.1, abs=1e-15)
    assert v == pytest.approx(0.0, abs=1e-18)
    assert v >= 0.0


def test_normal_interval():
    # data 1, 2, 3, 4: mean 2.5, variance of the mean 5/12, half = z sqrt(5/12) = 1.2651513 -> [1.2348487, 3.7651513].
    lo, hi = normal(4, 10.0, 30.0)
    assert (lo, hi) == pytest.approx((2.5 - Z95 * math.sqrt(5 / 12), 2.5 + Z95 * math.sqrt(5 / 12)), abs=1e-12)
    assert (lo, hi) == pytest.approx((1.2348486881, 3.7651513119), abs=1e-9)


def test_normal_with_custom_z():
    # z = 1: half = sqrt(5/12) = 0.6454972.
    lo, hi = normal(4, 10.0, 30.0, z=1.0)
    assert hi - lo == pytest.approx(2 * math.sqrt(5 / 12), abs=1e-12)


@pytest.mark.parametrize("n", [0.5, 1, 1.999])
def test_normal_below_two_samples_has_infinite_bounds(n):
    assert normal(n, 1.0, 1.0) == (-math.inf, math.inf)


def test_normal_with_zero_variance_is_a_point():
    assert normal(5, 10.0, 20.0) == (2.0, 2.0)  # five 2s: sumsq 20 = 5 * 4


def test_mean_of_means_propagates_variance():
    # (0.5 + 0.7)/2 = 0.6; var = (0.01 + 0.04)/2^2 = 0.0125; half = z sqrt(0.0125) = 0.2191306.
    value, lo, hi = mean_of_means([(0.5, 0.01), (0.7, 0.04)])
    assert value == pytest.approx(0.6, abs=1e-15)
    assert (lo, hi) == pytest.approx((0.6 - Z95 * math.sqrt(0.0125), 0.6 + Z95 * math.sqrt(0.0125)), abs=1e-12)
    assert (lo, hi) == pytest.approx((0.3808693649, 0.8191306351), abs=1e-9)


def test_mean_of_means_is_unweighted():
    # one mean from 1000 samples and one from 2: still a plain average of the two means.
    a = mean_var(1000, 900.0, 900.0)  # 0.9
    b = mean_var(2, 0.0, 0.0)  # 0.0
    value, _, _ = mean_of_means([a, b])
    assert value == pytest.approx(0.45, abs=1e-15)


def test_mean_of_means_with_an_infinite_variance_has_no_interval():
    value, lo, hi = mean_of_means([(0.5, 0.01), (1.0, math.inf)])
    assert value == 0.75
    assert (lo, hi) == (-math.inf, math.inf)


def test_mean_of_means_single_part_is_its_own_interval():
    # k = 1: var = v; same as normal() on the same data.
    m, v = mean_var(4, 10.0, 30.0)
    value, lo, hi = mean_of_means([(m, v)])
    assert (value, lo, hi) == pytest.approx((2.5, *normal(4, 10.0, 30.0)), abs=1e-12)


def test_mean_of_parts_with_normal_parts_is_mean_of_means():
    parts = [(0.5, 0.01, 10, True), (0.7, 0.04, 10, False)]
    assert mean_of_parts(parts) == pytest.approx(mean_of_means([(0.5, 0.01), (0.7, 0.04)]), abs=1e-15)


def test_mean_of_parts_brings_wilson_for_a_proportion_at_an_edge():
    # One wrong answer alone (p = 0, n = 1) beside a scenario at 0.5 (variance 0.01):
    # Wilson(0, 1) = (0, z^2/(1 + z^2)) = (0, 0.7934506856). value = 0.25.
    # MOVER: below = sqrt((z 0.1)^2 + 0^2)/2, above = sqrt((z 0.1)^2 + 0.79345^2)/2.
    value, lo, hi = mean_of_parts([(0.5, 0.01, 50, True), (0.0, math.inf, 1, True)])
    up0 = Z2 / (1 + Z2)
    assert value == 0.25
    assert lo == pytest.approx(0.25 - Z95 * 0.1 / 2, abs=1e-12)
    assert hi == pytest.approx(0.25 + math.sqrt((Z95 * 0.1) ** 2 + up0**2) / 2, abs=1e-12)
    assert (lo, hi) == pytest.approx((0.1520018008, 0.6586497824), abs=1e-9)


def test_mean_of_parts_single_proportion_at_an_edge_is_its_wilson_interval():
    # all correct, n = 10 (variance 0): the interval is Wilson(10, 10), not the point 1.
    value, lo, hi = mean_of_parts([(1.0, 0.0, 10, True)])
    assert (value, lo, hi) == pytest.approx((1.0, *wilson(10, 10)), abs=1e-15)
    # a graded mean with no spread stays a point, and one with n = 1 has no interval.
    assert mean_of_parts([(0.8, 0.0, 10, False)]) == (0.8, 0.8, 0.8)
    assert mean_of_parts([(0.8, math.inf, 1, False)])[1:] == (-math.inf, math.inf)
