"""The cached case index: atomic, keyed by torch version, corrupt files rebuilt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from torchcts_cases import index

FAKE = {
    "add": {
        "name": "add",
        "family": 1,
        "source": "cpu_reference",
        "mode": None,
        "not_valid": None,
        "surfaces": ["aten::add"],
        "counts": {"forward": 3},
        "problem": None,
    }
}


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """Point the cache at tmp_path and replace the (slow) builder with a counter."""
    calls: list[str] = []

    def fake_build(name: str) -> dict[str, dict[str, Any]]:
        calls.append(name)
        return json.loads(json.dumps(FAKE))

    monkeypatch.setenv("TORCHCTS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(index, "_MEMO", {})
    monkeypatch.setattr(index, "_build", fake_build)
    monkeypatch.setattr(index, "SEED_DIR", tmp_path / "no-seed")  # no packaged seed
    return calls


def test_cold_build_is_written_and_reused(builds: list[str]) -> None:
    """The first use builds and writes the shard; a later process reads it."""
    assert index.shard("float32") == FAKE
    assert (index.index_dir() / "float32.json").exists()
    index.forget()
    assert index.shard("float32") == FAKE
    assert builds == ["float32"]


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "",
        json.dumps({"format": "torchcts-case-index", "version": index.INDEX_VERSION, "torch": "0.0.1",
                    "shard": "float32", "ops": FAKE}),
        json.dumps({"format": "torchcts-case-index", "version": index.INDEX_VERSION, "torch": "@T",
                    "shard": "float32", "ops": {"add": {**FAKE["add"], "counts": {"forward": -1}}}}),
        json.dumps({"format": "torchcts-case-index", "version": index.INDEX_VERSION, "torch": "@T",
                    "shard": "int64", "ops": FAKE}),
        json.dumps([1, 2, 3]),
    ],
    ids=["garbage", "empty", "other-torch", "negative-count", "wrong-shard", "not-object"],
)  # fmt: skip
def test_corrupt_or_foreign_cache_is_rebuilt(builds: list[str], content: str) -> None:
    """A cache file that does not parse or does not match its key is never trusted."""
    import torch

    path = index.index_dir() / "float32.json"
    path.parent.mkdir(parents=True)
    path.write_text(content.replace("@T", torch.__version__), encoding="utf-8")
    assert index.shard("float32") == FAKE
    assert builds == ["float32"]
    assert json.loads(path.read_text())["ops"] == FAKE


def test_unknown_shard_is_refused(builds: list[str]) -> None:
    """Only dtype names, error inputs and the op list are shards."""
    with pytest.raises(KeyError):
        index.shard("float99")


def test_cache_dir_follows_environment(builds: list[str], tmp_path: Path) -> None:
    """TORCHCTS_CACHE_DIR decides where the index lives."""
    assert tmp_path in index.index_dir().parents


def test_packaged_seed_is_used_only_for_the_same_opinfo(
    builds: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A seed matching torch version and OpInfo fingerprint avoids the cold build."""
    monkeypatch.setattr(index, "SEED_DIR", tmp_path / "seed")
    index.write_seed(["float32"])
    assert builds == ["float32"]
    monkeypatch.setenv("TORCHCTS_CACHE_DIR", str(tmp_path / "fresh"))
    index.forget()
    assert index.shard("float32") == FAKE
    assert builds == ["float32"]  # came from the seed, not a rebuild
    monkeypatch.setenv("TORCHCTS_CACHE_DIR", str(tmp_path / "fresh2"))
    index.forget()
    index.opinfo_fingerprint.cache_clear()
    monkeypatch.setattr(index, "opinfo_fingerprint", lambda: "another OpInfo")
    assert index.shard("float32") == FAKE
    assert builds == ["float32", "float32"]  # fingerprint differs: rebuilt


def test_packaged_seed_matches_a_fresh_build() -> None:
    """The shipped seed is what the current generator builds (stale seeds are caught)."""
    import gzip

    import torch

    seed = index.SEED_DIR / f"{index.slug(torch.__version__)}.json.gz"
    if not seed.exists():
        pytest.skip(f"no packaged seed for torch {torch.__version__}")
    data = json.loads(gzip.decompress(seed.read_bytes()))
    if data["fingerprint"] != index.opinfo_fingerprint():
        pytest.skip("installed OpInfo differs from the one the seed was built from")
    assert data["version"] == index.INDEX_VERSION
    for name in (index.ERRORS_SHARD, index.OPS_SHARD):
        assert data["shards"][name] == json.loads(json.dumps(index._build(name))), name
