"""gpusched.mig: the MIG rules of ../shared/reference/mig.md through the Python helpers."""

import pytest

import gpusched
from gpusched import mig


@pytest.mark.parametrize(
    "model,names",
    [
        ("A100-40GB", ("1g.5gb", "1g.5gb+me", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb")),
        ("A100-80GB", ("1g.10gb", "1g.10gb+me", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")),
        ("H100-80GB", ("1g.10gb", "1g.10gb+me", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")),
        ("H100-NVL", ("1g.12gb", "1g.12gb+me", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb")),
        ("H200", ("1g.18gb", "1g.18gb+me", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb")),
    ],
)
def test_rules_hold_for_each_model(model, names):
    g1, g1me, g2, g3, g4, g7 = names
    assert mig.fits(model, [g4, g3])
    assert mig.fits(model, [g7])
    assert mig.fits(model, [g3, g2, g2])
    assert mig.fits(model, [g3, g2, g1, g1])
    assert not mig.fits(model, [g4, g4])
    assert not mig.fits(model, [g3, g3, g1])
    assert not mig.fits(model, [g4, g3, g1])
    assert not mig.fits(model, [g1me, g1me])
    assert mig.fits(model, [g1] * 7)
    assert not mig.fits(model, [g1] * 8)


def test_layouts_are_maximal_and_include_zero_waste_ones():
    layouts = mig.layouts("A100-80GB")
    assert [("7g.80gb", 0)] in layouts
    assert [("4g.40gb", 0), ("3g.40gb", 4)] in layouts
    assert [("4g.40gb", 0)] not in layouts   # a 3g still fits
    for layout in layouts:
        assert mig.fits("A100-80GB", [name for name, _ in layout])


def test_unknown_profile_model_or_no_mig_raise_catalog_error():
    with pytest.raises(gpusched.CatalogError, match="3g.20gb"):
        mig.fits("A100-80GB", ["3g.20gb"])   # an A100-40GB profile
    with pytest.raises(gpusched.CatalogError, match="unknown GPU model"):
        mig.fits("A1000", ["1g.5gb"])
    with pytest.raises(gpusched.CatalogError, match="no MIG"):
        mig.fits("T4", ["1g.5gb"])
