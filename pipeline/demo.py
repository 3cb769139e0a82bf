"""`make demo`: the main job on the built-in data, then a short summary."""

from __future__ import annotations

import time

from pipeline.settings import Settings


def run_demo(settings: Settings) -> int:
    from assets.sources import make_source
    from pipeline.definitions import defs
    from pipeline.instance import ensure_dagster_home, get_instance
    from pipeline.runs import run_rectangle
    from pipeline.symbols import sync_symbols

    home = ensure_dagster_home()
    instance = get_instance()
    t0 = time.perf_counter()
    added = sync_symbols(instance, settings)
    symbols = settings.demo.symbols or make_source(settings).symbols()
    years = settings.demo_years()
    print(f"[demo] source={settings.universe.source} symbols={len(symbols)} years={min(years)}..{max(years)} "
          f"({len(added)} newly registered)")
    job = defs.resolve_job_def("historical_build_and_train")
    summary = run_rectangle(job, instance, symbols, years, tags={"tradelab/origin": "demo"})
    seconds = time.perf_counter() - t0
    print()
    print(f"{'asset':<24}{'partitions':>12}{'rows':>12}{'step s':>10}")
    for name, s in summary.items():
        print(f"{name:<24}{s.partitions:>12}{s.rows:>12}{s.seconds:>10.2f}")
    print()
    print(f"total wall time   {seconds:.1f} s")
    print(f"data              {settings.data_dir}/<asset>/symbol=<S>/year=<Y>/part.parquet")
    print(f"reports           {settings.reports_dir}/<stage>/*.json")
    print(f"dagster instance  {home} (SQLite)")
    print("open the UI       make ui   ->  http://127.0.0.1:3000")
    return 0
