"""The config store on both backends: migrations, SQLite pragmas, and every repository verb."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import DateTime, delete, func, inspect, select, text
from sqlalchemy.exc import IntegrityError

from warehouse.config_store import (
    activity,
    api_keys,
    backup_codes,
    organizations,
    refresh_tokens,
    sites,
    users,
)
from warehouse.config_store.store import MIGRATIONS_DIR, create_store_engine, migrate, schema_version
from warehouse.config_store.tables import (
    UTCDateTime,
    activity_logs,
    metadata,
    mfa_backup_codes,
    site_api_keys,
)
from warehouse.config_store.tables import organizations as organizations_table
from warehouse.config_store.tables import refresh_tokens as refresh_tokens_table
from warehouse.config_store.tables import sites as sites_table
from warehouse.config_store.tables import users as users_table

PLUS_TWO = timezone(timedelta(hours=2))
MINUS_FIVE = timezone(timedelta(hours=-5))
CONFIG_TABLES = {
    "activity_logs",
    "mfa_backup_codes",
    "organizations",
    "refresh_tokens",
    "site_api_keys",
    "sites",
    "users",
}


def head_revision() -> str:
    return ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()


def count(conn, table, *where) -> int:
    return conn.execute(select(func.count()).select_from(table).where(*where)).scalar_one()


def make_org(conn, name: str = "Acme") -> dict:
    return organizations.create(conn, name=name)


def make_user(conn, org_id: str, email: str = "ada@example.com") -> dict:
    return users.create(
        conn, organization_id=org_id, email=email, name="Ada", password_hash="argon2-hash", role="owner"
    )


def make_site(conn, org_id: str, name: str = "Shop", **kwargs) -> dict:
    return sites.create(
        conn,
        organization_id=org_id,
        name=name,
        domain="shop.example.com",
        currency="EUR",
        timezone="Europe/Berlin",
        tracking_config=kwargs.pop("tracking_config", {"modules": {"page": {"enabled": True}}}),
        **kwargs,
    )


def assert_utc(value: datetime) -> None:
    assert value.tzinfo is not None
    assert value.utcoffset() == timedelta(0)


# --- migrations and engine -----------------------------------------------------------------------------


def test_migrations_reach_the_newest_revision_and_a_second_run_is_a_no_op(store):
    head = head_revision()
    assert head is not None
    assert schema_version(store) == head
    tables = set(inspect(store).get_table_names())
    assert tables >= CONFIG_TABLES
    # Migrations and tables.py agree: every declared table exists, and nothing else does.
    assert tables == set(metadata.tables) | {"alembic_version"}

    with store.begin() as conn:
        org = make_org(conn, "Survivor")
    migrate(store)
    assert schema_version(store) == head
    with store.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar_one() == 1
        assert organizations.get(conn, organization_id=org["id"]) == org
    assert set(inspect(store).get_table_names()) == tables


def test_migrated_schema_matches_the_table_definitions(store):
    with store.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, metadata) == []


def test_schema_version_of_an_empty_database_is_none(tmp_path):
    engine = create_store_engine(f"sqlite:///{tmp_path / 'empty.db'}")
    try:
        assert schema_version(engine) is None
        migrate(engine)
        assert schema_version(engine) == head_revision()
    finally:
        engine.dispose()


def test_sqlite_runs_in_wal_mode_with_foreign_keys_on_every_connection(tmp_path):
    path = tmp_path / "nested" / "dir" / "aisle.db"
    engine = create_store_engine(f"sqlite:///{path}")
    try:
        migrate(engine)
        assert path.is_file()
        first, second = engine.connect(), engine.connect()  # two pooled DBAPI connections
        try:
            for conn in (first, second):
                assert conn.execute(text("PRAGMA journal_mode")).scalar_one() == "wal"
                assert conn.execute(text("PRAGMA foreign_keys")).scalar_one() == 1
                assert conn.execute(text("PRAGMA busy_timeout")).scalar_one() == 5000
        finally:
            first.close()
            second.close()
        assert (tmp_path / "nested" / "dir" / "aisle.db-wal").exists()
    finally:
        engine.dispose()


def test_postgresql_urls_get_the_psycopg_driver():
    engine = create_store_engine("postgresql://aisle@127.0.0.1:1/nowhere")
    try:
        assert engine.dialect.name == "postgresql"
        assert engine.dialect.driver == "psycopg"
    finally:
        engine.dispose()


def test_every_datetime_column_normalises_to_utc():
    # The SQLite offset bug is fixed at the column type: a plain DateTime column would bring it back.
    dated = {
        table.name: [c.name for c in table.columns if isinstance(c.type, DateTime | UTCDateTime)]
        for table in metadata.sorted_tables
    }
    plain = [
        f"{t.name}.{c.name}"
        for t in metadata.sorted_tables
        for c in t.columns
        if isinstance(c.type, DateTime)
    ]
    assert plain == []
    assert {name: dated[name] for name in CONFIG_TABLES} == {
        "activity_logs": ["created_at"],
        "mfa_backup_codes": ["used_at", "created_at"],
        "organizations": ["subscription_period_end", "created_at"],
        "refresh_tokens": ["expires_at", "rotated_at", "revoked_at", "created_at"],
        "site_api_keys": ["last_used_at", "revoked_at", "created_at"],
        "sites": ["verified_at", "created_at", "updated_at"],
        "users": ["email_verified_at", "created_at"],
    }


# --- organisations -------------------------------------------------------------------------------------


def test_organizations_round_trip_and_subscription_updates(store):
    with store.begin() as conn:
        org = organizations.create(conn, name="Acme Ltd", subscription_status="trialing")
    assert org["name"] == "Acme Ltd"
    assert org["subscription_status"] == "trialing"
    assert org["subscription_period_end"] is None
    assert len(org["id"]) == 36
    with store.connect() as conn:
        got = organizations.get(conn, organization_id=org["id"])
        assert organizations.get(conn, organization_id="00000000-0000-0000-0000-000000000000") is None
    assert got == org
    assert_utc(got["created_at"])

    # 12:30 at UTC+2 is 10:30 UTC; SQLite keeps no offset, so the store must normalise.
    with store.begin() as conn:
        organizations.update_subscription(
            conn,
            organization_id=org["id"],
            status="past_due",
            period_end=datetime(2031, 5, 6, 12, 30, 15, 123456, tzinfo=PLUS_TWO),
        )
        got = organizations.get(conn, organization_id=org["id"])
    assert got["subscription_status"] == "past_due"
    assert got["subscription_period_end"] == datetime(2031, 5, 6, 10, 30, 15, 123456, tzinfo=UTC)
    assert got["subscription_period_end"].hour == 10
    assert_utc(got["subscription_period_end"])
    assert got["name"] == "Acme Ltd"
    assert got["created_at"] == org["created_at"]


SUBSCRIPTION_CASES = [
    ("active", None, True),
    ("trialing", None, True),
    ("active", datetime(2030, 1, 1, 12, 0, 1, tzinfo=UTC), True),
    ("trialing", datetime(2030, 1, 2, tzinfo=UTC), True),
    ("active", datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC), False),  # ends exactly now
    ("active", datetime(2029, 12, 31, tzinfo=UTC), False),
    ("active", datetime(2030, 1, 1, 13, 30, tzinfo=PLUS_TWO), False),  # 11:30 UTC, already over
    ("active", datetime(2030, 1, 1, 8, 0, tzinfo=MINUS_FIVE), True),  # 13:00 UTC, still running
    ("past_due", datetime(2031, 1, 1, tzinfo=UTC), False),
    ("canceled", None, False),
    ("unpaid", None, False),
]


def test_subscription_is_valid_from_stored_values(store):
    # One test over all cases: conftest's postgres_url names databases after the first 50 characters
    # of the test id, so parametrised variants of one long test name would collide.
    now = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)
    with store.begin() as conn:
        org = make_org(conn)
    results = []
    for status, period_end, _ in SUBSCRIPTION_CASES:
        with store.begin() as conn:
            organizations.update_subscription(
                conn, organization_id=org["id"], status=status, period_end=period_end
            )
            stored = organizations.get(conn, organization_id=org["id"])
        results.append((status, period_end, organizations.subscription_is_valid(stored, now=now)))
    assert results == SUBSCRIPTION_CASES


def test_subscription_is_valid_defaults_to_the_current_time(store):
    with store.begin() as conn:
        org = make_org(conn)
        organizations.update_subscription(
            conn,
            organization_id=org["id"],
            status="active",
            period_end=datetime.now(UTC) - timedelta(minutes=1),
        )
        past = organizations.get(conn, organization_id=org["id"])
        organizations.update_subscription(
            conn, organization_id=org["id"], status="active", period_end=datetime.now(UTC) + timedelta(days=1)
        )
        future = organizations.get(conn, organization_id=org["id"])
    assert organizations.subscription_is_valid(past) is False
    assert organizations.subscription_is_valid(future) is True


# --- users ---------------------------------------------------------------------------------------------


def test_users_round_trip_lookup_by_email_and_updates(store):
    with store.begin() as conn:
        org = make_org(conn)
        user = users.create(
            conn,
            organization_id=org["id"],
            email="Ada.Lovelace@Example.COM",
            name="Ada",
            password_hash="$argon2id$fake",
            role="editor",
            is_platform_admin=True,
        )
    assert user["email"] == "ada.lovelace@example.com"
    with store.connect() as conn:
        got = users.get(conn, user_id=user["id"])
        by_email = users.get_by_email(conn, email="ADA.LOVELACE@example.com")
        assert users.get_by_email(conn, email="nobody@example.com") is None
        assert users.get(conn, user_id="no-such-user") is None
    assert got == user
    assert by_email == user
    assert {k: got[k] for k in ("organization_id", "name", "password_hash", "role")} == {
        "organization_id": org["id"],
        "name": "Ada",
        "password_hash": "$argon2id$fake",
        "role": "editor",
    }
    assert got["is_platform_admin"] is True
    assert got["mfa_enabled"] is False
    assert got["email_verified_at"] is None and got["mfa_secret"] is None and got["mfa_last_timestep"] is None

    verified = datetime(2030, 3, 4, 5, 6, 7, 890000, tzinfo=MINUS_FIVE)
    with store.begin() as conn:
        users.update_fields(
            conn,
            user_id=user["id"],
            mfa_secret="JBSWY3DPEHPK3PXP",
            mfa_enabled=True,
            mfa_last_timestep=59_000_001,
            email_verified_at=verified,
            role="viewer",
        )
        got = users.get(conn, user_id=user["id"])
    assert got == {
        **user,
        "mfa_secret": "JBSWY3DPEHPK3PXP",
        "mfa_enabled": True,
        "mfa_last_timestep": 59_000_001,
        "email_verified_at": datetime(2030, 3, 4, 10, 6, 7, 890000, tzinfo=UTC),
        "role": "viewer",
    }
    assert_utc(got["email_verified_at"])


def test_user_emails_are_unique_whatever_their_case(store):
    with store.begin() as conn:
        org = make_org(conn)
        make_user(conn, org["id"], email="ada@example.com")
    with pytest.raises(IntegrityError), store.begin() as conn:
        make_user(conn, org["id"], email="ADA@Example.com")
    with store.connect() as conn:
        assert count(conn, users_table) == 1


def test_a_user_needs_an_existing_organisation(store):
    with pytest.raises(IntegrityError), store.begin() as conn:
        make_user(conn, "00000000-0000-0000-0000-000000000000")


# --- sites ---------------------------------------------------------------------------------------------


TRACKING_CONFIG = {
    "cookieConsent": {"enabled": True, "defaultConsent": {"analytics": False, "marketing": True}},
    "modules": {"page": {"enabled": True}, "search": {"enabled": False}},
    "dataLayer": {"variableName": "dataLayer", "events": ["view_item", "purchase"]},
    "sampleRate": 0.25,
    "maxBatch": 20,
    "label": "Café ☕ — 日本",
    "nothing": None,
}


def test_sites_round_trip_with_json_config_and_aware_datetimes(store):
    with store.begin() as conn:
        org = make_org(conn)
        site = make_site(conn, org["id"], name="Gift Shop", tracking_config=TRACKING_CONFIG)
    assert site["site_key"].startswith("sk_") and len(site["site_key"]) == 27
    assert len(site["verification_token"]) == 32
    assert site["is_verified"] is False and site["verified_at"] is None
    assert site["created_at"] == site["updated_at"]

    with store.connect() as conn:
        got = sites.get(conn, site_id=site["id"])
        by_key = sites.get_by_key(conn, site_key=site["site_key"])
        assert sites.get(conn, site_id="no-such-site") is None
        assert sites.get_by_key(conn, site_key="sk_000000000000000000000000") is None
    assert got == site
    assert by_key == site
    assert got["tracking_config"] == TRACKING_CONFIG
    assert got["tracking_config"]["label"] == "Café ☕ — 日本"
    assert {k: got[k] for k in ("name", "domain", "currency", "timezone", "organization_id")} == {
        "name": "Gift Shop",
        "domain": "shop.example.com",
        "currency": "EUR",
        "timezone": "Europe/Berlin",
        "organization_id": org["id"],
    }
    assert_utc(got["created_at"])
    assert_utc(got["updated_at"])


def test_a_site_created_verified_carries_its_verification_time(store):
    with store.begin() as conn:
        org = make_org(conn)
        site = make_site(conn, org["id"], is_verified=True)
        got = sites.get(conn, site_id=site["id"])
    assert got["is_verified"] is True
    assert got["verified_at"] == got["created_at"]
    assert_utc(got["verified_at"])


def test_sites_list_per_organisation_in_creation_order(store):
    with store.begin() as conn:
        a, b = make_org(conn, "A"), make_org(conn, "B")
        first = make_site(conn, a["id"], "First")
        time.sleep(0.002)
        other = make_site(conn, b["id"], "Other")
        time.sleep(0.002)
        second = make_site(conn, a["id"], "Second")
    with store.connect() as conn:
        listed_a = sites.list_for_organization(conn, organization_id=a["id"])
        listed_b = sites.list_for_organization(conn, organization_id=b["id"])
        assert sites.list_for_organization(conn, organization_id="nobody") == []
    assert [s["name"] for s in listed_a] == ["First", "Second"]
    assert listed_a == [first, second]
    assert listed_b == [other]


def test_site_update_fields_and_delete_one(store):
    with store.begin() as conn:
        org = make_org(conn)
        site = make_site(conn, org["id"], tracking_config=TRACKING_CONFIG)
        keep = make_site(conn, org["id"], "Keep")
    new_config = {**TRACKING_CONFIG, "sampleRate": 1.0, "modules": {"page": {"enabled": False}}}
    verified_at = datetime(2030, 6, 1, 0, 0, tzinfo=PLUS_TWO)
    with store.begin() as conn:
        updated = sites.update_fields(
            conn,
            site_id=site["id"],
            name="Renamed",
            tracking_config=new_config,
            is_verified=True,
            verified_at=verified_at,
        )
    assert updated == {
        **site,
        "name": "Renamed",
        "tracking_config": new_config,
        "is_verified": True,
        "verified_at": datetime(2030, 5, 31, 22, 0, tzinfo=UTC),
        "updated_at": updated["updated_at"],
    }
    assert updated["updated_at"] > site["updated_at"]
    assert updated["created_at"] == site["created_at"]

    with store.begin() as conn:
        assert sites.update_fields(conn, site_id=site["id"]) == updated  # nothing to change, nothing touched
        assert sites.update_fields(conn, site_id="no-such-site", name="x") is None
        sites.delete_one(conn, site_id=site["id"])
        sites.delete_one(conn, site_id="no-such-site")
    with store.connect() as conn:
        assert sites.get(conn, site_id=site["id"]) is None
        assert sites.get_by_key(conn, site_key=site["site_key"]) is None
        assert sites.list_for_organization(conn, organization_id=org["id"]) == [keep]


# --- public API keys -----------------------------------------------------------------------------------


def test_api_keys_round_trip_list_update_and_revoke(store):
    with store.begin() as conn:
        org = make_org(conn)
        site, other_site = make_site(conn, org["id"]), make_site(conn, org["id"], "Other")
        ios = api_keys.create(
            conn, site_id=site["id"], name="iOS app", scopes=["mobile_read", "mobile_write"],
            prefix="ak_ios_0001", key_hash="a" * 64,
        )  # fmt: skip
        time.sleep(0.002)
        android = api_keys.create(
            conn,
            site_id=site["id"],
            name="Android",
            scopes=["mobile_read"],
            prefix="ak_and_0002",
            key_hash="b" * 64,
        )
        elsewhere = api_keys.create(
            conn, site_id=other_site["id"], name="Web", scopes=[], prefix="ak_web_0003", key_hash="c" * 64
        )
    with store.connect() as conn:
        assert api_keys.get(conn, key_id=ios["id"]) == ios
        assert api_keys.get_by_prefix(conn, prefix="ak_and_0002") == android
        assert api_keys.get_by_prefix(conn, prefix="ak_nope") is None
        assert api_keys.list_for_site(conn, site_id=site["id"]) == [ios, android]
        assert api_keys.list_for_site(conn, site_id=other_site["id"]) == [elsewhere]
    assert ios["scopes"] == ["mobile_read", "mobile_write"]
    assert ios["last_used_at"] is None and ios["revoked_at"] is None

    used = datetime(2030, 2, 2, 2, 2, 2, tzinfo=MINUS_FIVE)
    with store.begin() as conn:
        api_keys.update_fields(conn, key_id=ios["id"], last_used_at=used, name="iOS")
        api_keys.revoke(conn, key_id=android["id"])
        first_revoked_at = api_keys.get(conn, key_id=android["id"])["revoked_at"]
    time.sleep(0.002)
    with store.begin() as conn:
        api_keys.revoke(conn, key_id=android["id"])  # revoking twice keeps the first time
        got_ios = api_keys.get(conn, key_id=ios["id"])
        got_android = api_keys.get(conn, key_id=android["id"])
    assert got_ios == {**ios, "name": "iOS", "last_used_at": datetime(2030, 2, 2, 7, 2, 2, tzinfo=UTC)}
    assert first_revoked_at is not None
    assert_utc(first_revoked_at)
    assert got_android == {**android, "revoked_at": first_revoked_at}

    with pytest.raises(IntegrityError), store.begin() as conn:
        api_keys.create(
            conn, site_id=site["id"], name="dup", scopes=[], prefix="ak_ios_0001", key_hash="d" * 64
        )


# --- refresh tokens ------------------------------------------------------------------------------------


def test_refresh_tokens_round_trip_and_rotate_once(store):
    expires = datetime(2030, 12, 31, 23, 59, 59, tzinfo=PLUS_TWO)
    with store.begin() as conn:
        user = make_user(conn, make_org(conn)["id"])
        token = refresh_tokens.create(
            conn, user_id=user["id"], family_id="family-1", token_hash="1" * 64, expires_at=expires
        )
    with store.connect() as conn:
        got = refresh_tokens.get_by_hash(conn, token_hash="1" * 64)
        assert refresh_tokens.get_by_hash(conn, token_hash="0" * 64) is None
    assert got == token
    assert got["expires_at"] == datetime(2030, 12, 31, 21, 59, 59, tzinfo=UTC)
    assert_utc(got["expires_at"])
    assert got["rotated_at"] is None and got["revoked_at"] is None

    with store.begin() as conn:
        assert refresh_tokens.mark_rotated(conn, token_id=token["id"]) is True
    with store.begin() as conn:
        assert refresh_tokens.mark_rotated(conn, token_id=token["id"]) is False
        assert refresh_tokens.mark_rotated(conn, token_id="no-such-token") is False
        rotated = refresh_tokens.get_by_hash(conn, token_hash="1" * 64)
    assert rotated["rotated_at"] is not None
    assert_utc(rotated["rotated_at"])
    assert rotated["revoked_at"] is None

    with pytest.raises(IntegrityError), store.begin() as conn:
        refresh_tokens.create(
            conn, user_id=user["id"], family_id="family-2", token_hash="1" * 64, expires_at=expires
        )


def test_refresh_token_revocation_by_family_and_by_user(store):
    expires = datetime(2030, 1, 1, tzinfo=UTC)
    with store.begin() as conn:
        org = make_org(conn)
        ada, bob = (
            make_user(conn, org["id"], "ada@example.com"),
            make_user(conn, org["id"], "bob@example.com"),
        )
        for user, family, token_hash in [
            (ada, "fam-a1", "a1"),
            (ada, "fam-a1", "a2"),
            (ada, "fam-a2", "a3"),
            (bob, "fam-b1", "b1"),
        ]:
            refresh_tokens.create(
                conn, user_id=user["id"], family_id=family, token_hash=token_hash, expires_at=expires
            )

    def revoked() -> dict[str, datetime | None]:
        with store.connect() as conn:
            return {
                h: refresh_tokens.get_by_hash(conn, token_hash=h)["revoked_at"]
                for h in ("a1", "a2", "a3", "b1")
            }

    with store.begin() as conn:
        refresh_tokens.revoke_family(conn, family_id="fam-a1")
    after_family = revoked()
    assert after_family["a1"] is not None and after_family["a2"] is not None
    assert after_family["a3"] is None and after_family["b1"] is None

    time.sleep(0.002)
    with store.begin() as conn:
        refresh_tokens.revoke_family(conn, family_id="fam-a1")  # already revoked: times stay
        refresh_tokens.revoke_all_for_user(conn, user_id=ada["id"])
    after_user = revoked()
    assert after_user["a1"] == after_family["a1"] and after_user["a2"] == after_family["a2"]
    assert after_user["a3"] is not None and after_user["a3"] > after_family["a1"]
    assert after_user["b1"] is None


# --- MFA backup codes ----------------------------------------------------------------------------------


def test_backup_codes_replace_list_and_use_once(store):
    with store.begin() as conn:
        org = make_org(conn)
        ada, bob = (
            make_user(conn, org["id"], "ada@example.com"),
            make_user(conn, org["id"], "bob@example.com"),
        )
        backup_codes.replace_all(conn, user_id=ada["id"], code_hashes=["h1", "h2", "h3"])
        backup_codes.replace_all(conn, user_id=bob["id"], code_hashes=["bob"])
    with store.connect() as conn:
        unused = backup_codes.list_unused(conn, user_id=ada["id"])
    assert sorted(c["code_hash"] for c in unused) == ["h1", "h2", "h3"]
    assert {c["user_id"] for c in unused} == {ada["id"]}
    assert all(c["used_at"] is None for c in unused)
    h2 = next(c for c in unused if c["code_hash"] == "h2")

    with store.begin() as conn:
        assert backup_codes.mark_used(conn, code_id=h2["id"]) is True
    with store.begin() as conn:
        assert backup_codes.mark_used(conn, code_id=h2["id"]) is False
        assert sorted(c["code_hash"] for c in backup_codes.list_unused(conn, user_id=ada["id"])) == [
            "h1",
            "h3",
        ]
        used_at = conn.execute(select(mfa_backup_codes.c.used_at).where(mfa_backup_codes.c.id == h2["id"]))
        assert used_at.scalar_one() is not None

    with store.begin() as conn:
        backup_codes.replace_all(conn, user_id=ada["id"], code_hashes=["h4", "h5"])
        assert sorted(c["code_hash"] for c in backup_codes.list_unused(conn, user_id=ada["id"])) == [
            "h4",
            "h5",
        ]
        assert count(conn, mfa_backup_codes, mfa_backup_codes.c.user_id == ada["id"]) == 2  # used h2 went too
        backup_codes.delete_all(conn, user_id=ada["id"])
        assert backup_codes.list_unused(conn, user_id=ada["id"]) == []
        assert [c["code_hash"] for c in backup_codes.list_unused(conn, user_id=bob["id"])] == ["bob"]


# --- activity ------------------------------------------------------------------------------------------


def test_activity_is_listed_newest_first_per_organisation_and_site(store):
    with store.begin() as conn:
        org, other = make_org(conn, "A"), make_org(conn, "B")
        site = make_site(conn, org["id"])
    entries = [
        dict(organization_id=org["id"], action="user.registered", user_id="u1"),
        dict(organization_id=org["id"], action="site.created", site_id=site["id"], details={"name": "Shop"}),
        dict(organization_id=other["id"], action="site.created", site_id="elsewhere"),
        dict(organization_id=org["id"], action="site.updated", site_id=site["id"], message="Renamed"),
        dict(organization_id=org["id"], action="key.created", site_id="another-site"),
    ]
    for entry in entries:
        with store.begin() as conn:
            activity.record(conn, **entry)
        time.sleep(0.002)

    with store.connect() as conn:
        recent = activity.list_recent(conn, organization_id=org["id"])
        for_site = activity.list_recent(conn, organization_id=org["id"], site_id=site["id"])
        limited = activity.list_recent(conn, organization_id=org["id"], limit=2)
        foreign = activity.list_recent(conn, organization_id=other["id"], site_id=site["id"])
    assert [e["action"] for e in recent] == ["key.created", "site.updated", "site.created", "user.registered"]
    assert [e["action"] for e in for_site] == ["site.updated", "site.created"]
    assert [e["action"] for e in limited] == ["key.created", "site.updated"]
    assert foreign == []
    created, updated = for_site[1], for_site[0]
    assert created["details"] == {"name": "Shop"} and created["message"] is None
    assert updated["details"] is None and updated["message"] == "Renamed"
    assert recent[-1]["user_id"] == "u1" and recent[-1]["site_id"] is None
    assert all(e["organization_id"] == org["id"] for e in recent)
    assert_utc(recent[0]["created_at"])


# --- cascades ------------------------------------------------------------------------------------------


def test_deleting_an_organisation_cascades_to_everything_it_owns_but_not_the_activity_log(store):
    with store.begin() as conn:
        doomed, kept = make_org(conn, "Doomed"), make_org(conn, "Kept")
        for org, email in ((doomed, "d@example.com"), (kept, "k@example.com")):
            user = make_user(conn, org["id"], email)
            site = make_site(conn, org["id"])
            api_keys.create(
                conn, site_id=site["id"], name="k", scopes=[], prefix=f"ak_{email[0]}", key_hash="x" * 64
            )
            refresh_tokens.create(
                conn,
                user_id=user["id"],
                family_id="f",
                token_hash=f"rt-{email}",
                expires_at=datetime(2030, 1, 1, tzinfo=UTC),
            )
            backup_codes.replace_all(conn, user_id=user["id"], code_hashes=["c1", "c2"])
            activity.record(conn, organization_id=org["id"], site_id=site["id"], action="site.created")

    with store.begin() as conn:
        conn.execute(delete(organizations_table).where(organizations_table.c.id == doomed["id"]))

    with store.connect() as conn:
        counts = {
            name: count(conn, table)
            for name, table in [
                ("organizations", organizations_table),
                ("users", users_table),
                ("sites", sites_table),
                ("site_api_keys", site_api_keys),
                ("refresh_tokens", refresh_tokens_table),
                ("mfa_backup_codes", mfa_backup_codes),
                ("activity_logs", activity_logs),
            ]
        }
        assert users.get_by_email(conn, email="d@example.com") is None
        assert users.get_by_email(conn, email="k@example.com") is not None
        assert sites.list_for_organization(conn, organization_id=doomed["id"]) == []
    assert counts == {
        "organizations": 1,
        "users": 1,
        "sites": 1,
        "site_api_keys": 1,
        "refresh_tokens": 1,
        "mfa_backup_codes": 2,
        "activity_logs": 2,  # no foreign key: the log outlives what it describes
    }


def test_deleting_a_site_removes_its_api_keys(store):
    with store.begin() as conn:
        site = make_site(conn, make_org(conn)["id"])
        api_keys.create(
            conn, site_id=site["id"], name="k", scopes=["mobile_read"], prefix="ak_1", key_hash="x" * 64
        )
        sites.delete_one(conn, site_id=site["id"])
        assert api_keys.list_for_site(conn, site_id=site["id"]) == []
        assert count(conn, site_api_keys) == 0
