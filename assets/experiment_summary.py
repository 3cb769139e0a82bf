"""`experiment_summary` (one partition per experiment): the headline figures of every
experiment side by side in the UI, and each experiment's report as one HTML file.

The Dagster objects only; the figures and the report are `domain.experiment_report`'s. The
partitions are the experiment names (resources.partitions.experiment_partitions), so the
asset's Plots tab, by partition, draws each figure with the experiment's name on its point.
"""

from dagster import (
    AllPartitionMapping,
    AssetCheckResult,
    AssetCheckSpec,
    AssetDep,
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    asset,
)

from resources.partitions import experiment_partitions
from resources.project import ReportsResource


@asset(partitions_def=experiment_partitions, group_name="evaluation", kinds={"html"},
       deps=[AssetDep(a, partition_mapping=AllPartitionMapping()) for a in ("meta_model", "evaluation", "backtest")],
       check_specs=[AssetCheckSpec("report_self_contained", asset="experiment_summary",
                                   description="the HTML report is one file: every image an inlined base64 PNG, "
                                               "no script, link or address outside it")])
def experiment_summary(context: AssetExecutionContext, reports: ReportsResource) -> MaterializeResult:
    """The overall figures of the experiment named by the partition key, as numeric metadata
    named as `experiments --by` names them (`h7_auc`, `h7_rank_ic`, `backtest_sharpe`, ...,
    with `symbols`, `years`, `h{H}_rows`), read from its reports; its report (equity against
    the benchmark, drawdown, rank IC by year, deciles, importance) written as one
    self-contained HTML file, linked as `report` (path) and `report_url` (file URL)."""
    from domain.experiment_report import headline, write_report

    name = context.partition_key
    settings = reports.settings()
    root = settings.reports_root
    path = write_report(root, name)
    figures = headline(root, name)
    from config.experiments import read_manifest

    manifest = read_manifest(root / name) or {}
    metadata = {k: (MetadataValue.int(v) if isinstance(v, int) else MetadataValue.float(v)) for k, v in figures.items()}
    metadata |= {"experiment": MetadataValue.text(name),
                 "settings_hash": MetadataValue.text(str(manifest.get("settings_hash"))),
                 "report": MetadataValue.path(str(path)),
                 "report_url": MetadataValue.url(path.resolve().as_uri())}
    context.log.info(f"experiment {name}: {len(figures)} figures; report {path}")
    from domain.checks import report_self_contained

    passed, meta = report_self_contained(path.read_text())
    return MaterializeResult(metadata=metadata, check_results=[
        AssetCheckResult(check_name="report_self_contained", passed=passed, metadata=meta)])
