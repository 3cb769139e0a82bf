"""`meta.seed`: the random_state of the seeded meta models (hist_gbm, lightgbm), 0 by default."""

from config.settings import parse_settings


def test_meta_seed_setting():
    assert parse_settings({}).meta.seed == 0
    assert parse_settings({"meta": {"model": "lightgbm", "seed": 3}}).meta.seed == 3
