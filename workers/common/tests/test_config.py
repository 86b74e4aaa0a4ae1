"""The TELHA_* environment: what is accepted, and a clear ConfigError for everything else."""

from __future__ import annotations

from pathlib import Path

import pytest

from workers_common import ConfigError, WorkerConfig

GOOD = {
    "TELHA_CORE_ADDR": "127.0.0.1:50051",
    "TELHA_WORKER_ID": "tabular-1",
    "TELHA_TOKEN": "s3cret",
    "TELHA_FORMATS": "csv, tsv,csv",
}


def test_reads_the_environment() -> None:
    config = WorkerConfig.from_env(GOOD)
    assert config == WorkerConfig("127.0.0.1:50051", "tabular-1", "s3cret", ("csv", "tsv"))
    assert not config.is_unix
    assert config.max_in_flight == 1  # the seed's one job at a time unless the pool says
    assert WorkerConfig.from_env({**GOOD, "TELHA_MAX_IN_FLIGHT": "2"}).max_in_flight == 2


@pytest.mark.parametrize(
    "addr", ["localhost:1", "[::1]:50051", "core.internal:443", "unix:/run/telha.sock"]
)
def test_accepted_addresses(addr: str) -> None:
    config = WorkerConfig.from_env({**GOOD, "TELHA_CORE_ADDR": addr})
    assert config.core_addr == addr
    assert config.is_unix == addr.startswith("unix:")


@pytest.mark.parametrize("missing", sorted(GOOD))
def test_each_variable_is_required(missing: str) -> None:
    env = {k: v for k, v in GOOD.items() if k != missing}
    with pytest.raises(ConfigError, match=missing):
        WorkerConfig.from_env(env)
    with pytest.raises(ConfigError, match=missing):
        WorkerConfig.from_env({**env, missing: "  "})


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("TELHA_CORE_ADDR", "127.0.0.1"),
        ("TELHA_CORE_ADDR", "127.0.0.1:0"),
        ("TELHA_CORE_ADDR", "127.0.0.1:99999"),
        ("TELHA_CORE_ADDR", "http://127.0.0.1:50051"),
        ("TELHA_CORE_ADDR", "unix:relative.sock"),
        ("TELHA_FORMATS", "csv,,tsv"),
        ("TELHA_FORMATS", "CSV"),
        ("TELHA_FORMATS", "c s v"),
        ("TELHA_TOKEN", "tab\tinside"),
        ("TELHA_TOKEN", "naïve"),
        ("TELHA_MAX_IN_FLIGHT", "0"),
        ("TELHA_MAX_IN_FLIGHT", "9"),
        ("TELHA_MAX_IN_FLIGHT", "two"),
    ],
)
def test_malformed_values_are_refused(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        WorkerConfig.from_env({**GOOD, name: value})


def test_telha_ca_is_read_and_a_bad_one_refused(tmp_path: Path) -> None:
    assert WorkerConfig.from_env(GOOD).ca_pem is None
    pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    (tmp_path / "ca.pem").write_bytes(pem)
    config = WorkerConfig.from_env({**GOOD, "TELHA_CA": str(tmp_path / "ca.pem")})
    assert config.ca_pem == pem
    (tmp_path / "junk.pem").write_text("not a certificate")
    for bad in ("junk.pem", "missing.pem"):
        with pytest.raises(ConfigError, match="TELHA_CA"):
            WorkerConfig.from_env({**GOOD, "TELHA_CA": str(tmp_path / bad)})
