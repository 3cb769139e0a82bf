"""resources.partitions: the group membership stored in the instance (any layout in force:
`size` is given)."""

from __future__ import annotations

from config.partitions import GROUPS, SYMBOLS


def test_a_removed_symbol_keeps_its_slot_and_new_symbols_fill_the_last_group(instance):
    from resources.partitions import read_groups, register_in_groups

    assert register_in_groups(instance, ["AAA", "BBB", "CCC"], size=2) == ["G0000", "G0001"]
    instance.add_dynamic_partitions(SYMBOLS, ["AAA", "BBB", "CCC"])
    instance.delete_dynamic_partition(SYMBOLS, "BBB")  # `symbols remove BBB`
    assert register_in_groups(instance, ["DDD", "EEE"], size=2) == ["G0001", "G0002"]
    assert read_groups(instance, 2).groups == [["AAA", "BBB"], ["CCC", "DDD"], ["EEE"]]  # never reshuffled
    assert instance.get_dynamic_partitions(GROUPS) == ["G0000", "G0001", "G0002"]
    assert register_in_groups(instance, ["AAA"], size=2) == []  # a member stays where it is


def test_group_keys_lost_to_a_kill_between_the_two_writes_are_added_by_the_next_registration(instance):
    from config.partitions import GROUPS_KEY, SymbolGroups
    from resources.partitions import register_in_groups

    # the membership written, the process killed before it added the group keys
    instance.run_storage.set_cursor_values({GROUPS_KEY: SymbolGroups(2, [["AAA", "BBB"], ["CCC"]]).to_json()})
    assert register_in_groups(instance, [], size=2) == []
    assert instance.get_dynamic_partitions(GROUPS) == ["G0000", "G0001"]
