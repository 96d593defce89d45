import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warehouse.config_store.product_identity import product_id_for
from warehouse.engine import Engine
from warehouse.lake import Lake

SITE = "6f0c2b1e-0000-4000-8000-000000000001"
OTHER_SITE = "6f0c2b1e-0000-4000-8000-000000000002"


def test_the_same_code_on_the_same_site_is_always_the_same_id():
    assert product_id_for(SITE, "SKU-1") == product_id_for(uuid.UUID(SITE), " SKU-1 ")
    assert product_id_for(SITE, "SKU-1").version == 5


def test_codes_and_sites_give_different_ids():
    assert product_id_for(SITE, "SKU-1") != product_id_for(SITE, "SKU-2")
    assert product_id_for(SITE, "SKU-1") != product_id_for(OTHER_SITE, "SKU-1")


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    engine = Engine(Lake(tmp_path_factory.mktemp("lake")))
    yield engine
    engine.close()


@settings(max_examples=100, deadline=None)
@given(
    codes=st.lists(st.text(min_size=1).map(str.strip).filter(bool), min_size=1, max_size=20), site=st.uuids()
)
def test_the_lake_derives_the_same_ids_as_python(engine, codes, site):
    """The DuckDB macro `product_id_of` (warehouse/sql/people_views.sql) is `product_id_for`, for any
    text and any spelling of the site's uuid."""
    cursor = engine.cursor()
    try:
        derived = cursor.execute(
            "SELECT list_transform($codes, lambda code: product_id_of($site, code))",
            {"site": str(site).upper(), "codes": codes},
        ).fetchone()[0]
    finally:
        cursor.close()
    assert derived == [str(product_id_for(site, code)) for code in codes]
