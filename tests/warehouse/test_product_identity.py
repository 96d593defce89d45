import uuid

from warehouse.catalog.product_identity import product_id_for

SITE = "6f0c2b1e-0000-4000-8000-000000000001"
OTHER_SITE = "6f0c2b1e-0000-4000-8000-000000000002"


def test_the_same_code_on_the_same_site_is_always_the_same_id():
    assert product_id_for(SITE, "SKU-1") == product_id_for(uuid.UUID(SITE), " SKU-1 ")
    assert product_id_for(SITE, "SKU-1").version == 5


def test_codes_and_sites_give_different_ids():
    assert product_id_for(SITE, "SKU-1") != product_id_for(SITE, "SKU-2")
    assert product_id_for(SITE, "SKU-1") != product_id_for(OTHER_SITE, "SKU-1")
