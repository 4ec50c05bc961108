"""Case items: the ones stamped from the first (`ItemStamp`) are what pytest's own
constructor makes for the same spec, and each has its own per-node state."""

from __future__ import annotations

import pytest
from torchcts_runner.items import CaseCollection, CaseItem, ItemStamp, build_items
from torchcts_schema import CaseRecord, CaseSpec, ExpectedSource


def _spec(n: int, dtype: str | None = "float32") -> CaseSpec:
    return CaseSpec(
        case_id=f"opinfo/add{n}/forward/{dtype}/{n}",
        suite="opinfo",
        op=f"add{n}",
        variant="forward",
        dtype=dtype,
        sample=n,
        level=1,
        expected_source=ExpectedSource.CPU_REFERENCE,
        capability="ops",
    )


def _never(item: CaseItem) -> CaseRecord:  # pragma: no cover - never run here
    raise AssertionError(f"{item.nodeid} was run")


def _state(item: pytest.Item) -> dict[str, object]:
    """What pytest and -k read of an item, as plain data."""
    return {
        "type": type(item),
        "attributes": sorted(vars(item)),
        "nodeid": item.nodeid,
        "name": item.name,
        "path": item.path,
        "location": item.location,
        "keywords": sorted(item.keywords),
        "extra": sorted(item.listextrakeywords()),
        "markers": [m.name for m in item.iter_markers()],
        "chain": [n.nodeid for n in item.listchain()],
        "user_properties": item.user_properties,
        "report_sections": item._report_sections,
        "limit_s": getattr(item, "limit_s", "missing"),
    }


def test_stamped_items_are_what_the_constructor_makes(
    request: pytest.FixtureRequest,
) -> None:
    specs = [_spec(0), _spec(1), _spec(2, None)]
    items = build_items(request.session, specs, _never)
    parent = items[0].parent
    assert isinstance(parent, CaseCollection)
    assert ItemStamp.of(items[0], parent) is not None  # this pytest's are stamped
    for spec, item in zip(specs, items, strict=True):
        made = CaseItem.from_parent(
            parent, name=spec.case_id, spec=spec, executor=_never
        )
        assert _state(item) == _state(made)
        assert item.nodeid == f"torchcts::{spec.case_id}"
        assert isinstance(item, CaseItem) and item.spec is spec
        assert item.executor is _never


def test_stamped_items_share_no_per_node_state(request: pytest.FixtureRequest) -> None:
    first, second, third = build_items(
        request.session, [_spec(0), _spec(1), _spec(2)], _never
    )
    second.add_marker(pytest.mark.timeout(7))
    second.user_properties.append(("k", "v"))
    second.stash[_KEY] = 1
    second.extra_keyword_matches.add("only-here")
    for other in (first, third):
        assert "timeout" not in other.keywords
        assert not list(other.iter_markers("timeout"))
        assert other.user_properties == []
        assert _KEY not in other.stash
        assert "only-here" not in other.listextrakeywords()


_KEY = pytest.StashKey[int]()


def test_an_unknown_item_layout_uses_the_constructor(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pytest whose items carry an attribute the stamp does not know gets its own
    constructor for every item, with the same result."""
    monkeypatch.setattr(ItemStamp, "FIELDS", ItemStamp.FIELDS - {"limit_s"})
    made = []
    original = CaseItem.from_parent.__func__  # type: ignore[attr-defined]

    def counting(
        cls: type[CaseItem], parent: pytest.Collector, **kw: object
    ) -> CaseItem:
        made.append(kw["name"])
        return original(cls, parent, **kw)  # type: ignore[no-any-return]

    monkeypatch.setattr(CaseItem, "from_parent", classmethod(counting))
    specs = [_spec(0), _spec(1), _spec(2)]
    items = build_items(request.session, specs, _never)
    parent = items[0].parent
    assert isinstance(parent, CaseCollection)
    assert ItemStamp.of(items[0], parent) is None
    assert made == [s.case_id for s in specs]
    assert [i.nodeid for i in items] == [f"torchcts::{s.case_id}" for s in specs]


def test_shared_location_and_hooks_are_what_pytest_finds_for_each_item(
    request: pytest.FixtureRequest,
) -> None:
    """A case item's location and hook caller are found once for its collection:
    each equals what pytest's own lookups give that item."""
    items = build_items(request.session, [_spec(0), _spec(1, None)], _never)
    for item in items:
        own_location = pytest.Item.location.func(item)  # type: ignore[attr-defined]
        assert item.location == own_location
        assert item.location[2] == item.spec.case_id  # type: ignore[attr-defined]
        own_hooks = item.session.gethookproxy(item.path)
        for hook in ("pytest_runtest_setup", "pytest_runtest_logreport"):
            reached = getattr(item.ihook, hook).get_hookimpls()
            assert reached == getattr(own_hooks, hook).get_hookimpls()
            assert reached  # pytest's own runner at least
