"""config.partitions.SymbolGroups: the membership of symbol groups, append-only."""

from __future__ import annotations

import pytest

from config.partitions import SymbolGroups


def test_new_symbols_fill_the_last_group_then_open_new_ones_in_registration_order():
    groups = SymbolGroups(3)
    assert groups.assign(["AAA", "BBB"]) == ["G0000"]
    assert groups.assign(["CCC", "DDD", "AAA"]) == ["G0000", "G0001"]  # AAA already has its group
    assert groups.groups == [["AAA", "BBB", "CCC"], ["DDD"]]
    assert (groups.group_of("DDD"), groups.group_of("ZZZ")) == ("G0001", None)


def test_a_stored_membership_reads_back_and_is_never_reshuffled_by_new_symbols():
    stored = SymbolGroups(2, [["AAA", "BBB"], ["CCC"]]).to_json()
    again = SymbolGroups.from_json(stored, 2)
    again.assign(["EEE", "FFF"])
    assert again.groups == [["AAA", "BBB"], ["CCC", "EEE"], ["FFF"]]


def test_a_stored_size_other_than_the_setting_asks_for_the_migration():
    stored = SymbolGroups(2, [["AAA", "BBB"]]).to_json()
    with pytest.raises(ValueError, match=r"hold 2 symbols each but partitions.symbols_per_group is 3: run "
                                         r"`python -m pipeline.cli migrate-partitions`"):
        SymbolGroups.from_json(stored, 3)


def test_a_key_that_is_not_a_group_of_the_instance_is_named():
    with pytest.raises(KeyError, match=r"partition key 'G0005' is not a symbol group of this instance \(1 groups\)"):
        SymbolGroups(2, [["AAA"]]).members("G0005")
