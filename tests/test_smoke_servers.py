import psycopg
import redis


def test_redis_server_answers(redis_server):
    assert redis.Redis.from_url(redis_server.url).ping() is True


def test_postgres_server_answers(postgres_url):
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_health_over_http(live_client):
    response = live_client.get("/health")
    assert response.status_code == 200
    assert response.json()["checks"]["configStore"]["ok"] is True
