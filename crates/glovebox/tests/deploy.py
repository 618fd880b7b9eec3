"""Reads the sample deployment (deploy/compose.yaml, deploy/prometheus.yml, Dockerfile) with
PyYAML, checks that its parts agree with each other (ports, paths, the token's secret, the data
volume), and prints what the Rust test needs to run it against the real binary: the server's
environment, its health check command, and the scrape's path. Exits 1 with the disagreement.

usage: deploy.py REPO_ROOT"""

import json
import pathlib
import re
import shlex
import sys

import yaml


def fail(why):
    sys.exit(f"deploy: {why}")


def main():
    root = pathlib.Path(sys.argv[1])
    compose = yaml.safe_load((root / "deploy/compose.yaml").read_text())
    prometheus = yaml.safe_load((root / "deploy/prometheus.yml").read_text())
    dockerfile = (root / "Dockerfile").read_text()

    services = compose.get("services") or fail("no services")
    glovebox = services.get("glovebox") or fail("no glovebox service")
    env = {k: str(v) for k, v in (glovebox.get("environment") or {}).items()}
    bind = env.get("GLOVEBOX_BIND") or fail("glovebox does not say where it listens")
    port = bind.rsplit(":", 1)[1]
    if not bind.startswith("0.0.0.0:"):
        fail(f"in a container glovebox listens on every address, not {bind}")
    published = [str(p).rsplit(":", 1)[1] for p in glovebox.get("ports", [])]
    if published != [port]:
        fail(f"published ports {published} are not the bind port {port}")

    entry = glovebox.get("entrypoint") or fail("glovebox has no entrypoint")
    script = entry[-1]
    if "exec glovebox serve" not in script or "/run/secrets/glovebox_token" not in script:
        fail(f"the entrypoint does not serve with the secret token: {script}")
    secrets = compose.get("secrets") or fail("no secrets")
    if "glovebox_token" not in secrets or "glovebox_token" not in glovebox.get("secrets", []):
        fail("the token secret is not given to glovebox")

    # The records in the postgres service's database, its password from the same secret.
    postgres = services.get("postgres") or fail("no postgres service")
    if "postgres_password" not in secrets or "postgres_password" not in glovebox.get("secrets", []) \
            or "postgres_password" not in postgres.get("secrets", []):
        fail("the database password secret is not given to glovebox and postgres")
    pg_env = postgres.get("environment") or {}
    if pg_env.get("POSTGRES_PASSWORD_FILE") != "/run/secrets/postgres_password":
        fail(f"postgres does not read its password from the secret: {pg_env}")
    store = re.search(r'GLOVEBOX_STORE="postgres://([^:]+):\$\$\(cat /run/secrets/postgres_password\)@([^:/]+):(\d+)/([^"]+)"', script)
    if not store:
        fail(f"the entrypoint does not point GLOVEBOX_STORE at the database with the secret: {script}")
    user, host, pg_port, db = store.groups()
    if host != "postgres" or pg_port != "5432" or user != pg_env.get("POSTGRES_USER") or db != pg_env.get("POSTGRES_DB"):
        fail(f"GLOVEBOX_STORE names {user}@{host}:{pg_port}/{db}, not the postgres service's {pg_env}")
    if (glovebox.get("depends_on") or {}).get("postgres", {}).get("condition") != "service_healthy":
        fail("glovebox does not wait for a healthy database")
    if "pg_isready" not in " ".join(postgres.get("healthcheck", {}).get("test", [])):
        fail("the database has no readiness check")
    # The browser pool: the image's own Chromium and the chromium service's endpoint.
    chromium = services.get("chromium") or fail("no chromium service")
    pool = env.get("GLOVEBOX_BROWSER_POOL", "").split(",")
    remote = [m for m in pool if m != "local"]
    exposed = [str(p) for p in chromium.get("expose", [])]
    if remote != [f"http://chromium:{p}" for p in exposed] or "local" not in pool:
        fail(f"the browser pool {pool} is not local plus the chromium service's {exposed}")

    check = glovebox.get("healthcheck", {}).get("test") or fail("no health check")
    if check[0] != "CMD" or "/readyz" not in check[-1] or f"/{port} " not in check[-1] + " ":
        fail(f"the health check does not probe /readyz on {port}: {check}")

    volumes = glovebox.get("volumes", [])
    data_dir = env.get("GLOVEBOX_DATA_DIR")
    if not any(str(v).endswith(f":{data_dir}") for v in volumes):
        fail(f"the data directory {data_dir} is not a volume: {volumes}")

    prom = services.get("prometheus") or fail("no prometheus service")
    if "glovebox_token" not in prom.get("secrets", []):
        fail("prometheus does not get the token")
    jobs = prometheus.get("scrape_configs") or fail("no scrape jobs")
    job = jobs[0]
    metrics_path = job.get("metrics_path", "/metrics")
    auth = job.get("authorization") or fail("the scrape sends no token")
    if auth.get("credentials_file") != "/run/secrets/glovebox_token":
        fail(f"the scrape's token is not the secret: {auth}")
    targets = [t for c in job.get("static_configs", []) for t in c.get("targets", [])]
    if targets != [f"glovebox:{port}"]:
        fail(f"the scrape targets {targets}, not glovebox:{port}")

    entrypoint = re.search(r"^ENTRYPOINT (.+)$", dockerfile, re.M) or fail("no ENTRYPOINT")
    if json.loads(entrypoint.group(1)) != ["glovebox", "serve"]:
        fail(f"the image's entry point is {entrypoint.group(1)}")
    volume = re.search(r"^VOLUME (.+)$", dockerfile, re.M) or fail("no VOLUME")
    if json.loads(volume.group(1)) != [data_dir]:
        fail(f"the image's volume {volume.group(1)} is not the data directory {data_dir}")
    if not re.search(rf"^EXPOSE {port}$", dockerfile, re.M):
        fail(f"the image does not expose {port}")
    if not re.search(rf"GLOVEBOX_DATA_DIR={re.escape(data_dir)}\b", dockerfile):
        fail("the image's data directory differs from the compose file's")

    print(json.dumps({
        "env": env,
        "port": int(port),
        "health_check": check[1:],
        "metrics_path": metrics_path,
        "store": {"user": user, "database": db},
        "pool_remote": remote,
    }))


if __name__ == "__main__":
    main()
